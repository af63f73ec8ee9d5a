"""Importing LangChain message objects (``langchain-core``, the ``memctx[langchain]`` extra)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import attrs

from memctx import chunks
from memctx._chunk import Chunk
from memctx._exceptions import InvalidChunkError, TranscriptError
from memctx._json import NotJSONError, plain_json
from memctx._state import MemoryState
from memctx.importers._anthropic import block_text
from memctx.importers._media import from_url, media_chunk
from memctx.importers._report import ImportReport, check_options, first_user_pinned


def from_langchain(
    messages: Sequence[Any], *, thread_id: str | None = None, pin_task: bool = True
) -> tuple[MemoryState, ImportReport]:
    """Import LangChain messages (``SystemMessage``, ``HumanMessage``, ``AIMessage``,
    ``ToolMessage``, ``ChatMessage``).

    An ``AIMessage`` becomes an ``assistant`` chunk (when it has text or no
    calls) and a ``tool_call`` per entry of ``tool_calls`` (``pending`` when
    no ``ToolMessage`` answers it); a ``ToolMessage`` the ``tool_result`` of
    its call (``tool_error`` when ``status="error"``). Ids are ``msg<index>``
    (``msg<index>_call<k>`` for calls). Other message types are kept as
    ``CUSTOM`` chunks (kind ``langchain_<type>``) and reported. LangChain's
    standard ``image`` / ``file`` blocks (``base64`` or ``url``) of a
    ``HumanMessage`` or ``ToolMessage`` become image and document chunks
    after its text (ids ``msg<index>_media<k>``; a tool's with its call's
    ``call_id``). The first user message is pinned unless ``pin_task=False``.
    """
    from memctx.adapters._langchain import require_langchain

    check_options(pin_task)
    lc = require_langchain()
    if isinstance(messages, str | bytes) or not isinstance(messages, Sequence):
        raise TranscriptError("expected a list of LangChain messages")
    answered = {
        m.tool_call_id for m in messages if isinstance(m, lc.ToolMessage) and m.tool_call_id
    }
    out: list[Chunk] = []
    names: dict[str, str] = {}
    unknown: list[tuple[int, str]] = []
    for index, message in enumerate(messages):
        if not isinstance(message, lc.BaseMessage):
            raise TranscriptError(
                f"must be a LangChain message, got {type(message).__name__}", index=index
            )
        base = f"msg{index}"
        content, media = _media_blocks(message.content)
        text = block_text(content, index)
        kind = message.type
        if isinstance(message, lc.ChatMessage):
            kind = {"human": "human", "user": "human", "ai": "ai", "assistant": "ai"}.get(
                message.role, message.role
            )
        try:
            if kind == "system":
                out.append(chunks.system(text, id=base))
            elif kind == "human":
                if text or not media:
                    out.append(chunks.user(text, id=base))
                out += _media_chunks(media, base, None)
            elif kind == "ai":
                calls = getattr(message, "tool_calls", None) or []
                if text or not calls:
                    out.append(chunks.assistant(text, id=base))
                for k, call in enumerate(calls):
                    call_id = call.get("id")
                    name = call["name"]
                    if call_id:
                        names[call_id] = name
                    status = "completed" if call_id in answered else "pending"
                    out.append(
                        chunks.tool_call(
                            name,
                            plain_json(call.get("args") or {}),
                            call_id=call_id,
                            status=status,
                            id=f"{base}_call{k}",
                        )
                    )
            elif kind == "tool":
                call_id = message.tool_call_id
                tool = names.get(call_id) or message.name or "unknown"
                if getattr(message, "status", "success") == "error":
                    out.append(chunks.tool_error(tool, text, call_id=call_id, id=base))
                else:
                    out.append(chunks.tool_result(tool, text, call_id=call_id, id=base))
                out += _media_chunks(media, base, call_id)
            else:
                unknown.append((index, kind))
                out.append(chunks.custom(f"langchain_{kind}", text, "user", id=base))
        except (InvalidChunkError, NotJSONError) as exc:
            raise TranscriptError(str(exc), index=index) from None
    unanswered = tuple(call_id for call_id in names if call_id not in answered)
    if pin_task:
        out = first_user_pinned(out)
    return MemoryState(out, thread_id=thread_id), ImportReport(tuple(unknown), unanswered)


def _media_blocks(content: Any) -> tuple[Any, list[Mapping[str, Any]]]:
    """The content without its standard ``image`` / ``file`` blocks, and those blocks."""
    if not isinstance(content, list):
        return content, []
    media = [b for b in content if _is_media(b)]
    return [b for b in content if not _is_media(b)], media


def _is_media(block: object) -> bool:
    return (
        isinstance(block, Mapping)
        and block.get("type") in ("image", "file")
        and ("base64" in block or "url" in block)
    )


def _media_chunks(
    blocks: Sequence[Mapping[str, Any]], base: str, call_id: str | None
) -> list[Chunk]:
    found = []
    for k, block in enumerate(blocks):
        kind = "image" if block["type"] == "image" else "document"
        chunk_id = f"{base}_media{k}"
        if "base64" in block:
            chunk = media_chunk(kind, block["base64"], block.get("mime_type"), chunk_id)
        else:
            chunk = from_url(kind, block["url"], chunk_id)
        if call_id is not None:
            chunk = attrs.evolve(chunk, metadata=attrs.evolve(chunk.metadata, call_id=call_id))
        found.append(chunk)
    return found
