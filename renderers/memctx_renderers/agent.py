"""Renders AGENT chunks: the user's and the assistant's own turns."""

from __future__ import annotations

from memctx import ChunkType, DeclaredRenderer, Element

_ATTRIBUTES = ("id", "role", "action")
_IMAGE = (
    *_ATTRIBUTES,
    "url=content.url",
    "media_type",
    "width",
    "height",
    "bytes=byte_size",
    "detail",
    "call_id",
)
_DOCUMENT = (
    *_ATTRIBUTES,
    "url=content.url",
    "media_type",
    "title",
    "pages",
    "bytes=byte_size",
    "call_id",
)


class AgentRenderer(DeclaredRenderer):
    """``<user_message>``, ``<assistant_response>``, ``<assistant_clarification>``, and the
    short placeholders ``<image>`` and ``<document>`` (no content: never base64 as text)."""

    chunk_type = ChunkType.AGENT
    key_fields = ("role", "action")
    elements = {
        ("user", None): Element("user_message", "user", _ATTRIBUTES),
        ("assistant", None): Element("assistant_response", "assistant", _ATTRIBUTES),
        ("assistant", "clarification"): Element(
            "assistant_clarification", "assistant", _ATTRIBUTES
        ),
        ("user", "image"): Element("image", "user", _IMAGE, content=False),
        ("user", "document"): Element("document", "user", _DOCUMENT, content=False),
    }
