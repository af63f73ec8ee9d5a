"""Renders ENVIRONMENT chunks: what tools and skills gave back."""

from __future__ import annotations

from memctx import Chunk, ChunkType, Role
from memctx.xml import render_element

_NAME_ATTRIBUTE = {"tool_result": "tool", "skill_result": "skill"}


class EnvironmentRenderer:
    """``<tool_result>`` (``error="true"`` for a tool error) and ``<skill_result>``; role user."""

    def can_render(self, chunk: Chunk) -> bool:
        return chunk.type is ChunkType.ENVIRONMENT and chunk.action in _NAME_ATTRIBUTE

    def get_role(self, chunk: Chunk) -> Role:
        return "user"

    def render(self, chunk: Chunk) -> str:
        action = chunk.action
        assert action is not None
        name_attribute = _NAME_ATTRIBUTE[action]
        meta = chunk.metadata
        attributes = [
            ("id", chunk.id),
            (name_attribute, getattr(meta, name_attribute)),
            ("call_id", meta.call_id),
            ("success", meta.success),
            ("error", True if meta.error else None),
        ]
        return render_element(action, attributes, chunk.text)
