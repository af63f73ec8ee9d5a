"""Agents SDK input items as memctx chunks, and back.

Every item becomes one chunk: user, system and developer messages, assistant
messages, function calls and their outputs, reasoning; anything else a ``CUSTOM``
chunk. The item itself (as plain JSON) is kept in the chunk's
``metadata.custom["openai_agents_item"]``, so the SDK gets its own item back.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any, Final

from memctx import chunks
from memctx._chunk import Chunk
from memctx._exceptions import ItemNotJSONError, TranscriptError
from memctx._json import NotJSONError, freeze_json, thaw_json

ITEM_KEY: Final = "openai_agents_item"
"""Key of ``metadata.custom`` under which a chunk keeps the SDK item it came from."""


def _text(content: Any) -> str | None:
    """The text of a message's content: a string, or a list of text parts."""
    if isinstance(content, str):
        return content
    if isinstance(content, Sequence) and content:
        texts = []
        for part in content:
            if not isinstance(part, Mapping) or not isinstance(part.get("text"), str):
                return None
            texts.append(part["text"])
        return "".join(texts)
    return None


def _arguments(raw: Any) -> Any:
    if isinstance(raw, str):
        try:
            return json.loads(raw)
        except ValueError:
            return raw
    return raw


def plain_item(item: Any, path: str = "item") -> dict[str, Any]:
    """The item as a plain JSON object (the SDK may hand over pydantic models).

    Raises :class:`~memctx.ItemNotJSONError` (a ``TypeError``, as the SDK's own
    sessions raise) for a value JSON cannot store, instead of storing its ``repr``.
    """
    if hasattr(item, "model_dump"):
        item = item.model_dump(mode="json", exclude_unset=True)
    if not isinstance(item, Mapping):
        raise TranscriptError(f"{path}: an input item must be an object, got {type(item).__name__}")
    try:
        plain: dict[str, Any] = thaw_json(freeze_json(item, path))
    except NotJSONError as exc:
        raise ItemNotJSONError(exc.path, exc.message) from None
    return plain


def is_user_message(item: Mapping[str, Any]) -> bool:
    """Whether ``item`` is a message of the user (a prompt)."""
    return item.get("type", "message") == "message" and item.get("role") == "user"


def item_to_chunk(
    item: Any, tool_names: Mapping[str, str] | None = None, *, id: str | None = None
) -> Chunk:
    """The memctx chunk for one Agents SDK input item (the item kept in its metadata).

    ``tool_names`` maps call ids to function names, to name the tool of a
    ``function_call_output`` (which does not carry it).
    """
    raw = plain_item(item)
    keep = {ITEM_KEY: raw}
    kind = raw.get("type", "message")
    role = raw.get("role")
    if kind == "message" and role in ("user", "system", "developer", "assistant"):
        text = _text(raw.get("content"))
        if text is not None:
            if role == "user":
                return chunks.user(text, custom=keep, id=id)
            if role == "assistant":
                return chunks.assistant(text, custom=keep, id=id)
            return chunks.system(text, custom=keep, id=id)
    if kind == "function_call":
        return chunks.tool_call(
            str(raw.get("name", "function")),
            _arguments(raw.get("arguments")),
            call_id=str(raw.get("call_id")),
            status="completed",
            custom=keep,
            id=id,
        )
    if kind == "function_call_output":
        call_id = str(raw.get("call_id"))
        output = raw.get("output")
        name = (tool_names or {}).get(call_id, "function")
        return chunks.tool_result(
            name,
            output if isinstance(output, str) else json.dumps(output),
            call_id=call_id,
            custom=keep,
            id=id,
        )
    if kind == "reasoning":
        summary = raw.get("summary") or []
        text = "\n".join(str(s.get("text", "")) for s in summary if isinstance(s, Mapping))
        return chunks.thinking(text or "(reasoning)", custom=keep, id=id)
    content = raw.get("content")
    return chunks.custom(
        f"openai_{kind}",
        content if content is not None else raw,
        role="assistant" if role == "assistant" else "user",
        custom=keep,
        id=id,
    )


def tool_names(items: Sequence[Mapping[str, Any]]) -> dict[str, str]:
    """Call id -> function name, for the function calls among ``items``."""
    return {
        str(p.get("call_id")): str(p.get("name")) for p in items if p.get("type") == "function_call"
    }


def item_of(chunk: Chunk) -> Any:
    """The SDK item a chunk was made from; a chunk made elsewhere becomes a message."""
    item = chunk.metadata.custom.get(ITEM_KEY)
    if item is not None:
        return thaw_json(item)
    role = "assistant" if chunk.role == "assistant" else "user"
    return {"role": role, "content": chunk.text}
