"""Images and documents of imported transcripts, made into image and document chunks."""

from __future__ import annotations

import base64
import binascii
import re
from typing import Any, Final

from memctx import chunks
from memctx._chunk import Chunk
from memctx._exceptions import InvalidChunkError

_DATA_URL: Final = re.compile(r"data:(?P<type>[\w.+-]+/[\w.+-]+);base64,(?P<data>.*)\Z", re.S)


def _decoded(data: object, field: str) -> bytes:
    if not isinstance(data, str):
        raise InvalidChunkError(field, "must be base64 text")
    try:
        return base64.b64decode(data, validate=True)
    except (binascii.Error, ValueError):
        raise InvalidChunkError(field, "is not valid base64") from None


def from_url(
    kind: str, url: object, chunk_id: str, *, detail: Any = None, title: Any = None
) -> Chunk:
    """An image or document chunk from a ``data:`` URL or an http(s) URL."""
    if not isinstance(url, str):
        raise InvalidChunkError("url", "must be a string")
    found = _DATA_URL.match(url)
    if found is not None:
        return media_chunk(kind, found["data"], found["type"], chunk_id, detail=detail, title=title)
    if kind == "image":
        return chunks.image(url=url, detail=detail, id=chunk_id)
    return chunks.document(url=url, title=title, id=chunk_id)


def media_chunk(
    kind: str,
    data: object,
    media_type: Any,
    chunk_id: str,
    *,
    detail: Any = None,
    title: Any = None,
) -> Chunk:
    """An image or document chunk from base64 ``data``."""
    raw = _decoded(data, "data")
    if kind == "image":
        return chunks.image(raw, media_type=media_type, detail=detail, id=chunk_id)
    return chunks.document(
        raw, media_type=media_type or "application/pdf", title=title, id=chunk_id
    )


def media_part(part: Any, chunk_id: str) -> Chunk:
    """The chunk of an OpenAI content part: chat ``image_url`` / ``file``, Responses
    ``input_image`` / ``input_file``."""
    kind = part.get("type")
    if kind == "image_url":
        image = part.get("image_url")
        if isinstance(image, str):
            return from_url("image", image, chunk_id)
        if not isinstance(image, dict):
            raise InvalidChunkError("image_url", "must be an object with a 'url'")
        return from_url("image", image.get("url"), chunk_id, detail=image.get("detail"))
    if kind == "input_image":
        detail = part.get("detail")
        return from_url("image", part.get("image_url"), chunk_id, detail=detail)
    found = part.get("file") if kind == "file" else part
    if not isinstance(found, dict):
        raise InvalidChunkError("file", "must be an object")
    title = found.get("filename")
    if found.get("file_url") is not None:
        return from_url("document", found["file_url"], chunk_id, title=title)
    if found.get("file_data") is None:
        raise InvalidChunkError("file", "only file_data or file_url can be imported (not file_id)")
    return from_url("document", found["file_data"], chunk_id, title=title)
