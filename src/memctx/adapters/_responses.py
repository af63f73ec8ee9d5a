"""OpenAI Responses API: ``client.responses.create(model=..., input=to_responses(result))``."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from memctx._render.media import data_url
from memctx.adapters._checks import check_flag
from memctx.adapters._conversation import Source, ToolMode, conversation
from memctx.adapters._parts import Call, Media, Part, Reasoning, Result, Text, part_text


def to_responses(
    source: Source, *, tools: ToolMode = "native", item_ids: bool = True
) -> list[dict[str, Any]]:
    """The ``input`` items of a Responses API request for ``source``.

    A system message first (``{"role": "system", ...}``); then, per turn,
    the tool results as ``function_call_output`` items (an image or PDF of
    the call's, see :func:`memctx.chunks.image`'s ``call_id``, goes in the
    output's list as ``input_image`` / ``input_file``), the user's message
    (``input_text``, ``input_image`` and ``input_file`` parts when it holds
    media), or the assistant's items in order: its text as an assistant
    message, each native call as a ``function_call`` item, and the
    ``thinking`` chunks that came from an OpenAI reasoning item (they have
    its ``reasoning_id``; consecutive chunks of one id are its summary parts,
    in order) as that ``reasoning`` item again, the signature as
    ``encrypted_content`` -- provided an item the reasoning led to follows it
    in the turn (the API refuses a reasoning item without one). Other
    reasoning (Anthropic's, or unsigned) is sent as its XML text.

    Ids: an item's own id (``ChunkMetadata.item_id``, kept by
    :func:`~memctx.importers.load_responses_items`) is sent back on its
    ``function_call`` / ``function_call_output``, and an assistant message
    with one is sent as an output message (``"type": "message"``, ``id``,
    ``status``, ``output_text`` content). ``item_ids=False`` sends no item id
    at all -- for requests with ``store=False``, where the API looks ids up
    and refuses those it did not store; reasoning is then sent only with its
    ``encrypted_content`` (without it, as text). ``tools="text"``: messages of
    XML text only. Raises :class:`~memctx.EmptyContextError` when there is
    no message at all.
    """
    check_flag("item_ids", item_ids)
    talk = conversation(source, tools, "OpenAI Responses", system_only=True)
    items: list[dict[str, Any]] = []
    if talk.system:
        items.append({"role": "system", "content": talk.system})
    for turn in talk.turns:
        items += [_output_item(p, item_ids) for p in turn.parts if isinstance(p, Result)]
        parts = [p for p in turn.parts if not isinstance(p, Result)]
        if turn.role == "assistant":
            items += _assistant_items(parts, item_ids)
        elif parts:
            items.append({"role": "user", "content": _user_content(parts)})
    return items


def _with_id(item: dict[str, Any], item_id: str | None, item_ids: bool) -> dict[str, Any]:
    """``item`` with the ``id`` it came with, when it has one and ids are sent."""
    if item_ids and item_id is not None:
        item["id"] = item_id
    return item


def _output_item(part: Result, item_ids: bool) -> dict[str, Any]:
    output: str | list[dict[str, Any]] = part.output
    if part.media:
        text = [{"type": "input_text", "text": part.output}] if part.output else []
        output = text + [_media_part(m) for m in part.media]
    item = {"type": "function_call_output", "call_id": part.id, "output": output}
    return _with_id(item, part.chunk.metadata.item_id, item_ids)


def _reasoning_run(parts: Sequence[Part], index: int, item_ids: bool) -> int:
    """How many parts from ``index`` make one reasoning item (0: the part is not one).

    A run is the consecutive thinking chunks of one ``reasoning_id`` (the
    item's summary parts); it is sent when an item that is not reasoning
    follows it in the turn, and, without ids, when it has its encrypted
    content."""
    part = parts[index]
    if not isinstance(part, Reasoning) or part.redacted:
        return 0
    meta = part.chunk.metadata
    if meta.reasoning_id is None or (not item_ids and meta.signature is None):
        return 0
    end = index + 1
    while end < len(parts) and _same_item(parts[end], meta.reasoning_id):
        end += 1
    if not any(not isinstance(p, Reasoning) for p in parts[end:]):
        return 0
    return end - index


def _same_item(part: Part, reasoning_id: str) -> bool:
    return (
        isinstance(part, Reasoning)
        and not part.redacted
        and part.chunk.metadata.reasoning_id == reasoning_id
    )


def _assistant_items(parts: Sequence[Part], item_ids: bool) -> list[dict[str, Any]]:
    items: list[dict[str, Any]] = []
    text: list[str] = []

    def flush() -> None:
        if text:
            items.append({"role": "assistant", "content": "".join(text)})
            text.clear()

    index = 0
    while index < len(parts):
        part = parts[index]
        run = _reasoning_run(parts, index, item_ids)
        if run:
            flush()
            items.append(_reasoning_item(parts[index : index + run], item_ids))
            index += run
            continue
        if isinstance(part, Call):
            flush()
            arguments = json.dumps(part.arguments, ensure_ascii=False)
            call = {
                "type": "function_call",
                "call_id": part.id,
                "name": part.name,
                "arguments": arguments,
            }
            items.append(_with_id(call, part.chunk.metadata.item_id, item_ids))
        elif isinstance(part, Text) and part.item_id is not None and item_ids:
            flush()
            items.append(_output_message(part.text, part.item_id))
        else:
            text.append(part_text(part))
        index += 1
    flush()
    return items


def _output_message(text: str, item_id: str) -> dict[str, Any]:
    content = [{"type": "output_text", "text": text, "annotations": []}]
    return {
        "type": "message",
        "id": item_id,
        "role": "assistant",
        "status": "completed",
        "content": content,
    }


def _reasoning_item(run: Sequence[Part], item_ids: bool) -> dict[str, Any]:
    chunks = [p.chunk for p in run if isinstance(p, Reasoning)]
    meta = chunks[0].metadata
    summary = [{"type": "summary_text", "text": str(c.content)} for c in chunks if str(c.content)]
    item: dict[str, Any] = {"type": "reasoning"}
    if item_ids:
        item["id"] = meta.reasoning_id
    item["summary"] = summary
    signature = next((c.metadata.signature for c in chunks if c.metadata.signature), None)
    if signature is not None:
        item["encrypted_content"] = signature
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
