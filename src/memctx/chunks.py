"""Constructors for every kind of chunk memctx renders.

Each returns a :class:`~memctx.Chunk`. All accept these keyword-only options:

``id``
    The chunk's id; a fresh ``chunk_<hex>`` when omitted.
``priority``
    Used by the ``priority`` budget strategy (higher is kept first).
``pinned``
    Always kept by budget trimming (a build fails rather than drop it).
``custom``
    A free JSON object stored in ``metadata.custom`` for your own use.
``created_at``
    A timezone-aware datetime; now (UTC) when omitted.
"""

from __future__ import annotations

import datetime as _dt
from collections.abc import Mapping, Sequence
from typing import Any

from memctx._chunk import Chunk, ChunkMetadata, ChunkType, Role, new_chunk_id
from memctx._exceptions import InvalidChunkError
from memctx._render import media as _media
from memctx._validators import MAX_KIND_LENGTH, int_in_range, is_bool, is_str, non_empty_str

__all__ = [
    "assistant",
    "clarification",
    "custom",
    "document",
    "image",
    "message_to_subagent",
    "parent_agent_message",
    "progress_summary",
    "redacted_thinking",
    "skill_call",
    "skill_result",
    "spawn_subagent",
    "subagent_result",
    "system",
    "task_abandoned",
    "task_completed",
    "task_terminated",
    "thinking",
    "todo_update",
    "tool_call",
    "tool_error",
    "tool_result",
    "user",
    "user_intervention",
]


_text = is_str(InvalidChunkError).check
_name = non_empty_str(InvalidChunkError).check
"""A required name (tool, skill, sub-agent id, ...): a non-empty string."""
_flag = is_bool(InvalidChunkError).check
_kind = non_empty_str(InvalidChunkError, max_length=MAX_KIND_LENGTH).check


_EPOCH = _dt.datetime(1970, 1, 1, tzinfo=_dt.UTC)


def _make(
    type_: ChunkType,
    content: Any,
    *,
    id: str | None,
    priority: int,
    pinned: bool,
    custom: Mapping[str, Any] | None,
    created_at: _dt.datetime | None,
    role: Role | None = None,
    action: str | None = None,
    subtype: str | None = None,
    **metadata: Any,
) -> Chunk:
    meta = ChunkMetadata(pinned=pinned, custom=custom, **metadata)
    kwargs: dict[str, Any] = {}
    if created_at is not None:
        kwargs["created_at"] = created_at
    return Chunk(
        type=type_,
        content=content,
        id=new_chunk_id() if id is None else id,
        role=role,
        action=action,
        subtype=subtype,
        metadata=meta,
        priority=priority,
        **kwargs,
    )


def system(
    text: str,
    priority: int = 1000,
    *,
    id: str | None = None,
    pinned: bool = False,
    custom: Mapping[str, Any] | None = None,
    created_at: _dt.datetime | None = None,
) -> Chunk:
    """System context: ``<system_context>``, always in the leading system message."""
    return _make(
        ChunkType.SYSTEM,
        _text(text, "text"),
        id=id,
        priority=priority,
        pinned=pinned,
        custom=custom,
        created_at=created_at,
    )


def user(
    text: str,
    *,
    id: str | None = None,
    priority: int = 0,
    pinned: bool = False,
    custom: Mapping[str, Any] | None = None,
    created_at: _dt.datetime | None = None,
) -> Chunk:
    """A user turn: ``<user_message role="user">``."""
    return _make(
        ChunkType.AGENT,
        _text(text, "text"),
        id=id,
        priority=priority,
        pinned=pinned,
        custom=custom,
        created_at=created_at,
        role="user",
    )


def assistant(
    text: str,
    *,
    id: str | None = None,
    priority: int = 0,
    pinned: bool = False,
    custom: Mapping[str, Any] | None = None,
    created_at: _dt.datetime | None = None,
) -> Chunk:
    """An assistant turn: ``<assistant_response role="assistant">``."""
    return _make(
        ChunkType.AGENT,
        _text(text, "text"),
        id=id,
        priority=priority,
        pinned=pinned,
        custom=custom,
        created_at=created_at,
        role="assistant",
    )


def clarification(
    text: str,
    *,
    id: str | None = None,
    priority: int = 0,
    pinned: bool = False,
    custom: Mapping[str, Any] | None = None,
    created_at: _dt.datetime | None = None,
) -> Chunk:
    """A question the assistant asks back: ``<assistant_clarification action="clarification">``."""
    return _make(
        ChunkType.AGENT,
        _text(text, "text"),
        id=id,
        priority=priority,
        pinned=pinned,
        custom=custom,
        created_at=created_at,
        role="assistant",
        action="clarification",
    )


def tool_call(
    tool: str,
    arguments: Any,
    call_id: str | None = None,
    status: str = "pending",
    *,
    id: str | None = None,
    priority: int = 0,
    pinned: bool = False,
    custom: Mapping[str, Any] | None = None,
    created_at: _dt.datetime | None = None,
) -> Chunk:
    """A tool call; ``arguments`` (any JSON value) is the content."""
    return _make(
        ChunkType.WORKFLOW,
        arguments,
        id=id,
        priority=priority,
        pinned=pinned,
        custom=custom,
        created_at=created_at,
        action="tool_call",
        tool=_name(tool, "tool"),
        call_id=call_id,
        status=status,
    )


def skill_call(
    skill: str,
    arguments: Any,
    call_id: str | None = None,
    status: str = "pending",
    *,
    id: str | None = None,
    priority: int = 0,
    pinned: bool = False,
    custom: Mapping[str, Any] | None = None,
    created_at: _dt.datetime | None = None,
) -> Chunk:
    """A skill call; ``arguments`` (any JSON value) is the content."""
    return _make(
        ChunkType.WORKFLOW,
        arguments,
        id=id,
        priority=priority,
        pinned=pinned,
        custom=custom,
        created_at=created_at,
        action="skill_call",
        skill=_name(skill, "skill"),
        call_id=call_id,
        status=status,
    )


def spawn_subagent(
    subagent_id: str,
    agent_type: str,
    task: Any,
    *,
    id: str | None = None,
    priority: int = 0,
    pinned: bool = False,
    custom: Mapping[str, Any] | None = None,
    created_at: _dt.datetime | None = None,
) -> Chunk:
    """Delegation of ``task`` to a new sub-agent; content ``{"task": task}``."""
    return _make(
        ChunkType.DELEGATION,
        {"task": task},
        id=id,
        priority=priority,
        pinned=pinned,
        custom=custom,
        created_at=created_at,
        action="spawn_subagent",
        subagent_id=_name(subagent_id, "subagent_id"),
        agent_type=_name(agent_type, "agent_type"),
    )


def message_to_subagent(
    subagent_id: str,
    text: str,
    *,
    id: str | None = None,
    priority: int = 0,
    pinned: bool = False,
    custom: Mapping[str, Any] | None = None,
    created_at: _dt.datetime | None = None,
) -> Chunk:
    """A further message to a running sub-agent."""
    return _make(
        ChunkType.DELEGATION,
        _text(text, "text"),
        id=id,
        priority=priority,
        pinned=pinned,
        custom=custom,
        created_at=created_at,
        action="message_to_subagent",
        subagent_id=_name(subagent_id, "subagent_id"),
    )


def subagent_result(
    subagent_id: str,
    result: Any,
    success: bool = True,
    *,
    id: str | None = None,
    priority: int = 0,
    pinned: bool = False,
    custom: Mapping[str, Any] | None = None,
    created_at: _dt.datetime | None = None,
) -> Chunk:
    """What a sub-agent reported back (text or JSON)."""
    return _make(
        ChunkType.DELEGATION,
        result,
        id=id,
        priority=priority,
        pinned=pinned,
        custom=custom,
        created_at=created_at,
        action="subagent_result",
        subagent_id=_name(subagent_id, "subagent_id"),
        success=_flag(success, "success"),
    )


def parent_agent_message(
    parent_agent_id: str,
    text: str,
    *,
    id: str | None = None,
    priority: int = 0,
    pinned: bool = False,
    custom: Mapping[str, Any] | None = None,
    created_at: _dt.datetime | None = None,
) -> Chunk:
    """An instruction from the agent that spawned this one."""
    return _make(
        ChunkType.DELEGATION,
        _text(text, "text"),
        id=id,
        priority=priority,
        pinned=pinned,
        custom=custom,
        created_at=created_at,
        action="parent_agent_message",
        parent_agent_id=_name(parent_agent_id, "parent_agent_id"),
    )


def tool_result(
    tool: str,
    output: Any,
    call_id: str | None = None,
    success: bool = True,
    *,
    id: str | None = None,
    priority: int = 0,
    pinned: bool = False,
    custom: Mapping[str, Any] | None = None,
    created_at: _dt.datetime | None = None,
) -> Chunk:
    """What a tool returned (text or JSON)."""
    return _make(
        ChunkType.ENVIRONMENT,
        output,
        id=id,
        priority=priority,
        pinned=pinned,
        custom=custom,
        created_at=created_at,
        action="tool_result",
        tool=_name(tool, "tool"),
        call_id=call_id,
        success=_flag(success, "success"),
    )


def tool_error(
    tool: str,
    error: str,
    call_id: str | None = None,
    *,
    id: str | None = None,
    priority: int = 0,
    pinned: bool = False,
    custom: Mapping[str, Any] | None = None,
    created_at: _dt.datetime | None = None,
) -> Chunk:
    """A failed tool call: ``<tool_result success="false" error="true">``."""
    return _make(
        ChunkType.ENVIRONMENT,
        _text(error, "error"),
        id=id,
        priority=priority,
        pinned=pinned,
        custom=custom,
        created_at=created_at,
        action="tool_result",
        tool=_name(tool, "tool"),
        call_id=call_id,
        success=False,
        error=True,
    )


def skill_result(
    skill: str,
    output: Any,
    call_id: str | None = None,
    success: bool = True,
    *,
    id: str | None = None,
    priority: int = 0,
    pinned: bool = False,
    custom: Mapping[str, Any] | None = None,
    created_at: _dt.datetime | None = None,
) -> Chunk:
    """What a skill returned (text or JSON)."""
    return _make(
        ChunkType.ENVIRONMENT,
        output,
        id=id,
        priority=priority,
        pinned=pinned,
        custom=custom,
        created_at=created_at,
        action="skill_result",
        skill=_name(skill, "skill"),
        call_id=call_id,
        success=_flag(success, "success"),
    )


def progress_summary(
    text: str,
    original_count: int | None = None,
    compacted_at: int | _dt.datetime | None = None,
    *,
    id: str | None = None,
    priority: int = 0,
    pinned: bool = False,
    custom: Mapping[str, Any] | None = None,
    created_at: _dt.datetime | None = None,
) -> Chunk:
    """A compacted summary of earlier progress.

    ``original_count`` is how many chunks it replaces; ``compacted_at`` when
    (epoch milliseconds, or an aware datetime converted to them).
    """
    if isinstance(compacted_at, _dt.datetime):
        if compacted_at.tzinfo is None:
            raise InvalidChunkError("compacted_at", "datetime must be timezone-aware")
        compacted_at = (compacted_at - _EPOCH) // _dt.timedelta(milliseconds=1)
    return _make(
        ChunkType.WORKING_FLOW,
        _text(text, "text"),
        id=id,
        priority=priority,
        pinned=pinned,
        custom=custom,
        created_at=created_at,
        subtype="PROGRESS_SUMMARY",
        original_count=original_count,
        compacted_at=compacted_at,
    )


def todo_update(
    todos: Sequence[Any],
    *,
    id: str | None = None,
    priority: int = 0,
    pinned: bool = False,
    custom: Mapping[str, Any] | None = None,
    created_at: _dt.datetime | None = None,
) -> Chunk:
    """The agent's whole todo list, replaced: content ``{"todos": [...]}``."""
    if isinstance(todos, str | bytes) or not isinstance(todos, Sequence):
        raise InvalidChunkError("todos", f"must be a list, got {type(todos).__name__}")
    return _make(
        ChunkType.WORKING_FLOW,
        {"todos": list(todos)},
        id=id,
        priority=priority,
        pinned=pinned,
        custom=custom,
        created_at=created_at,
        action="todo_set",
    )


def thinking(
    text: str,
    signature: str | None = None,
    *,
    reasoning_id: str | None = None,
    id: str | None = None,
    priority: int = 0,
    pinned: bool = False,
    custom: Mapping[str, Any] | None = None,
    created_at: _dt.datetime | None = None,
) -> Chunk:
    """The agent's reasoning: ``<thinking subtype="THINKING">``.

    ``signature`` is the provider's proof that it wrote this reasoning:
    Anthropic's thinking ``signature``, or (with ``reasoning_id``, the id
    of an OpenAI reasoning item) the item's ``encrypted_content``. Both are
    sent back untouched by the adapters that take them (``to_anthropic``,
    ``to_responses``) and are never shown in the XML.
    """
    return _make(
        ChunkType.WORKING_FLOW,
        _text(text, "text"),
        id=id,
        priority=priority,
        pinned=pinned,
        custom=custom,
        created_at=created_at,
        subtype="THINKING",
        signature=signature,
        reasoning_id=reasoning_id,
    )


def redacted_thinking(
    data: str,
    *,
    id: str | None = None,
    priority: int = 0,
    pinned: bool = False,
    custom: Mapping[str, Any] | None = None,
    created_at: _dt.datetime | None = None,
) -> Chunk:
    """Reasoning the provider encrypted (Anthropic's ``redacted_thinking``): ``data`` is kept
    as the content and sent back as it came; the XML shows only
    ``<redacted_thinking subtype="REDACTED_THINKING">`` with no content."""
    return _make(
        ChunkType.WORKING_FLOW,
        _name(data, "data"),
        id=id,
        priority=priority,
        pinned=pinned,
        custom=custom,
        created_at=created_at,
        subtype="REDACTED_THINKING",
    )


def image(
    data: bytes | None = None,
    url: str | None = None,
    media_type: str | None = None,
    detail: str | None = None,
    *,
    width: int | None = None,
    height: int | None = None,
    call_id: str | None = None,
    id: str | None = None,
    priority: int = 0,
    pinned: bool = False,
    custom: Mapping[str, Any] | None = None,
    created_at: _dt.datetime | None = None,
) -> Chunk:
    """An image in a user turn: ``data`` (bytes) or ``url`` (http or https).

    Data is checked and measured once, here (Pillow, the ``memctx[images]``
    extra): it must be a PNG, JPEG, GIF or WebP image, of ``media_type``
    when one is given. The content is ``{"data": "<base64>"}`` (or
    ``{"url": ...}``); the metadata holds ``media_type``, ``width``,
    ``height`` and ``byte_size``. For a URL, ``media_type`` is guessed from
    the path when not given, and ``width`` / ``height`` may be given (else
    the image is priced at the provider's largest cost). ``detail`` is
    OpenAI's (``"auto"``, ``"low"``, ``"high"``). The XML is a short
    ``<image .../>``-like element with no content: no base64 is ever sent
    as text. ``call_id``: the image belongs to the result of that tool
    call (a screenshot a tool returned); placed right after the result, it
    is sent inside it where the provider allows (see
    ``docs/providers-fidelity.md``).
    """
    _media.check_one_source(data, url)
    if detail is not None and detail not in _media.DETAILS:
        raise InvalidChunkError(
            "detail", f"must be one of {', '.join(_media.DETAILS)}, got {detail!r}"
        )
    if data is not None:
        if width is not None or height is not None:
            raise InvalidChunkError("width", "is read from the data; give it only with url=")
        found = _media.inspect_image(data, media_type)
    else:
        found = _media.inspect_image_url(url, media_type, width, height)
    return _media_chunk(
        "image", found, id, priority, pinned, custom, created_at, detail=detail, call_id=call_id
    )


def document(
    data: bytes | None = None,
    url: str | None = None,
    media_type: str = "application/pdf",
    title: str | None = None,
    *,
    pages: int | None = None,
    call_id: str | None = None,
    id: str | None = None,
    priority: int = 0,
    pinned: bool = False,
    custom: Mapping[str, Any] | None = None,
    created_at: _dt.datetime | None = None,
) -> Chunk:
    """A PDF document in a user turn: ``data`` (bytes) or ``url`` (http or https).

    Data must be a PDF; its pages are counted here (for the token cost). A
    URL's ``pages`` may be given (else one page is assumed). ``title`` is
    sent where the provider takes one (Anthropic's document title, OpenAI's
    file name). Content, XML and ``call_id`` as for :func:`image`.
    """
    _media.check_one_source(data, url)
    if data is not None:
        if pages is not None:
            raise InvalidChunkError("pages", "is read from the data; give it only with url=")
        found = _media.inspect_document(data, media_type)
    else:
        if pages is not None:
            int_in_range(InvalidChunkError, 1).check(pages, "pages")
        found = _media.inspect_document_url(url, media_type, pages)
    if title is not None:
        _name(title, "title")
    return _media_chunk(
        "document", found, id, priority, pinned, custom, created_at, title=title, call_id=call_id
    )


def _media_chunk(
    action: str,
    found: _media.Media,
    id: str | None,
    priority: int,
    pinned: bool,
    custom: Mapping[str, Any] | None,
    created_at: _dt.datetime | None,
    **extra: Any,
) -> Chunk:
    return _make(
        ChunkType.AGENT,
        found.content,
        id=id,
        priority=priority,
        pinned=pinned,
        custom=custom,
        created_at=created_at,
        role="user",
        action=action,
        media_type=found.media_type,
        byte_size=found.byte_size,
        width=found.width,
        height=found.height,
        pages=found.pages,
        **extra,
    )


def user_intervention(
    text: str,
    *,
    id: str | None = None,
    priority: int = 0,
    pinned: bool = False,
    custom: Mapping[str, Any] | None = None,
    created_at: _dt.datetime | None = None,
) -> Chunk:
    """The user stepping in mid-task: ``<user_intervention subtype="USER">``."""
    return _make(
        ChunkType.WORKING_FLOW,
        _text(text, "text"),
        id=id,
        priority=priority,
        pinned=pinned,
        custom=custom,
        created_at=created_at,
        subtype="USER",
    )


def task_completed(
    result: Any,
    summary: str | None = None,
    *,
    id: str | None = None,
    priority: int = 0,
    pinned: bool = False,
    custom: Mapping[str, Any] | None = None,
    created_at: _dt.datetime | None = None,
) -> Chunk:
    """The task is done: content ``{"result": .., "summary": ..}`` (summary only when given)."""
    content: dict[str, Any] = {"result": result}
    if summary is not None:
        content["summary"] = _text(summary, "summary")
    return _make(
        ChunkType.OUTPUT,
        content,
        id=id,
        priority=priority,
        pinned=pinned,
        custom=custom,
        created_at=created_at,
        action="task_completed",
    )


def task_abandoned(
    reason: str,
    partial_result: Any = None,
    *,
    id: str | None = None,
    priority: int = 0,
    pinned: bool = False,
    custom: Mapping[str, Any] | None = None,
    created_at: _dt.datetime | None = None,
) -> Chunk:
    """The agent gave up: ``reason`` as an attribute, content ``{"partialResult": ..}``."""
    return _make(
        ChunkType.OUTPUT,
        {"partialResult": partial_result},
        id=id,
        priority=priority,
        pinned=pinned,
        custom=custom,
        created_at=created_at,
        action="task_abandoned",
        reason=_text(reason, "reason"),
    )


def task_terminated(
    terminated_by: str,
    text: str,
    *,
    id: str | None = None,
    priority: int = 0,
    pinned: bool = False,
    custom: Mapping[str, Any] | None = None,
    created_at: _dt.datetime | None = None,
) -> Chunk:
    """Someone (``terminated_by``) stopped the task."""
    return _make(
        ChunkType.OUTPUT,
        _text(text, "text"),
        id=id,
        priority=priority,
        pinned=pinned,
        custom=custom,
        created_at=created_at,
        action="task_terminated",
        terminated_by=_name(terminated_by, "terminated_by"),
    )


def custom(
    kind: str,
    content: Any,
    role: Role = "user",
    *,
    id: str | None = None,
    priority: int = 0,
    pinned: bool = False,
    custom: Mapping[str, Any] | None = None,
    created_at: _dt.datetime | None = None,
) -> Chunk:
    """A chunk of a kind of your own (``type=CUSTOM``, ``subtype=kind``).

    Register a renderer that claims ``chunk.subtype == kind``; without one the
    generic fallback renders it as ``<memory_chunk type="CUSTOM" subtype=kind>``.
    """
    return _make(
        ChunkType.CUSTOM,
        content,
        id=id,
        priority=priority,
        pinned=pinned,
        custom=custom,
        created_at=created_at,
        role=role,
        subtype=_kind(kind, "kind"),
    )
