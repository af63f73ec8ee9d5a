"""Renders OUTPUT chunks: how the task ended."""

from __future__ import annotations

from memctx import ChunkType, DeclaredRenderer, Element


class OutputRenderer(DeclaredRenderer):
    """``<task_completed>``, ``<task_abandoned reason="..">`` and
    ``<task_terminated terminated_by="..">``."""

    chunk_type = ChunkType.OUTPUT
    elements = {
        "task_completed": Element("task_completed", "assistant"),
        "task_abandoned": Element("task_abandoned", "assistant", ("id", "reason")),
        "task_terminated": Element("task_terminated", "user", ("id", "terminated_by")),
    }
