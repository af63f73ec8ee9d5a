"""Renders AGENT chunks: the user's and the assistant's own turns."""

from __future__ import annotations

from memctx import ChunkType, DeclaredRenderer, Element

_ATTRIBUTES = ("id", "role", "action")


class AgentRenderer(DeclaredRenderer):
    """``<user_message>``, ``<assistant_response>`` and ``<assistant_clarification>``."""

    chunk_type = ChunkType.AGENT
    key_fields = ("role", "action")
    elements = {
        ("user", None): Element("user_message", "user", _ATTRIBUTES),
        ("assistant", None): Element("assistant_response", "assistant", _ATTRIBUTES),
        ("assistant", "clarification"): Element(
            "assistant_clarification", "assistant", _ATTRIBUTES
        ),
    }
