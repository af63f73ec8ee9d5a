"""Renders SYSTEM chunks as ``<system_context>`` in the system message."""

from __future__ import annotations

from memctx import Chunk, ChunkType, Role
from memctx.xml import render_element


class SystemRenderer:
    """``<system_context id=".." priority="..">``; role ``system``."""

    def can_render(self, chunk: Chunk) -> bool:
        return chunk.type is ChunkType.SYSTEM

    def get_role(self, chunk: Chunk) -> Role:
        return "system"

    def render(self, chunk: Chunk) -> str:
        return render_element(
            "system_context", [("id", chunk.id), ("priority", chunk.priority)], chunk.text
        )
