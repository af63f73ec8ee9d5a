"""Renders AGENT chunks: the user's and the assistant's own turns."""

from __future__ import annotations

from memctx import Chunk, ChunkType, Role
from memctx.xml import render_element


class AgentRenderer:
    """``<user_message>``, ``<assistant_response>`` and ``<assistant_clarification>``."""

    def can_render(self, chunk: Chunk) -> bool:
        if chunk.type is not ChunkType.AGENT:
            return False
        if chunk.role == "user":
            return chunk.action is None
        if chunk.role == "assistant":
            return chunk.action in (None, "clarification")
        return False

    def get_role(self, chunk: Chunk) -> Role:
        return "user" if chunk.role == "user" else "assistant"

    def render(self, chunk: Chunk) -> str:
        if chunk.role == "user":
            tag = "user_message"
        elif chunk.action == "clarification":
            tag = "assistant_clarification"
        else:
            tag = "assistant_response"
        attributes = [("id", chunk.id), ("role", chunk.role), ("action", chunk.action)]
        return render_element(tag, attributes, chunk.text)
