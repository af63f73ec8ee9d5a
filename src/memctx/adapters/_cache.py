"""Where ``to_anthropic(cache=True)`` puts its ``cache_control`` breakpoints.

Anthropic caches a request's prefix -- tools, then system, then messages --
up to a block marked ``cache_control``, at most four marks a request; a later
request reads the longest cached prefix that ends at one of its own marks or
at one of the (about twenty) blocks before a mark. So a mark pays when it
ends a prefix that the next request repeats (it is written now and read
then) or that the previous request already wrote. memctx marks:

1. the system prompt (tools and system: the same in every request of a run);
2. *read*: the last message lying wholly within the prefix this build shares
   with the previous build of the same history and options
   (:attr:`~memctx.ContextBuildResult.prefix_messages_shared`) -- it was in
   the previous request, whose *write* mark ended at or just before it;
3. *write*: the last message before the newest one, when the next build is
   expected to repeat this request up to there: with ``strategy="stable"``
   (it keeps its start until the next drop, and between drops a request is
   the previous one plus what was appended, the newest message perhaps
   grown), or when nothing was left out for the budget (the next build
   appends). In native mode the mark stays before any message holding a call
   still waiting for its result: that call is sent as text now and as a
   ``tool_use`` once answered. Given messages rather than a build result,
   memctx knows nothing of the next build and marks that message anyway;
4. *newest*: under the same conditions, the newest message too when it is a
   user turn: the model's reply opens a new assistant message, so the next
   request repeats it unless more user-side chunks join it first (then only
   this mark's write, 0.25x of that message, is lost; rule 3 still holds).
   Replayed real runs bill about a tenth less with it (``benchmarks.cache_marks``).

A mark goes on the message's last block. Marks the caller's
``tool_definitions`` already hold count against the limit of four; when
there is no room for all, the write mark goes first, then the newest, then
the read mark.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Final

from memctx._chunk import ChunkType
from memctx.adapters._conversation import (
    BuildResult,
    Conversation,
    Source,
    ToolMode,
    is_build_result,
)

MAX_BREAKPOINTS: Final = 4
"""Anthropic's limit of ``cache_control`` breakpoints in one request."""

_CALL_ACTIONS: Final = ("tool_call", "skill_call")


def ephemeral() -> dict[str, str]:
    """A fresh ``cache_control`` value (each block gets its own dict)."""
    return {"type": "ephemeral"}


def _shared_turns(source: BuildResult) -> int:
    """How many leading body messages the previous build sent identically."""
    shared = source.prefix_messages_shared
    return sum(1 for m in source.messages[:shared] if m.role != "system")


def _next_build_repeats(source: Source) -> bool:
    if not is_build_result(source):
        return True
    if source.strategy == "stable":
        return True
    return all(e.reason.value != "over_budget" for e in source.exclusions.values())


def _first_with_unanswered_call(source: BuildResult) -> int | None:
    """The index of the first body message holding a call no included result answers."""
    answered = {
        c.metadata.call_id for c in source.included_chunks if c.type is ChunkType.ENVIRONMENT
    }
    calls = {
        c.id
        for c in source.included_chunks
        if c.type is ChunkType.WORKFLOW
        and c.action in _CALL_ACTIONS
        and c.metadata.call_id is not None
        and c.metadata.call_id not in answered
    }
    if not calls:
        return None
    body = [m for m in source.messages if m.role != "system"]
    for index, message in enumerate(body):
        if calls.intersection(message.chunk_ids):
            return index
    return None


def message_marks(source: Source, talk: Conversation, tools: ToolMode, room: int) -> list[int]:
    """Indexes into ``talk.turns`` of the messages to mark (at most ``room``), in order."""
    count = len(talk.turns)
    repeats = _next_build_repeats(source)
    write = count - 2 if repeats else -1
    newest = count - 1 if repeats and talk.turns[-1].role == "user" else -1
    if tools == "native" and is_build_result(source):
        waiting = _first_with_unanswered_call(source)
        if waiting is not None:
            write = min(write, waiting - 1)
            newest = -1
    read = _shared_turns(source) - 1 if is_build_result(source) else -1
    wanted = [i for i in dict.fromkeys((write, newest, read)) if i >= 0]
    return sorted(wanted[: max(0, room)])


def marks_in(definitions: Sequence[Mapping[str, Any]]) -> int:
    """How many ``cache_control`` marks the caller's tool definitions hold."""
    return sum(1 for d in definitions if d.get("cache_control") is not None)


def mark_message(message: dict[str, Any]) -> None:
    """Put a mark on the last block of ``message`` (a text content becomes one block)."""
    content = message["content"]
    if isinstance(content, str):
        message["content"] = [{"type": "text", "text": content, "cache_control": ephemeral()}]
    else:  # thinking blocks take no mark: the last block that is not one
        for index in range(len(content) - 1, -1, -1):
            if content[index]["type"] not in ("thinking", "redacted_thinking"):
                content[index] = {**content[index], "cache_control": ephemeral()}
                return
