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

from memctx.chunks._calls import (
    message_to_subagent,
    parent_agent_message,
    skill_call,
    skill_result,
    spawn_subagent,
    subagent_result,
    tool_call,
    tool_error,
    tool_result,
)
from memctx.chunks._media import document, image
from memctx.chunks._messages import (
    assistant,
    clarification,
    custom,
    system,
    task_abandoned,
    task_completed,
    task_terminated,
    user,
)
from memctx.chunks._workflow import (
    progress_summary,
    redacted_thinking,
    thinking,
    todo_update,
    user_intervention,
)

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
