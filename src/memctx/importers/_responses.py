"""Importing OpenAI Responses API items (a request's ``input``, a response's ``output``)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import attrs

from memctx import chunks
from memctx._chunk import Chunk
from memctx._exceptions import InvalidChunkError, TranscriptError
from memctx._json import JSONTextError, NotJSONError, freeze_json, parse_json_text
from memctx._state import MemoryState
from memctx._validators import describe
from memctx.importers._media import media_part
from memctx.importers._report import ImportReport, check_options, first_user_pinned

_TEXT_PARTS = ("input_text", "output_text", "text", "summary_text")
_MEDIA = ("input_image", "input_file")


def load_responses_items(
    items: Any,
    *,
    thread_id: str | None = None,
    pin_task: bool = True,
) -> tuple[MemoryState, ImportReport]:
    """Convert Responses API items to a state (ids ``item<index>``, ``item<index>_part<k>``).

    Messages (``{"role", "content"}``, with or without ``"type": "message"``)
    become ``system`` (``system`` and ``developer``), ``user`` (with an image
    or document chunk per ``input_image`` / ``input_file`` part) or
    ``assistant`` chunks (their text parts joined by newlines); ``function_call``
    a ``tool_call`` (``call_id`` kept, ``pending`` when no output answers
    it); ``function_call_output`` that call's ``tool_result`` (an output
    list's ``input_image`` / ``input_file`` parts become image and document
    chunks of the call's ``call_id`` after it); ``reasoning`` one
    ``thinking`` chunk per summary part, in order (one empty chunk when the
    summary is empty), each with the item's ``id`` as ``reasoning_id`` and
    its ``encrypted_content`` as ``signature``. The ``id`` of a
    ``function_call``, a ``function_call_output`` and an assistant message
    is kept as ``item_id``. So :func:`~memctx.adapters.to_responses` sends
    the items back as they came (docs/providers-fidelity.md lists what
    changes: message text as its XML, arguments re-serialised, annotations and
    statuses dropped). Items of other types are kept as ``CUSTOM`` chunks
    (kind ``responses_<type>``) and listed in the report's ``unknown_blocks``.
    Accepts a list of items or an object with ``input`` (or ``output``).
    """
    check_options(pin_task)
    if isinstance(items, Mapping):
        items = items.get("input", items.get("output"))
    if not isinstance(items, Sequence) or isinstance(items, str | bytes):
        raise TranscriptError("Responses items must be a list (or an object with 'input')")
    answered = {
        item.get("call_id")
        for item in items
        if isinstance(item, Mapping) and item.get("type") == "function_call_output"
    }
    out: list[Chunk] = []
    names: dict[str, str] = {}
    unknown: list[tuple[int, str]] = []
    for index, item in enumerate(items):
        if not isinstance(item, Mapping):
            raise TranscriptError(f"must be an object, got {type(item).__name__}", index=index)
        kind = item.get("type", "message")
        base = f"item{index}"
        try:
            if kind == "message":
                out += _message(item, base, index)
            elif kind == "function_call":
                out.append(_with_item_id(_call(item, base, index, names, answered), item))
            elif kind == "function_call_output":
                out += _output(item, base, index, names)
            elif kind == "reasoning":
                out += _reasoning(item, base, index)
            else:
                unknown.append((index, str(kind)))
                payload = freeze_json(dict(item), f"input[{index}]")
                out.append(chunks.custom(f"responses_{kind}", payload, "assistant", id=base))
        except (InvalidChunkError, NotJSONError) as exc:
            raise TranscriptError(str(exc), index=index) from None
    unanswered = tuple(call_id for call_id in names if call_id not in answered)
    if pin_task:
        out = first_user_pinned(out)
    return MemoryState(out, thread_id=thread_id), ImportReport((), unanswered, tuple(unknown))


def _text(content: Any, index: int) -> str:
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if not isinstance(content, list):
        raise TranscriptError(
            f"content must be text or parts, got {describe(content)}", index=index
        )
    texts = []
    for part in content:
        if not isinstance(part, Mapping) or part.get("type") not in _TEXT_PARTS:
            raise TranscriptError(f"unexpected content part {describe(part)}", index=index)
        texts.append(str(part.get("text", "")))
    return "\n".join(texts)


def _message(item: Mapping[str, Any], base: str, index: int) -> list[Chunk]:
    role = item.get("role")
    content = item.get("content")
    if role in ("system", "developer"):
        return [chunks.system(_text(content, index), id=base)]
    if role == "assistant":
        return [_with_item_id(chunks.assistant(_text(content, index), id=base), item)]
    if role != "user":
        raise TranscriptError(f"unknown role {role!r}", index=index)
    if not isinstance(content, list):
        return [chunks.user(_text(content, index), id=base)]
    out: list[Chunk] = []
    run: list[Any] = []
    for position, part in enumerate([*content, None]):
        kind = part.get("type") if isinstance(part, Mapping) else None
        if part is not None and kind not in ("input_image", "input_file"):
            run.append(part)
            continue
        if run:
            out.append(
                chunks.user(_text(run, index), id=base if not out else f"{base}_part{position}")
            )
            run = []
        if part is not None:
            out.append(media_part(part, f"{base}_part{position}"))
    return out


def _call(
    item: Mapping[str, Any], base: str, index: int, names: dict[str, str], answered: set[Any]
) -> Chunk:
    call_id, name = item.get("call_id"), item.get("name")
    if not isinstance(call_id, str) or not call_id or not isinstance(name, str) or not name:
        raise TranscriptError("a function_call needs a 'call_id' and a 'name'", index=index)
    names[call_id] = name
    raw = item.get("arguments")
    try:
        arguments = parse_json_text(raw) if isinstance(raw, str) else raw
    except JSONTextError:
        arguments = raw
    status = "completed" if call_id in answered else "pending"
    return chunks.tool_call(name, arguments, call_id=call_id, status=status, id=base)


def _with_item_id(chunk: Chunk, item: Mapping[str, Any]) -> Chunk:
    """The chunk with the item's ``id`` as its ``item_id`` (when it has one)."""
    item_id = item.get("id")
    if item_id is None:
        return chunk
    metadata = attrs.evolve(chunk.metadata, item_id=item_id)
    return attrs.evolve(chunk, metadata=metadata)


def _output(
    item: Mapping[str, Any], base: str, index: int, names: Mapping[str, str]
) -> list[Chunk]:
    call_id = item.get("call_id")
    if not isinstance(call_id, str) or not call_id:
        raise TranscriptError("a function_call_output needs a 'call_id'", index=index)
    output = item.get("output")
    tool = names.get(call_id, "unknown")
    media: list[Chunk] = []
    if isinstance(output, list):
        texts = [p for p in output if not (isinstance(p, Mapping) and p.get("type") in _MEDIA)]
        for position, part in enumerate(output):
            if isinstance(part, Mapping) and part.get("type") in _MEDIA:
                found = media_part(part, f"{base}_part{position}")
                metadata = attrs.evolve(found.metadata, call_id=call_id)
                media.append(attrs.evolve(found, metadata=metadata))
        output = _text(texts, index)
    text = output if isinstance(output, str) else _text(output, index)
    result = chunks.tool_result(tool, text, call_id=call_id, id=base)
    return [_with_item_id(result, item), *media]


def _reasoning(item: Mapping[str, Any], base: str, index: int) -> list[Chunk]:
    reasoning_id = item.get("id")
    if not isinstance(reasoning_id, str) or not reasoning_id:
        raise TranscriptError("a reasoning item needs an 'id'", index=index)
    summary = item.get("summary") or []
    if not isinstance(summary, list):
        raise TranscriptError(f"summary must be a list, got {describe(summary)}", index=index)
    texts = [_text([part], index) for part in summary] or [""]
    signature = item.get("encrypted_content")
    return [
        chunks.thinking(
            text, signature, reasoning_id=reasoning_id, id=base if k == 0 else f"{base}_part{k}"
        )
        for k, text in enumerate(texts)
    ]
