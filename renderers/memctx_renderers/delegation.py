"""Renders DELEGATION chunks: work handed to sub-agents and back."""

from __future__ import annotations

from memctx import Chunk, ChunkType, Role
from memctx.xml import render_element

_ROLES: dict[str, Role] = {
    "spawn_subagent": "assistant",
    "message_to_subagent": "assistant",
    "subagent_result": "user",
    "parent_agent_message": "user",
}


class DelegationRenderer:
    """``<spawn_subagent>``, ``<message_to_subagent>`` (assistant); ``<subagent_result>``,
    ``<parent_agent_message>`` (user)."""

    def can_render(self, chunk: Chunk) -> bool:
        return chunk.type is ChunkType.DELEGATION and chunk.action in _ROLES

    def get_role(self, chunk: Chunk) -> Role:
        assert chunk.action is not None
        return _ROLES[chunk.action]

    def render(self, chunk: Chunk) -> str:
        action = chunk.action
        assert action is not None
        meta = chunk.metadata
        attributes: list[tuple[str, str | bool | None]] = [("id", chunk.id)]
        if action == "parent_agent_message":
            attributes.append(("parent_agent_id", meta.parent_agent_id))
        else:
            attributes.append(("subagent_id", meta.subagent_id))
        if action == "spawn_subagent":
            attributes.append(("agent_type", meta.agent_type))
        elif action == "subagent_result":
            attributes.append(("success", meta.success))
        return render_element(action, attributes, chunk.text)
