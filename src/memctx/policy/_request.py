"""The provider request of a policy step, with Anthropic's cache breakpoints placed.

Anthropic caches a request's prefix up to a block marked ``cache_control`` (at most
four marks; a mark also finds entries up to 20 blocks before it). Between two
clearings or compactions a policy's request only grows at its end, and a compaction
keeps the system prompt and the task in front. So the marks go:

1. on the system prompt, and
2. on the task's own block (the task's message is split in two blocks, the task and
   what follows it, when the summary or other chunks share its message): both survive
   every compaction, so a compaction rewrites only what comes after the task;
3. on the message before the newest (*write*: the next request repeats it), and
4. on the newest message when it is a user turn (the model's answer starts a new
   message, so the next request repeats this one whole).

OpenAI and Gemini cache prefixes by themselves: their requests are the adapters' own.
"""

from __future__ import annotations

from typing import Any, Final

from memctx._build.builder import ContextBuilder, counts_of
from memctx._chunk import Chunk
from memctx._result import ContextBuildResult
from memctx.adapters._cache import ephemeral

MAX_BREAKPOINTS: Final = 4


def _marked(block: Any) -> bool:
    return isinstance(block, dict) and "cache_control" in block


def _blocks(message: dict[str, Any]) -> list[dict[str, Any]]:
    content = message["content"]
    if isinstance(content, str):
        return [{"type": "text", "text": content}]
    return [dict(block) for block in content]


def _split_task(message: dict[str, Any], segment: str) -> int | None:
    """Split the task's text off the first block of ``message``; return the task block's
    index, or ``None`` when the message does not start with the task."""
    blocks = _blocks(message)
    first = blocks[0]
    text = first.get("text") if first.get("type") == "text" else None
    if not isinstance(text, str) or not text.startswith(segment):
        return None
    rest = text[len(segment) :]
    if rest:
        first.pop("cache_control", None)
        blocks[0:1] = [{"type": "text", "text": segment}, {**first, "text": rest}]
    message["content"] = blocks
    return 0


def anthropic_request(
    result: ContextBuildResult, task: Chunk | None, builder: ContextBuilder, tools: str
) -> dict[str, Any]:
    """``result.to_anthropic(cache=True)`` with the marks placed as the module says."""
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
    used = len(keep) + (1 if isinstance(request.get("system"), list) else 0)
    if task is None or used >= MAX_BREAKPOINTS:
        return request
    segment = counts_of(builder).render_chunk(task).segment
    for message in messages:
        if message["role"] != "user":
            continue
        index = _split_task(message, segment)
        if index is not None and not _marked(message["content"][index]):
            message["content"][index]["cache_control"] = ephemeral()
        break
    return request


def provider_request(
    provider: str,
    result: ContextBuildResult,
    task: Chunk | None,
    builder: ContextBuilder,
    tools: str,
) -> dict[str, Any]:
    """The keyword arguments of ``provider``'s SDK call for ``result``."""
    if provider == "anthropic":
        return anthropic_request(result, task, builder, tools)
    if provider == "gemini":
        gemini: dict[str, Any] = result.to_gemini(tools=tools)
        return gemini
    return {"messages": result.to_openai(tools=tools)}
