"""Tool and skill calls and their results, and delegation to sub-agents."""

from __future__ import annotations

import datetime as _dt
from collections.abc import Mapping
from typing import Any

from memctx._chunk import Chunk, ChunkType
from memctx.chunks._base import check_flag, check_name, check_text, make


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
    return make(
        ChunkType.WORKFLOW,
        arguments,
        id=id,
        priority=priority,
        pinned=pinned,
        custom=custom,
        created_at=created_at,
        action="tool_call",
        tool=check_name(tool, "tool"),
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
    return make(
        ChunkType.WORKFLOW,
        arguments,
        id=id,
        priority=priority,
        pinned=pinned,
        custom=custom,
        created_at=created_at,
        action="skill_call",
        skill=check_name(skill, "skill"),
        call_id=call_id,
        status=status,
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
    return make(
        ChunkType.ENVIRONMENT,
        output,
        id=id,
        priority=priority,
        pinned=pinned,
        custom=custom,
        created_at=created_at,
        action="tool_result",
        tool=check_name(tool, "tool"),
        call_id=call_id,
        success=check_flag(success, "success"),
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
    return make(
        ChunkType.ENVIRONMENT,
        check_text(error, "error"),
        id=id,
        priority=priority,
        pinned=pinned,
        custom=custom,
        created_at=created_at,
        action="tool_result",
        tool=check_name(tool, "tool"),
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
    return make(
        ChunkType.ENVIRONMENT,
        output,
        id=id,
        priority=priority,
        pinned=pinned,
        custom=custom,
        created_at=created_at,
        action="skill_result",
        skill=check_name(skill, "skill"),
        call_id=call_id,
        success=check_flag(success, "success"),
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
    return make(
        ChunkType.DELEGATION,
        {"task": task},
        id=id,
        priority=priority,
        pinned=pinned,
        custom=custom,
        created_at=created_at,
        action="spawn_subagent",
        subagent_id=check_name(subagent_id, "subagent_id"),
        agent_type=check_name(agent_type, "agent_type"),
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
    return make(
        ChunkType.DELEGATION,
        check_text(text, "text"),
        id=id,
        priority=priority,
        pinned=pinned,
        custom=custom,
        created_at=created_at,
        action="message_to_subagent",
        subagent_id=check_name(subagent_id, "subagent_id"),
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
    return make(
        ChunkType.DELEGATION,
        result,
        id=id,
        priority=priority,
        pinned=pinned,
        custom=custom,
        created_at=created_at,
        action="subagent_result",
        subagent_id=check_name(subagent_id, "subagent_id"),
        success=check_flag(success, "success"),
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
    return make(
        ChunkType.DELEGATION,
        check_text(text, "text"),
        id=id,
        priority=priority,
        pinned=pinned,
        custom=custom,
        created_at=created_at,
        action="parent_agent_message",
        parent_agent_id=check_name(parent_agent_id, "parent_agent_id"),
    )
