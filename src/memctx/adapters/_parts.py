"""The parts of a provider-neutral conversation's turns: text, native calls and their
results (with the media a tool returned), media and reasoning."""

from __future__ import annotations

from typing import Any, Literal, TypeAlias

import attrs

from memctx._chunk import Chunk


@attrs.frozen
class Text:
    """XML text (one or more chunks'); ``item_id``: the Responses item id of the one assistant
    message chunk it holds, when it has one (such a chunk is a part of its own)."""

    text: str
    item_id: str | None = None


@attrs.frozen
class Call:
    """A tool or skill call sent natively."""

    chunk: Chunk
    id: str
    name: str
    arguments: dict[str, Any]


@attrs.frozen
class Media:
    """An image or document chunk (``chunk.action``), with its XML placeholder as ``text``."""

    chunk: Chunk
    text: str

    @property
    def is_image(self) -> bool:
        return self.chunk.action == "image"

    @property
    def url(self) -> str | None:
        """The chunk's URL, or None when it holds data."""
        found = self.chunk.content.get("url")
        return None if found is None else str(found)

    @property
    def data(self) -> str:
        """The base64 data (only for a chunk that holds data)."""
        return str(self.chunk.content["data"])

    @property
    def media_type(self) -> str:
        return self.chunk.metadata.media_type or "application/octet-stream"


@attrs.frozen
class Result:
    """The result of a native call, with the images and documents that belong to it (media
    chunks of its ``call_id`` in its message)."""

    chunk: Chunk
    id: str
    name: str
    output: str
    is_error: bool
    media: tuple[Media, ...] = ()


@attrs.frozen
class Reasoning:
    """A ``thinking`` or ``redacted_thinking`` chunk, with its XML as ``text``."""

    chunk: Chunk
    text: str

    @property
    def redacted(self) -> bool:
        return self.chunk.subtype == "REDACTED_THINKING"

    @property
    def anthropic_signed(self) -> bool:
        """Whether Anthropic takes it back as a block: redacted, or signed by Anthropic (a
        signature without an OpenAI ``reasoning_id``)."""
        meta = self.chunk.metadata
        return self.redacted or (meta.signature is not None and meta.reasoning_id is None)


Part: TypeAlias = Text | Call | Result | Media | Reasoning


def part_text(part: Part) -> str:
    """The XML text a part stands for when sent as text (a call's or result's: none)."""
    return part.text if isinstance(part, Text | Media | Reasoning) else ""


@attrs.frozen
class Turn:
    role: Literal["user", "assistant"]
    parts: tuple[Part, ...]
