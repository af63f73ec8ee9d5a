"""Importing LangChain message objects (``langchain-core``, the ``memctx[langchain]`` extra)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from memctx import chunks
from memctx._chunk import Chunk
from memctx._exceptions import InvalidChunkError, TranscriptError
from memctx._json import NotJSONError, plain_json
from memctx._state import MemoryState
from memctx.importers._anthropic import block_text
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
    ``CUSTOM`` chunks (kind ``langchain_<type>``) and reported. The first
    user message is pinned unless ``pin_task=False``.
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
        text = block_text(message.content, index)
        kind = message.type
        if isinstance(message, lc.ChatMessage):
            kind = {"human": "human", "user": "human", "ai": "ai", "assistant": "ai"}.get(
                message.role, message.role
            )
        try:
            if kind == "system":
                out.append(chunks.system(text, id=base))
            elif kind == "human":
                out.append(chunks.user(text, id=base))
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
            else:
                unknown.append((index, kind))
                out.append(chunks.custom(f"langchain_{kind}", text, "user", id=base))
        except (InvalidChunkError, NotJSONError) as exc:
            raise TranscriptError(str(exc), index=index) from None
    unanswered = tuple(call_id for call_id in names if call_id not in answered)
    if pin_task:
        out = first_user_pinned(out)
    return MemoryState(out, thread_id=thread_id), ImportReport(tuple(unknown), unanswered)
