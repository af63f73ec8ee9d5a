"""Renders DELEGATION chunks: work handed to sub-agents and back."""

from __future__ import annotations

from memctx import ChunkType, DeclaredRenderer, Element


class DelegationRenderer(DeclaredRenderer):
    """``<spawn_subagent>``, ``<message_to_subagent>`` (assistant); ``<subagent_result>``,
    ``<parent_agent_message>`` (user)."""

    chunk_type = ChunkType.DELEGATION
    elements = {
        "spawn_subagent": Element(
            "spawn_subagent", "assistant", ("id", "subagent_id", "agent_type")
        ),
        "message_to_subagent": Element("message_to_subagent", "assistant", ("id", "subagent_id")),
        "subagent_result": Element("subagent_result", "user", ("id", "subagent_id", "success")),
        "parent_agent_message": Element("parent_agent_message", "user", ("id", "parent_agent_id")),
    }
