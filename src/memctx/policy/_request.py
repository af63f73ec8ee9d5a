"""The provider request of a policy step, with Anthropic's cache breakpoints placed.

Anthropic caches a request's prefix up to a block marked ``cache_control`` (at most
four marks; a mark also finds entries up to 20 blocks before it). Between two
clearings or compactions a policy's request only grows at its end, and a compaction
keeps the system prompt, the task and the earlier summaries in front (it appends a
new summary after them). That front is the *stable prefix*. So the marks go:

1. on the last block of the stable prefix: the first messages are split into one
   block per stable chunk (the task, then each summary) and one for the rest, so that a
   compaction that appends a summary still finds the earlier ones in the cache (the
   previous stable mark lies within the lookback of the new one);
2. on the block before the first summary, so that a compaction that folds the
   summaries into one still reads what comes before them; with no summary yet (or no
   room), on the system prompt;
3. on the message before the newest (*write*: the next request repeats it), and
4. on the newest message when it is a user turn (the model's answer starts a new
   message, so the next request repeats this one whole).

Marks 1 and 2 (and the system's) take the longest lifetime the model offers (``"1h"``
for Claude): the
stable prefix is read only at the next event, often more than five minutes away, and
a read of a longer prefix does not refresh a shorter one. (Longer lifetimes must come
first in a request, and they do.)

OpenAI and Gemini cache prefixes by themselves: their requests are the adapters' own.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Final

from memctx._build.builder import ContextBuilder, counts_of
from memctx._chunk import Chunk
from memctx._result import ContextBuildResult
from memctx.adapters._cache import ephemeral
from memctx.compress._compaction import is_compaction_summary

MAX_BREAKPOINTS: Final = 4


def _marked(block: Any) -> bool:
    return isinstance(block, dict) and "cache_control" in block


def _blocks(message: dict[str, Any]) -> list[dict[str, Any]]:
    content = message["content"]
    if isinstance(content, str):
        return [{"type": "text", "text": content}]
    return [dict(block) for block in content]


def _control(ttl: str | None) -> dict[str, str]:
    control = ephemeral()
    if ttl is not None:
        control["ttl"] = ttl
    return control


def _split_stable(messages: list[dict[str, Any]], segments: Sequence[str]) -> list[dict[str, Any]]:
    """Split the stable chunks' texts (in order) off the start of the messages, one block
    each; return those blocks (as many as were found in order)."""
    found: list[dict[str, Any]] = []
    todo = list(segments)
    for message in messages:
        if not todo:
            break
        blocks = _blocks(message)
        first = blocks[0]
        text = first.get("text") if first.get("type") == "text" else None
        if not isinstance(text, str) or not text.startswith(todo[0]):
            break
        split: list[dict[str, Any]] = []
        while todo and text.startswith(todo[0]):
            split.append({"type": "text", "text": todo[0]})
            text = text[len(todo.pop(0)) :]
        stable = len(split)
        if text:  # the rest keeps the block's mark, if it had one (it ends the message)
            split.append({**first, "text": text})
        else:
            split[-1] = {**first, "text": split[-1]["text"]}
        blocks[0:1] = split
        message["content"] = blocks
        found.extend(blocks[:stable])
        if text or len(blocks) > len(split):
            break
    return found


def anthropic_request(
    result: ContextBuildResult,
    stable: Sequence[Chunk],
    builder: ContextBuilder,
    tools: str,
    ttl: str | None = None,
) -> dict[str, Any]:
    """``result.to_anthropic(cache=True)`` with the marks placed as the module says.

    ``stable``: the chunks of the stable prefix in order (the task and other chunks a
    compaction keeps, then the summaries); ``ttl``: the lifetime of the system and
    stable marks (``None``: the default five minutes)."""
    request: dict[str, Any] = result.to_anthropic(cache=True, tools=tools)
    messages: list[dict[str, Any]] = request["messages"]
    marked = [
        i
        for i, m in enumerate(messages)
        if not isinstance(m["content"], str) and _marked(m["content"][-1])
    ]
    keep = set(marked[-2:])  # the write and newest marks
    for i in marked:
        if i not in keep:
            messages[i]["content"][-1].pop("cache_control", None)
    system = request.get("system")
    system_marks = [b for b in system if _marked(b)] if isinstance(system, list) else []
    render = counts_of(builder).render_chunk
    blocks = _split_stable(messages, [render(chunk).segment for chunk in stable])
    wanted = blocks[-1:]
    first_summary = next(
        (i for i, chunk in enumerate(stable[: len(blocks)]) if is_compaction_summary(chunk)), 0
    )
    if first_summary > 0 and blocks[first_summary - 1] is not blocks[-1]:
        wanted.insert(0, blocks[first_summary - 1])  # a folding of the summaries reads it
    wanted = [block for block in wanted if not _marked(block)]
    room = MAX_BREAKPOINTS - len(keep) - len(system_marks)
    while system_marks and len(wanted) > room:
        # A stable mark covers the system prompt too (which alone is seldom long enough
        # to be cached).
        system_marks.pop().pop("cache_control")
        room += 1
    for block in [*system_marks, *wanted[: max(room, 0)]]:
        block["cache_control"] = _control(ttl)
    return request


def provider_request(
    provider: str,
    result: ContextBuildResult,
    stable: Sequence[Chunk],
    builder: ContextBuilder,
    tools: str,
    ttl: str | None = None,
) -> dict[str, Any]:
    """The keyword arguments of ``provider``'s SDK call for ``result``."""
    if provider == "anthropic":
        return anthropic_request(result, stable, builder, tools, ttl)
    if provider == "gemini":
        gemini: dict[str, Any] = result.to_gemini(tools=tools)
        return gemini
    return {"messages": result.to_openai(tools=tools)}
