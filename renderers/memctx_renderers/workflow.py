"""Renders WORKFLOW chunks: the agent's tool and skill calls."""

from __future__ import annotations

from memctx import Chunk, ChunkType, Role
from memctx.xml import render_element

_NAME_ATTRIBUTE = {"tool_call": "tool", "skill_call": "skill"}


class WorkflowRenderer:
    """``<tool_call>`` and ``<skill_call>``; role ``assistant``."""

    def can_render(self, chunk: Chunk) -> bool:
        return chunk.type is ChunkType.WORKFLOW and chunk.action in _NAME_ATTRIBUTE

    def get_role(self, chunk: Chunk) -> Role:
        return "assistant"

    def render(self, chunk: Chunk) -> str:
        action = chunk.action
        assert action is not None
        name_attribute = _NAME_ATTRIBUTE[action]
        meta = chunk.metadata
        attributes = [
            ("id", chunk.id),
            ("action", action),
            (name_attribute, getattr(meta, name_attribute)),
            ("call_id", meta.call_id),
            ("status", meta.status),
        ]
        return render_element(action, attributes, chunk.text)
