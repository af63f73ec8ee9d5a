"""Anthropic Messages API: ``client.messages.create(..., **to_anthropic(result))``."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Final

from memctx.adapters._cache import MAX_BREAKPOINTS, ephemeral, mark_message, marks_in, message_marks
from memctx.adapters._checks import check_flag, checked_tool_definitions
from memctx.adapters._conversation import Source, ToolMode, conversation
from memctx.adapters._parts import Call, Media, Part, Reasoning, Result, Turn
from memctx.adapters._turns import turn_options

DECLARED_TOOL_DESCRIPTION: Final = (
    "A tool called earlier in this conversation (declared by memctx so that the "
    "history's tool calls are accepted)."
)


def to_anthropic(
    source: Source,
    *,
    tools: ToolMode = "native",
    prefill: bool | None = None,
    opening_turn: str | None = None,
    closing_turn: str | None = None,
    tool_definitions: Sequence[Mapping[str, Any]] = (),
    cache: bool = False,
) -> dict[str, Any]:
    """The ``system``, ``messages`` (and, for native calls, ``tools``) arguments.

    The rules met: the system text is the top-level ``system`` (left out when
    there is none); ``messages`` start with a user turn (``opening_turn`` is
    added before a leading assistant turn) and end with one (``closing_turn``
    is added after a final assistant turn) unless ``prefill=True``, in which
    case a final assistant turn is kept as the prefill, its trailing white
    space removed. ``tools="native"`` (the default) sends ``tool_use`` /
    ``tool_result`` blocks (``is_error`` for failed calls); since the API
    refuses those blocks unless the request defines the tools, ``tools``
    lists ``tool_definitions`` plus a minimal definition (any object as
    input) for each other tool the history calls. Native mode also sends, in
    place: a ``thinking`` chunk with an Anthropic ``signature`` as a
    ``thinking`` block (signature intact), a ``redacted_thinking`` chunk as a
    ``redacted_thinking`` block, images and PDFs as ``image`` / ``document``
    blocks (base64 or URL source) -- inside the ``tool_result`` when they
    belong to the call (``call_id``); unsigned reasoning stays text. Every
    thinking block of every turn is kept where it was (the API requires those
    of the assistant turns of the current tool use, and ignores or uses the
    older ones by model). ``tools="text"``: every chunk as its XML text.
    Raises
    :class:`~memctx.EmptyContextError` when there is no user or assistant turn.

    The added turns: a result built with ``provider="anthropic"`` (or
    ``"gemini"``) counted its ``turn_options`` in ``token_count``; those are
    sent, and an ``opening_turn``, ``closing_turn`` or ``prefill`` given here
    that differs raises :class:`~memctx.TurnMismatchError` -- pass it to the
    build instead. Otherwise (no provider, or messages given) the turns given
    here are added, uncounted (defaults: :data:`OPENING_TURN`,
    :data:`CLOSING_TURN`, no prefill).

    ``cache=True`` marks the stable prefix with ``cache_control`` breakpoints
    (at most four with those in ``tool_definitions``): the system prompt
    (``system`` is then a list of one text block) and the messages that the
    previous request sent or the next one will repeat; the rule is in
    :mod:`memctx.adapters._cache` and docs/strategies-and-caching.md.
    """
    check_flag("cache", cache)
    definitions = checked_tool_definitions(tool_definitions)
    talk = conversation(source, tools, "Anthropic", alternate=True)
    options = turn_options(
        source, opening_turn=opening_turn, closing_turn=closing_turn, prefill=prefill
    )
    added = options.added(t.role for t in talk.turns)
    messages: list[dict[str, Any]] = []
    if added.opening is not None:
        messages.append({"role": "user", "content": added.opening})
    messages.extend(_message(turn, native=tools == "native") for turn in talk.turns)
    if added.closing is not None:
        messages.append({"role": "user", "content": added.closing})
    elif messages[-1]["role"] == "assistant":
        _strip_final(messages[-1])
    request: dict[str, Any] = {"messages": messages}
    used = list(dict.fromkeys(p.name for t in talk.turns for p in t.parts if isinstance(p, Call)))
    if used:
        defined = definitions
        names = {d.get("name") for d in defined}
        defined += [
            {
                "name": name,
                "description": DECLARED_TOOL_DESCRIPTION,
                "input_schema": {"type": "object"},
            }
            for name in used
            if name not in names
        ]
        request["tools"] = defined
    room = MAX_BREAKPOINTS - marks_in(request.get("tools", ()))
    if talk.system.strip():
        request["system"] = talk.system
        if cache and room > 0:
            request["system"] = [
                {"type": "text", "text": talk.system, "cache_control": ephemeral()}
            ]
            room -= 1
    if cache:
        offset = 1 if added.opening is not None else 0
        for index in message_marks(source, talk, tools, room):
            mark_message(messages[offset + index])
    return request


def _message(turn: Turn, *, native: bool) -> dict[str, Any]:
    blocks = [_block(p) for p in turn.parts]
    if not native or all(b["type"] == "text" for b in blocks):
        return {"role": turn.role, "content": "".join(b["text"] for b in blocks)}
    merged: list[dict[str, Any]] = []
    for block in blocks:  # text parts that stayed text join their neighbours
        if block["type"] == "text" and merged and merged[-1]["type"] == "text":
            merged[-1] = {"type": "text", "text": merged[-1]["text"] + block["text"]}
        else:
            merged.append(block)
    return {"role": turn.role, "content": merged}


def _block(part: Part) -> dict[str, Any]:
    if isinstance(part, Call):
        return {"type": "tool_use", "id": part.id, "name": part.name, "input": part.arguments}
    if isinstance(part, Reasoning) and part.anthropic_signed:
        if part.redacted:
            return {"type": "redacted_thinking", "data": part.chunk.content}
        meta = part.chunk.metadata
        return {"type": "thinking", "thinking": part.chunk.content, "signature": meta.signature}
    if isinstance(part, Media):
        return _media_block(part)
    if not isinstance(part, Result):
        return {"type": "text", "text": part.text}
    block: dict[str, Any] = {"type": "tool_result", "tool_use_id": part.id}
    if part.media:  # a tool's image or PDF: a block of the result's content
        text = [{"type": "text", "text": part.output}] if part.output else []
        block["content"] = text + [_media_block(m) for m in part.media]
    elif part.output:
        block["content"] = part.output
    if part.is_error:
        block["is_error"] = True
    return block


def _media_block(part: Media) -> dict[str, Any]:
    source: dict[str, Any]
    if part.url is not None:
        source = {"type": "url", "url": part.url}
    else:
        source = {"type": "base64", "media_type": part.media_type, "data": part.data}
    if part.is_image:
        return {"type": "image", "source": source}
    block = {"type": "document", "source": source}
    if part.chunk.metadata.title is not None:
        block["title"] = part.chunk.metadata.title
    return block


def _strip_final(message: dict[str, Any]) -> None:
    """A prefill must not end in white space: strip the end of the final text."""
    content = message["content"]
    if isinstance(content, str):
        message["content"] = content.rstrip()
    elif content and content[-1].get("type") == "text":
        content[-1]["text"] = content[-1]["text"].rstrip()
