"""Renders OUTPUT chunks: how the task ended."""

from __future__ import annotations

from memctx import Chunk, ChunkType, Role
from memctx.xml import render_element

_ROLES: dict[str, Role] = {
    "task_completed": "assistant",
    "task_abandoned": "assistant",
    "task_terminated": "user",
}


class OutputRenderer:
    """``<task_completed>``, ``<task_abandoned reason="..">`` and
    ``<task_terminated terminated_by="..">``."""

    def can_render(self, chunk: Chunk) -> bool:
        return chunk.type is ChunkType.OUTPUT and chunk.action in _ROLES

    def get_role(self, chunk: Chunk) -> Role:
        assert chunk.action is not None
        return _ROLES[chunk.action]

    def render(self, chunk: Chunk) -> str:
        action = chunk.action
        assert action is not None
        meta = chunk.metadata
        attributes: list[tuple[str, str | None]] = [("id", chunk.id)]
        if action == "task_abandoned":
            attributes.append(("reason", meta.reason))
        elif action == "task_terminated":
            attributes.append(("terminated_by", meta.terminated_by))
        return render_element(action, attributes, chunk.text)
