"""A provider request as the prompt cache sees it: a sequence of blocks, each ending a prefix.

A prompt cache keys what it stores by the request's exact prefix. Each
provider cuts a request into blocks in its own order, and a cached prefix
always ends at a block boundary here:

- Anthropic: the tool definitions, the ``system`` blocks, then each message's
  content blocks (a string content is one text block); ``cache_control`` marks
  are breakpoints and are not part of what is keyed.
- OpenAI: one block per chat message (the cache works at the token level in
  128-token steps; a message that differs is not credited for its common
  start, so reads are never over-counted).
- Gemini: the system instruction, then each content's parts.

Each block carries the key of the prefix ending with it (a chained SHA-256 of
the role and block without marks), the tokens of that prefix (the block's text
counted with the model's tokenizer, plus the chat format's per-message
overhead on a message's first block) and its breakpoint lifetime when marked.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterator, Mapping, Sequence
from typing import Any, Final

import attrs

from memctx.typing import Tokenizer

DEFAULT_LIFETIME: Final = "5m"
"""The lifetime of a ``cache_control`` mark that names none (Anthropic's default)."""


@attrs.frozen
class Block:
    """One block of a request: the prefix ending with it, as the cache keys and counts it."""

    key: str
    end: int
    """Tokens of the prefix ending with this block."""
    mark: str | None = None
    """The breakpoint's lifetime (``"5m"``, ``"1h"``) when the block carries a mark."""


class BlockCounter:
    """Counts blocks' tokens with one tokenizer, each distinct text once per replay."""

    def __init__(self, tokenizer: Tokenizer) -> None:
        self.tokenizer = tokenizer
        self._counts: dict[str, int] = {}
        priming = tokenizer.count_messages([])
        self.overhead = {
            role: tokenizer.count_messages([{"role": role, "content": ""}]) - priming
            for role in ("system", "user", "assistant")
        }

    def count(self, text: str) -> int:
        found = self._counts.get(text)
        if found is None:
            found = self._counts[text] = self.tokenizer.count(text)
        return found

    def message_overhead(self, role: str) -> int:
        return self.overhead.get(role, self.overhead["user"])


def _plain(block: Mapping[str, Any]) -> str:
    """The block as keyed: its JSON without a ``cache_control`` mark."""
    return json.dumps(
        {k: v for k, v in block.items() if k != "cache_control"}, sort_keys=True, default=str
    )


def _text(block: Mapping[str, Any]) -> str:
    text = block.get("text")
    return text if isinstance(text, str) else _plain(block)


def _mark(block: Mapping[str, Any]) -> str | None:
    control = block.get("cache_control")
    if not isinstance(control, Mapping):
        return None
    ttl = control.get("ttl")
    return ttl if isinstance(ttl, str) else DEFAULT_LIFETIME


def _chain(
    items: Iterator[tuple[str, Mapping[str, Any], int]], counter: BlockCounter
) -> list[Block]:
    """Blocks from ``(role, block, overhead)`` in cache order."""
    digest = hashlib.sha256()
    total = 0
    out: list[Block] = []
    for role, block, overhead in items:
        digest.update(json.dumps(role).encode())
        digest.update(_plain(block).encode("utf-8", "surrogatepass"))
        total += overhead + counter.count(_text(block))
        out.append(Block(digest.copy().hexdigest(), total, _mark(block)))
    return out


def _content_blocks(content: Any) -> list[Mapping[str, Any]]:
    if isinstance(content, str):
        return [{"type": "text", "text": content}]
    if isinstance(content, Sequence):
        return [b if isinstance(b, Mapping) else {"type": "text", "text": str(b)} for b in content]
    return [{"type": "json", "value": content}]


def anthropic_blocks(request: Mapping[str, Any], counter: BlockCounter) -> list[Block]:
    """The blocks of a Messages API request: tools, system, then the messages' blocks."""

    def items() -> Iterator[tuple[str, Mapping[str, Any], int]]:
        for tool in request.get("tools") or ():
            yield "tools", tool, 0
        system = request.get("system")
        if system:
            for n, block in enumerate(_content_blocks(system)):
                yield "system", block, counter.message_overhead("system") if n == 0 else 0
        for message in request.get("messages") or ():
            role = str(message.get("role"))
            for n, block in enumerate(_content_blocks(message.get("content"))):
                yield role, block, counter.message_overhead(role) if n == 0 else 0

    return _chain(items(), counter)


def openai_blocks(request: Mapping[str, Any] | Sequence[Any], counter: BlockCounter) -> list[Block]:
    """The blocks of a chat-completions request: one per message.

    ``request`` is the ``messages`` list, or a mapping holding it (``input`` for
    the Responses API).
    """
    if isinstance(request, Mapping):
        messages = request.get("messages", request.get("input", ()))
    else:
        messages = request

    def items() -> Iterator[tuple[str, Mapping[str, Any], int]]:
        for message in messages:
            role = str(message.get("role", "user"))
            content = message.get("content")
            if isinstance(content, str) and set(message) <= {"role", "content", "name"}:
                block: Mapping[str, Any] = {"type": "text", "text": content}
            else:  # tool calls, parts: the message's JSON stands in for its text
                block = {"type": "text", "text": json.dumps(message, sort_keys=True, default=str)}
            yield role, block, counter.message_overhead(role)

    return _chain(items(), counter)


def gemini_blocks(request: Mapping[str, Any], counter: BlockCounter) -> list[Block]:
    """The blocks of a ``generate_content`` request: the system instruction, then parts."""
    config = request.get("config") or {}
    system = config.get("system_instruction") if isinstance(config, Mapping) else None

    def items() -> Iterator[tuple[str, Mapping[str, Any], int]]:
        if system:
            text = {"type": "text", "text": str(system)}
            yield "system", text, counter.message_overhead("system")
        for content in request.get("contents") or ():
            role = str(content.get("role", "user"))
            for n, part in enumerate(content.get("parts") or ()):
                block = part if "text" in part else {"type": "json", "value": part}
                yield role, block, counter.message_overhead(role) if n == 0 else 0

    return _chain(items(), counter)


BLOCKS: Final = {
    "anthropic": anthropic_blocks,
    "openai": openai_blocks,
    "gemini": gemini_blocks,
}
"""The block structure of each provider's request."""
