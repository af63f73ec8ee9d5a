"""The working flow: progress summaries, todos, thinking, user interventions."""

from __future__ import annotations

import datetime as _dt
from collections.abc import Mapping, Sequence
from typing import Any

from memctx._chunk import Chunk, ChunkType
from memctx._exceptions import InvalidChunkError
from memctx.chunks._base import EPOCH, check_name, check_text, make


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
        compacted_at = (compacted_at - EPOCH) // _dt.timedelta(milliseconds=1)
    return make(
        ChunkType.WORKING_FLOW,
        check_text(text, "text"),
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
    return make(
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
    return make(
        ChunkType.WORKING_FLOW,
        check_text(text, "text"),
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
    return make(
        ChunkType.WORKING_FLOW,
        check_name(data, "data"),
        id=id,
        priority=priority,
        pinned=pinned,
        custom=custom,
        created_at=created_at,
        subtype="REDACTED_THINKING",
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
    return make(
        ChunkType.WORKING_FLOW,
        check_text(text, "text"),
        id=id,
        priority=priority,
        pinned=pinned,
        custom=custom,
        created_at=created_at,
        subtype="USER",
    )
