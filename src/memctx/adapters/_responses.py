"""OpenAI Responses API: ``client.responses.create(model=..., input=to_responses(result))``."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from memctx._render.media import data_url
from memctx.adapters._conversation import (
    Call,
    Media,
    Part,
    Reasoning,
    Result,
    Source,
    ToolMode,
    conversation,
    part_text,
)


def to_responses(source: Source, *, tools: ToolMode = "native") -> list[dict[str, Any]]:
    """The ``input`` items of a Responses API request for ``source``.

    A system message first (``{"role": "system", ...}``); then, per turn,
    the tool results as ``function_call_output`` items, the user's message
    (``input_text``, ``input_image`` and ``input_file`` parts when it holds
    media), or the assistant's items in order: its text as an assistant
    message, each native call as a ``function_call`` item, and each
    ``thinking`` chunk that came from an OpenAI reasoning item (it has a
    ``reasoning_id``) as that ``reasoning`` item again -- its text as the
    summary, its signature as ``encrypted_content`` -- provided an item the
    reasoning led to follows it in the turn (the API refuses a reasoning
    item without one). Other reasoning (Anthropic's, or unsigned) is sent
    as its XML text. ``tools="text"``: messages of XML text only. Raises
    :class:`~memctx.EmptyContextError` when there is no message at all.
    """
    talk = conversation(source, tools, "OpenAI Responses", system_only=True)
    items: list[dict[str, Any]] = []
    if talk.system:
        items.append({"role": "system", "content": talk.system})
    for turn in talk.turns:
        items += [
            {"type": "function_call_output", "call_id": p.id, "output": p.output}
            for p in turn.parts
            if isinstance(p, Result)
        ]
        parts = [p for p in turn.parts if not isinstance(p, Result)]
        if turn.role == "assistant":
            items += _assistant_items(parts)
        elif parts:
            items.append({"role": "user", "content": _user_content(parts)})
    return items


def _sendable_reasoning(parts: Sequence[Part], index: int) -> bool:
    part = parts[index]
    if not isinstance(part, Reasoning) or part.redacted or part.chunk.metadata.reasoning_id is None:
        return False
    following = parts[index + 1 :]
    return any(not isinstance(p, Reasoning) for p in following)


def _assistant_items(parts: Sequence[Part]) -> list[dict[str, Any]]:
    items: list[dict[str, Any]] = []
    text: list[str] = []

    def flush() -> None:
        if text:
            items.append({"role": "assistant", "content": "".join(text)})
            text.clear()

    for index, part in enumerate(parts):
        if isinstance(part, Call):
            flush()
            arguments = json.dumps(part.arguments, ensure_ascii=False)
            items.append(
                {
                    "type": "function_call",
                    "call_id": part.id,
                    "name": part.name,
                    "arguments": arguments,
                }
            )
        elif isinstance(part, Reasoning) and _sendable_reasoning(parts, index):
            flush()
            items.append(_reasoning_item(part))
        else:
            text.append(part_text(part))
    flush()
    return items


def _reasoning_item(part: Reasoning) -> dict[str, Any]:
    meta = part.chunk.metadata
    text = str(part.chunk.content)
    summary = [{"type": "summary_text", "text": text}] if text else []
    item: dict[str, Any] = {"type": "reasoning", "id": meta.reasoning_id, "summary": summary}
    if meta.signature is not None:
        item["encrypted_content"] = meta.signature
    return item


def _user_content(parts: Sequence[Part]) -> str | list[dict[str, Any]]:
    if not any(isinstance(p, Media) for p in parts):
        return "".join(part_text(p) for p in parts)
    blocks: list[dict[str, Any]] = []
    for part in parts:
        if isinstance(part, Media):
            blocks.append(_media_part(part))
        elif blocks and blocks[-1]["type"] == "input_text":
            blocks[-1]["text"] += part_text(part)
        else:
            blocks.append({"type": "input_text", "text": part_text(part)})
    return blocks


def _media_part(part: Media) -> dict[str, Any]:
    if part.is_image:
        url = data_url(part.media_type, part.chunk.content)
        return {
            "type": "input_image",
            "image_url": url,
            "detail": part.chunk.metadata.detail or "auto",
        }
    block: dict[str, Any] = {"type": "input_file"}
    if part.url is not None:
        block["file_url"] = part.url
    else:
        block["file_data"] = data_url(part.media_type, part.chunk.content)
        block["filename"] = part.chunk.metadata.title or f"{part.chunk.id}.pdf"
    return block
