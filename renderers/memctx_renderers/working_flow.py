"""Renders WORKING_FLOW chunks: progress summaries, todos, thinking, interventions."""

from __future__ import annotations

from memctx import ChunkType, DeclaredRenderer, Element


class WorkingFlowRenderer(DeclaredRenderer):
    """``<progress_summary>``, ``<todo_update>``, ``<thinking>``, ``<redacted_thinking>``
    (no content: the data is opaque) and ``<user_intervention>``."""

    chunk_type = ChunkType.WORKING_FLOW
    key_fields = ("action", "subtype")
    elements = {
        (None, "PROGRESS_SUMMARY"): Element(
            "progress_summary", "user", ("id", "compacted_at", "original_count")
        ),
        ("todo_set", None): Element("todo_update", "assistant", ("id", "action")),
        (None, "THINKING"): Element("thinking", "assistant", ("id", "subtype")),
        (None, "REDACTED_THINKING"): Element(
            "redacted_thinking", "assistant", ("id", "subtype"), content=False
        ),
        (None, "USER"): Element("user_intervention", "user", ("id", "subtype")),
    }
