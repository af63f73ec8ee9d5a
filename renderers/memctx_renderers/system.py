"""Renders SYSTEM chunks: the agent's standing instructions."""

from __future__ import annotations

from memctx import ChunkType, DeclaredRenderer, Element


class SystemRenderer(DeclaredRenderer):
    """``<system_context id=".." priority="..">``; role ``system``."""

    chunk_type = ChunkType.SYSTEM
    key_fields = ()
    elements = {(): Element("system_context", "system", ("id", "priority"))}
