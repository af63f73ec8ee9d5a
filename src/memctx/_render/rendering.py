"""A chunk as a build sends it: the registry's rendering in one XML content and attribute
mode, checked.

:class:`XmlRendering` is what a builder renders with, and what the inspector and
snapshots use when they are given no builder.
"""

from __future__ import annotations

from memctx._chunk import Chunk, Role
from memctx._render.registry import RendererRegistry
from memctx._render.segments import SEPARATOR, RenderedChunk
from memctx._render.xml_modes import in_modes
from memctx.xml import (
    DEFAULT_ATTRIBUTE_MODE,
    DEFAULT_CONTENT_MODE,
    SafeXml,
    XmlAttributeMode,
    XmlContentMode,
    count_forbidden,
    sanitize,
)


class XmlRendering:
    """Renders chunks with ``registry`` in the ``content`` and ``attributes`` modes of
    :mod:`memctx.xml`."""

    __slots__ = ("attributes", "content", "registry")

    def __init__(
        self,
        registry: RendererRegistry,
        content: XmlContentMode = DEFAULT_CONTENT_MODE,
        attributes: XmlAttributeMode = DEFAULT_ATTRIBUTE_MODE,
    ) -> None:
        self.registry = registry
        self.content: XmlContentMode = content
        self.attributes: XmlAttributeMode = attributes

    def render_chunk(self, chunk: Chunk) -> RenderedChunk:
        """``chunk``'s role, segment (its XML and a newline) and replaced characters."""
        role, xml = in_modes(self.content, self.attributes, self.registry.render, chunk)
        if type(xml) is SafeXml:
            replaced = xml.replaced
        else:  # a renderer that did not use render_element: check its output
            replaced = count_forbidden(xml)
            if replaced:
                xml = sanitize(xml)
        return RenderedChunk(role, xml + SEPARATOR, replaced)

    def render(self, chunk: Chunk) -> tuple[Role, str]:
        """``(role, xml)`` of ``chunk``, as a build sends it."""
        found = self.render_chunk(chunk)
        return found.role, found.segment[: -len(SEPARATOR)]

    def role(self, chunk: Chunk) -> Role:
        """``chunk``'s role, without rendering it."""
        return self.registry.role(chunk)

    def render_prefix(self, chunk: Chunk, chars: int) -> str | None:
        """The start of ``chunk``'s XML with at most ``chars`` of its content, or None."""
        registry = self.registry
        text = in_modes(
            self.content, self.attributes, lambda c: registry.render_prefix(c, chars), chunk
        )
        return None if text is None else sanitize(text)
