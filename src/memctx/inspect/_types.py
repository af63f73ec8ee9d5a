"""What renders a chunk for the build inspector.

A :class:`~memctx.ContextBuilder` fits, and so does the plain rendering the
inspector uses when it is given no builder (the installed renderers).
"""

from __future__ import annotations

from typing import Protocol

from memctx._chunk import Chunk


class ChunkXml(Protocol):
    """Renders a chunk as it is sent."""

    def render(self, chunk: Chunk) -> tuple[str, str]:
        """``(role, xml)`` of ``chunk``."""
        ...
