"""Renders WORKING_FLOW chunks: progress summaries, todos, thinking, interventions."""

from __future__ import annotations

from memctx import Chunk, ChunkType, Role
from memctx.xml import render_element

# (action, subtype) -> (tag, role)
_KINDS: dict[tuple[str | None, str | None], tuple[str, Role]] = {
    (None, "PROGRESS_SUMMARY"): ("progress_summary", "user"),
    ("todo_set", None): ("todo_update", "assistant"),
    (None, "THINKING"): ("thinking", "assistant"),
    (None, "USER"): ("user_intervention", "user"),
}


class WorkingFlowRenderer:
    """``<progress_summary>``, ``<todo_update>``, ``<thinking>`` and ``<user_intervention>``."""

    def can_render(self, chunk: Chunk) -> bool:
        return chunk.type is ChunkType.WORKING_FLOW and (chunk.action, chunk.subtype) in _KINDS

    def get_role(self, chunk: Chunk) -> Role:
        return _KINDS[chunk.action, chunk.subtype][1]

    def render(self, chunk: Chunk) -> str:
        tag = _KINDS[chunk.action, chunk.subtype][0]
        meta = chunk.metadata
        attributes: list[tuple[str, str | int | None]] = [("id", chunk.id)]
        if tag == "progress_summary":
            attributes += [
                ("compacted_at", meta.compacted_at),
                ("original_count", meta.original_count),
            ]
        elif tag == "todo_update":
            attributes.append(("action", chunk.action))
        else:
            attributes.append(("subtype", chunk.subtype))
        return render_element(tag, attributes, chunk.text)
