"""Renders ENVIRONMENT chunks: what tools and skills gave back."""

from __future__ import annotations

from memctx import ChunkType, DeclaredRenderer, Element


class EnvironmentRenderer(DeclaredRenderer):
    """``<tool_result>`` (``error="true"`` for a tool error) and ``<skill_result>``; role user."""

    chunk_type = ChunkType.ENVIRONMENT
    elements = {
        "tool_result": Element(
            "tool_result", "user", ("id", "tool", "call_id", "success", "error?")
        ),
        "skill_result": Element(
            "skill_result", "user", ("id", "skill", "call_id", "success", "error?")
        ),
    }
