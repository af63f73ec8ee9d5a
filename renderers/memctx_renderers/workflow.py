"""Renders WORKFLOW chunks: the agent's tool and skill calls."""

from __future__ import annotations

from memctx import ChunkType, DeclaredRenderer, Element


class WorkflowRenderer(DeclaredRenderer):
    """``<tool_call>`` and ``<skill_call>``; role ``assistant``."""

    chunk_type = ChunkType.WORKFLOW
    elements = {
        "tool_call": Element(
            "tool_call", "assistant", ("id", "action", "tool", "call_id", "status")
        ),
        "skill_call": Element(
            "skill_call", "assistant", ("id", "action", "skill", "call_id", "status")
        ),
    }
