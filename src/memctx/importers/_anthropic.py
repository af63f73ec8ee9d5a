"""Importing Anthropic Messages API conversations."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Literal

import attrs

from memctx import chunks
from memctx._chunk import Chunk
from memctx._exceptions import InvalidChunkError, TranscriptError
from memctx._json import NotJSONError, dumps, plain_json
from memctx._state import MemoryState
from memctx.importers._media import from_url, media_chunk
from memctx.importers._report import ImportReport, check_options, first_user_pinned


def _plain(block: object, index: int) -> Any:
    """A block of the transcript as plain JSON; one that cannot be is a TranscriptError."""
    try:
        return plain_json(block)
    except NotJSONError as exc:
        raise TranscriptError(
            f"a content block cannot be read: {exc.message}", index=index
        ) from None


def block_text(content: Any, index: int) -> str:
    """A string, or the text of a list of content blocks (other blocks as JSON)."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        texts = []
        for block in content:
            if isinstance(block, Mapping) and block.get("type") == "text":
                texts.append(str(block.get("text", "")))
            else:
                texts.append(dumps(_plain(block, index)))
        return "\n".join(texts)
    raise TranscriptError(
        f"content must be a string or a list of blocks, got {type(content).__name__}", index=index
    )


def load_anthropic_messages(
    data: Any,
    *,
    thread_id: str | None = None,
    unknown_roles: Literal["keep", "error"] = "keep",
    pin_task: bool = True,
) -> tuple[MemoryState, ImportReport]:
    """Import the arguments of a Messages API call: ``{"system": ..., "messages": [...]}``.

    A plain list of messages works too. The ``system`` text (a string or
    text blocks) becomes one ``system`` chunk (id ``system``). Each message's
    content is a string (one chunk, id ``msg<index>``) or a list of blocks
    (one chunk per block, id ``msg<index>_<k>``): ``text`` becomes ``user``
    or ``assistant``, ``thinking`` becomes ``thinking`` (its ``signature``
    kept), ``redacted_thinking`` a ``redacted_thinking`` chunk, a user's
    ``image`` / ``document`` block (base64 or URL source) an image or
    document chunk, ``tool_use`` a
    ``tool_call`` (``call_id`` = its ``id``; ``pending`` when no result
    answers it), ``tool_result`` the ``tool_result`` of that call
    (``tool_error`` with ``is_error``; the images and documents of its
    content become image and document chunks of its ``call_id`` right after
    it, ids ``msg<index>_<k>_<j>``). Other blocks (files by id, search
    results, ...) are kept as ``CUSTOM`` chunks (kind ``anthropic_<type>``) holding the
    block's JSON and listed in the report's ``unknown_blocks``. The first
    user message is pinned unless ``pin_task=False``.
    """
    check_options(pin_task, unknown_roles)
    system: Any = None
    if isinstance(data, Mapping):
        if "messages" not in data:
            raise TranscriptError("an object transcript needs a 'messages' list")
        system = data.get("system")
        data = data["messages"]
    if not isinstance(data, Sequence) or isinstance(data, str | bytes):
        raise TranscriptError("a transcript must be a list of messages")
    answered = {
        block.get("tool_use_id")
        for message in data
        if isinstance(message, Mapping) and isinstance(message.get("content"), list)
        for block in message["content"]
        if isinstance(block, Mapping) and block.get("type") == "tool_result"
    }
    out: list[Chunk] = []
    if system is not None:
        text = block_text(system, 0) if not isinstance(system, str) else system
        if text.strip():
            out.append(chunks.system(text, id="system"))
    names: dict[str, str] = {}
    unknown_roles_found: list[tuple[int, str]] = []
    unknown_blocks: list[tuple[int, str]] = []
    for index, message in enumerate(data):
        if not isinstance(message, Mapping):
            raise TranscriptError(f"must be an object, got {type(message).__name__}", index=index)
        role = message.get("role")
        if not isinstance(role, str):
            raise TranscriptError("missing string 'role'", index=index)
        content = message.get("content")
        try:
            if role not in ("user", "assistant"):
                if unknown_roles == "error":
                    raise TranscriptError(f"unknown role {role!r}", index=index)
                unknown_roles_found.append((index, role))
                text = block_text(content, index)
                out.append(chunks.custom(f"anthropic_{role}", text, "user", id=f"msg{index}"))
            elif isinstance(content, str):
                out.append(_text_chunk(role, content, f"msg{index}"))
            elif isinstance(content, list):
                for k, block in enumerate(content):
                    chunk = _block(role, block, f"msg{index}_{k}", index, names, answered)
                    if chunk.type.value == "CUSTOM":
                        unknown_blocks.append((index, str(chunk.subtype)[len("anthropic_") :]))
                    out.append(chunk)
                    out += _result_media(block, f"msg{index}_{k}")
            else:
                raise TranscriptError("content must be a string or a list of blocks", index=index)
        except InvalidChunkError as exc:
            raise TranscriptError(str(exc), index=index) from None
    unanswered = tuple(call_id for call_id in names if call_id not in answered)
    if pin_task:
        out = first_user_pinned(out)
    report = ImportReport(tuple(unknown_roles_found), unanswered, tuple(unknown_blocks))
    return MemoryState(out, thread_id=thread_id), report


def _text_chunk(role: str, text: str, chunk_id: str) -> Chunk:
    if role == "user":
        return chunks.user(text, id=chunk_id)
    return chunks.assistant(text, id=chunk_id)


def _media(kind: str, block: Mapping[str, Any], chunk_id: str) -> Chunk:
    source = block.get("source")
    if not isinstance(source, Mapping):
        raise InvalidChunkError("source", f"an {kind} block needs a 'source' object")
    title = block.get("title")
    if source.get("type") == "url":
        return from_url(kind, source.get("url"), chunk_id, title=title)
    if source.get("type") == "base64":
        media_type = source.get("media_type")
        return media_chunk(kind, source.get("data"), media_type, chunk_id, title=title)
    raise InvalidChunkError("source", f"type {source.get('type')!r} cannot be imported")


def _sourced_media(block: object) -> bool:
    """Whether a block is an image or document given by base64 data or URL."""
    if not isinstance(block, Mapping) or block.get("type") not in ("image", "document"):
        return False
    source = block.get("source")
    return isinstance(source, Mapping) and source.get("type") in ("base64", "url")


def _result_media(block: object, chunk_id: str) -> list[Chunk]:
    """The image and document chunks of a ``tool_result`` block's content (with its call's
    ``call_id``, ids ``<chunk_id>_<k>``)."""
    if not isinstance(block, Mapping) or block.get("type") != "tool_result":
        return []
    content = block.get("content")
    if not isinstance(content, list):
        return []
    call_id = block.get("tool_use_id")
    found = []
    for k, inner in enumerate(content):
        if _sourced_media(inner):
            chunk = _media(inner["type"], inner, f"{chunk_id}_{k}")
            found.append(
                attrs.evolve(chunk, metadata=attrs.evolve(chunk.metadata, call_id=call_id))
            )
    return found


def _block(
    role: str, block: Any, chunk_id: str, index: int, names: dict[str, str], answered: set[Any]
) -> Chunk:
    if not isinstance(block, Mapping) or not isinstance(block.get("type"), str):
        raise TranscriptError("each content block must be an object with a 'type'", index=index)
    kind = block["type"]
    if kind == "text":
        return _text_chunk(role, str(block.get("text", "")), chunk_id)
    if kind == "thinking":
        signature = block.get("signature") or None
        return chunks.thinking(str(block.get("thinking", "")), signature, id=chunk_id)
    if kind == "redacted_thinking":
        return chunks.redacted_thinking(str(block.get("data") or ""), id=chunk_id)
    if role == "user" and _sourced_media(block):  # not files by id
        return _media(kind, block, chunk_id)
    if kind == "tool_use":
        call_id, name = block.get("id"), block.get("name")
        if not isinstance(call_id, str) or not call_id or not isinstance(name, str):
            raise TranscriptError("a tool_use block needs an 'id' and a 'name'", index=index)
        names[call_id] = name
        status = "completed" if call_id in answered else "pending"
        arguments = block.get("input", {})
        return chunks.tool_call(name, arguments, call_id=call_id, status=status, id=chunk_id)
    if kind == "tool_result":
        call_id = block.get("tool_use_id")
        if not isinstance(call_id, str) or not call_id:
            raise TranscriptError("a tool_result block needs a 'tool_use_id'", index=index)
        tool = names.get(call_id, "unknown")
        content = block.get("content")
        if isinstance(content, list):  # its images and documents are chunks of their own
            content = [b for b in content if not _sourced_media(b)]
        output = block_text(content, index)
        if block.get("is_error"):
            return chunks.tool_error(tool, output, call_id=call_id, id=chunk_id)
        return chunks.tool_result(tool, output, call_id=call_id, id=chunk_id)
    payload = _plain(block, index)
    return chunks.custom(
        f"anthropic_{kind}", payload, "user" if role == "user" else "assistant", id=chunk_id
    )
