"""Importers: other formats in, memctx chunks out.

:func:`import_openai_messages` reads an OpenAI chat-completions transcript
(``system``/``user``/``assistant`` with ``tool_calls``, ``tool``; the legacy
``function`` role too) and returns a :class:`~memctx.MemoryState`. Messages
with a role it does not know are never dropped silently: by default they are
kept as ``CUSTOM`` chunks (kind ``openai_<role>``) and listed in the report;
with ``unknown_roles="error"`` they raise :class:`~memctx.TranscriptError`.
:func:`load_anthropic_messages` reads Anthropic Messages API conversations,
:func:`load_responses_items` the ``input`` (or ``output``) items of the OpenAI
Responses API, and :func:`from_langchain` LangChain message objects.

Images and PDFs (OpenAI ``image_url`` / ``file`` parts, Responses
``input_image`` / ``input_file``, Anthropic ``image`` / ``document`` blocks)
become image and document chunks (data given inline needs Pillow, the
``memctx[images]`` extra); reasoning keeps what proves its origin: Anthropic
``thinking`` blocks their ``signature``, ``redacted_thinking`` its data,
Responses ``reasoning`` items their ``id`` and ``encrypted_content``.

Every importer pins the first user message (``pin_task=True``): it is the
task, and a budgeted build then keeps it, so the window never opens on an
assistant turn only because the task was trimmed. A tool call is imported
with ``status="completed"`` when a result answers it and ``"pending"`` when
none does (a build keeps pending calls, and the report lists their ids).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any, Final, Literal

from memctx import chunks
from memctx._chunk import Chunk
from memctx._exceptions import InvalidChunkError, TranscriptError
from memctx._json import JSONTextError, NotJSONError, dumps, freeze_json, parse_json_text
from memctx._progress import Progress
from memctx._state import MemoryState
from memctx._validators import describe
from memctx.importers._anthropic import load_anthropic_messages
from memctx.importers._langchain import from_langchain
from memctx.importers._media import media_part
from memctx.importers._report import ImportReport, check_options, first_user_pinned
from memctx.importers._responses import load_responses_items

__all__ = [
    "ImportReport",
    "from_langchain",
    "import_openai_messages",
    "load_anthropic_messages",
    "load_openai_transcript",
    "load_responses_items",
]


def _content_text(content: Any, index: int) -> str:
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):  # content parts
        texts = []
        for position, part in enumerate(content):
            if isinstance(part, Mapping) and part.get("type") == "text":
                text = part.get("text", "")
                if not isinstance(text, str):
                    raise TranscriptError(
                        f"content[{position}].text must be a string, got {describe(text)}",
                        index=index,
                    )
                texts.append(text)
            else:
                try:
                    texts.append(dumps(freeze_json(part, f"content[{position}]")))
                except NotJSONError as exc:
                    raise TranscriptError(str(exc), index=index) from None
        return "\n".join(texts)
    raise TranscriptError(
        f"content must be a string, a list of parts or null, got {describe(content)}",
        index=index,
    )


_MEDIA_PARTS: Final = ("image_url", "file", "input_image", "input_file")


def _user_chunks(content: Any, base: str, index: int) -> list[Chunk]:
    """A user message's chunks: its text, and an image or document chunk per media part
    (``image_url`` / ``file``), in order."""
    if not isinstance(content, list) or not any(
        isinstance(p, Mapping) and p.get("type") in _MEDIA_PARTS for p in content
    ):
        return [chunks.user(_content_text(content, index), id=base)]
    out: list[Chunk] = []
    run: list[Any] = []

    def flush(position: int) -> None:
        if run:
            chunk_id = base if not out else f"{base}_part{position}"
            out.append(chunks.user(_content_text(run, index), id=chunk_id))
            run.clear()

    for position, part in enumerate(content):
        kind = part.get("type") if isinstance(part, Mapping) else None
        if kind not in _MEDIA_PARTS:
            run.append(part)
            continue
        flush(position)
        out.append(media_part(part, f"{base}_part{position}"))
    flush(len(content))
    return out


def _arguments(raw: Any) -> Any:
    """Arguments given as JSON text, parsed; text that is not JSON (or is JSON beyond the
    limits of a chunk's content) is kept as the text it is."""
    if isinstance(raw, str):
        try:
            return freeze_json(parse_json_text(raw), "arguments")
        except (JSONTextError, NotJSONError):
            return raw
    return raw


def _name(message: Mapping[str, Any], index: int) -> str:
    """The message's ``name``, ``unknown`` when it has none."""
    name = message.get("name") or "unknown"
    if not isinstance(name, str):
        raise TranscriptError(f"'name' must be a string, got {describe(name)}", index=index)
    return name


def import_openai_messages(
    messages: Sequence[Mapping[str, Any]],
    *,
    thread_id: str | None = None,
    unknown_roles: Literal["keep", "error"] = "keep",
    pin_task: bool = True,
    on_progress: Callable[[int, int], object] | None = None,
) -> tuple[MemoryState, ImportReport]:
    """Convert chat-completions messages to a state, with a report of what was unusual.

    Tool calls keep their ids as ``call_id``; a ``tool`` message becomes the
    ``tool_result`` of the call it answers (its tool name looked up from the
    call); a call no ``tool`` message answers is ``pending``. Chunk ids are
    ``msg<index>`` (``msg<index>_call<k>`` for calls) so that re-importing
    the same transcript gives the same ids. The first user message is
    pinned unless ``pin_task=False``. ``on_progress(done, total)`` is told
    as the messages are converted (about a hundred times, the last with
    ``done == total``).
    """
    check_options(pin_task, unknown_roles)
    if not isinstance(messages, Sequence) or isinstance(messages, str | bytes):
        raise TranscriptError("a transcript must be a list of messages")
    progress = Progress(on_progress)
    progress.start(len(messages))
    answered_ids = {
        m.get("tool_call_id")
        for m in messages
        if isinstance(m, Mapping) and m.get("role") == "tool"
    }
    result: list[Chunk] = []
    tool_names: dict[str, str] = {}
    answered: set[str] = set()
    unknown: list[tuple[int, str]] = []
    for index, message in enumerate(progress.over(messages)):
        if not isinstance(message, Mapping):
            raise TranscriptError(f"must be an object, got {type(message).__name__}", index=index)
        role = message.get("role")
        if not isinstance(role, str):
            raise TranscriptError("missing string 'role'", index=index)
        text = _content_text(message.get("content"), index)
        base = f"msg{index}"
        try:
            if role in ("system", "developer"):
                result.append(chunks.system(text, id=base))
            elif role == "user":
                result += _user_chunks(message.get("content"), base, index)
            elif role == "assistant":
                calls = message.get("tool_calls") or []
                if not isinstance(calls, list):
                    raise TranscriptError("'tool_calls' must be a list", index=index)
                if text or not calls:
                    result.append(chunks.assistant(text, id=base))
                for k, call in enumerate(calls):
                    chunk = _tool_call(call, f"{base}_call{k}", index, tool_names, answered_ids)
                    result.append(chunk)
            elif role == "tool":
                call_id = message.get("tool_call_id")
                if not isinstance(call_id, str) or not call_id:
                    raise TranscriptError("a 'tool' message needs a 'tool_call_id'", index=index)
                tool = tool_names.get(call_id) or _name(message, index)
                answered.add(call_id)
                result.append(chunks.tool_result(tool, text, call_id=call_id, id=base))
            elif role == "function":
                result.append(chunks.tool_result(_name(message, index), text, id=base))
            else:
                if unknown_roles == "error":
                    raise TranscriptError(f"unknown role {role!r}", index=index)
                unknown.append((index, role))
                result.append(chunks.custom(f"openai_{role}", text, "user", id=base))
        except InvalidChunkError as exc:
            raise TranscriptError(str(exc), index=index) from None
    unanswered = tuple(call_id for call_id in tool_names if call_id not in answered)
    if pin_task:
        result = first_user_pinned(result)
    state = MemoryState(result, thread_id=thread_id)
    progress.finish()
    return state, ImportReport(tuple(unknown), unanswered)


def _tool_call(
    call: Any, chunk_id: str, index: int, tool_names: dict[str, str], answered: set[Any]
) -> Chunk:
    if not isinstance(call, Mapping):
        raise TranscriptError("each tool call must be an object", index=index)
    function = call.get("function")
    if not isinstance(function, Mapping) or not isinstance(function.get("name"), str):
        raise TranscriptError("a tool call needs 'function.name'", index=index)
    call_id = call.get("id")
    if not isinstance(call_id, str) or not call_id:
        raise TranscriptError("a tool call needs an 'id'", index=index)
    tool_names[call_id] = function["name"]
    return chunks.tool_call(
        function["name"],
        _arguments(function.get("arguments")),
        call_id=call_id,
        status="completed" if call_id in answered else "pending",
        id=chunk_id,
    )


def load_openai_transcript(
    data: Any,
    *,
    thread_id: str | None = None,
    unknown_roles: Literal["keep", "error"] = "keep",
    pin_task: bool = True,
    on_progress: Callable[[int, int], object] | None = None,
) -> tuple[MemoryState, ImportReport]:
    """Import a parsed JSON document: a list of messages, or an object with ``messages``."""
    check_options(pin_task, unknown_roles)
    if isinstance(data, Mapping):
        if "messages" not in data:
            raise TranscriptError("an object transcript needs a 'messages' list")
        data = data["messages"]
    return import_openai_messages(
        data,
        thread_id=thread_id,
        unknown_roles=unknown_roles,
        pin_task=pin_task,
        on_progress=on_progress,
    )
