"""Turns of the conversation and how a task ended."""

from __future__ import annotations

import datetime as _dt
from collections.abc import Mapping
from typing import Any

from memctx._chunk import Chunk, ChunkType, Role
from memctx.chunks._base import check_kind, check_name, check_text, make


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
    return make(
        ChunkType.SYSTEM,
        check_text(text, "text"),
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
    return make(
        ChunkType.AGENT,
        check_text(text, "text"),
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
    return make(
        ChunkType.AGENT,
        check_text(text, "text"),
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
    return make(
        ChunkType.AGENT,
        check_text(text, "text"),
        id=id,
        priority=priority,
        pinned=pinned,
        custom=custom,
        created_at=created_at,
        role="assistant",
        action="clarification",
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
        content["summary"] = check_text(summary, "summary")
    return make(
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
    return make(
        ChunkType.OUTPUT,
        {"partialResult": partial_result},
        id=id,
        priority=priority,
        pinned=pinned,
        custom=custom,
        created_at=created_at,
        action="task_abandoned",
        reason=check_text(reason, "reason"),
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
    return make(
        ChunkType.OUTPUT,
        check_text(text, "text"),
        id=id,
        priority=priority,
        pinned=pinned,
        custom=custom,
        created_at=created_at,
        action="task_terminated",
        terminated_by=check_name(terminated_by, "terminated_by"),
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
    return make(
        ChunkType.CUSTOM,
        content,
        id=id,
        priority=priority,
        pinned=pinned,
        custom=custom,
        created_at=created_at,
        role=role,
        subtype=check_kind(kind, "kind"),
    )
