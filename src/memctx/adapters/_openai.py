"""OpenAI chat completions: ``client.chat.completions.create(messages=to_openai(result))``."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from memctx._render.media import data_url
from memctx.adapters._conversation import Source, ToolMode, conversation
from memctx.adapters._parts import Call, Media, Part, Result, Text, Turn, part_text


def to_openai(source: Source, *, tools: ToolMode = "native") -> list[dict[str, Any]]:
    """Chat-completions messages for ``source`` (a build result, or its messages).

    ``tools="native"`` (the default): calls that can be sent natively (see
    :mod:`memctx.adapters`) become ``tool_calls`` of the assistant message
    (``content`` is ``None`` when it holds no other text), each result a
    ``tool`` message right after it; an image becomes an ``image_url``
    content part (a ``data:`` URL, or its URL) and a PDF given as data a
    ``file`` part, in place in the user message. A ``tool`` message takes
    only text: the images and PDFs of a result (``call_id``) follow the
    ``tool`` messages in a user message, each after its placeholder (the
    user message the turn has anyway, or one of its own). Reasoning stays text (chat
    completions take no reasoning back; use :func:`to_responses`).
    ``tools="text"``: ``{"role", "content"}`` dicts, the system message
    first, every chunk as its XML (images as their short placeholder).
    OpenAI needs no added turn; a request of only a system message is sent
    as it is. Raises :class:`~memctx.EmptyContextError` when there is no
    message at all.
    """
    talk = conversation(source, tools, "OpenAI", system_only=True)
    messages: list[dict[str, Any]] = []
    if talk.system:
        messages.append({"role": "system", "content": talk.system})
    for turn in talk.turns:
        messages.extend(openai_turn(turn))
    return messages


def openai_turn(turn: Turn) -> list[dict[str, Any]]:
    """The chat messages of one turn: its tool results first, then its message."""
    out: list[dict[str, Any]] = [
        {"role": "tool", "tool_call_id": p.id, "content": p.output}
        for p in turn.parts
        if isinstance(p, Result)
    ]
    body = user_parts(turn)
    calls = [p for p in turn.parts if isinstance(p, Call)]
    if turn.role == "assistant":
        text = "".join(part_text(p) for p in body)
        message: dict[str, Any] = {"role": "assistant", "content": text or None}
        if calls:
            message["tool_calls"] = [tool_call(call) for call in calls]
        out.append(message)
    elif body:
        out.append({"role": "user", "content": _user_content(body)})
    return out


def user_parts(turn: Turn) -> list[Part]:
    """The parts of a turn's message after its ``tool`` messages.

    A ``tool`` message takes only text, so the images and PDFs of a result
    (see :class:`~memctx.adapters._conversation.Result`) come first, each
    after its placeholder (which names the ``call_id``), then the turn's
    other parts."""
    moved: list[Part] = []
    for result in (p for p in turn.parts if isinstance(p, Result)):
        for media in result.media:
            moved += [Text(media.text), media]
    return moved + [p for p in turn.parts if not isinstance(p, Result | Call)]


def _user_content(parts: Sequence[Part]) -> str | list[dict[str, Any]]:
    blocks: list[dict[str, Any]] = []
    for part in parts:
        block = media_part(part) if isinstance(part, Media) else None
        if block is not None:
            blocks.append(block)
        elif blocks and blocks[-1]["type"] == "text":
            blocks[-1]["text"] += part_text(part)
        else:
            blocks.append({"type": "text", "text": part_text(part)})
    if all(b["type"] == "text" for b in blocks):
        return "".join(b["text"] for b in blocks)
    return blocks


def media_part(part: Media) -> dict[str, Any] | None:
    """An ``image_url`` or ``file`` part; None for a document given by URL (chat completions
    take files only as data or uploaded ids: it stays its placeholder text)."""
    url = data_url(part.media_type, part.chunk.content)
    if part.is_image:
        image: dict[str, Any] = {"url": url}
        if part.chunk.metadata.detail is not None:
            image["detail"] = part.chunk.metadata.detail
        return {"type": "image_url", "image_url": image}
    if part.url is not None:
        return None
    name = part.chunk.metadata.title or f"{part.chunk.id}.pdf"
    return {"type": "file", "file": {"file_data": url, "filename": name}}


def tool_call(call: Call) -> dict[str, Any]:
    arguments = json.dumps(call.arguments, ensure_ascii=False)
    function = {"name": call.name, "arguments": arguments}
    return {"id": call.id, "type": "function", "function": function}
