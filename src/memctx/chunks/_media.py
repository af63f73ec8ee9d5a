"""Images and documents."""

from __future__ import annotations

import datetime as _dt
from collections.abc import Mapping
from typing import Any

from memctx._chunk import Chunk, ChunkType
from memctx._exceptions import InvalidChunkError
from memctx._render import media as _media
from memctx._validators import int_in_range
from memctx.chunks._base import check_name, make


def image(
    data: bytes | None = None,
    url: str | None = None,
    media_type: str | None = None,
    detail: str | None = None,
    *,
    width: int | None = None,
    height: int | None = None,
    call_id: str | None = None,
    id: str | None = None,
    priority: int = 0,
    pinned: bool = False,
    custom: Mapping[str, Any] | None = None,
    created_at: _dt.datetime | None = None,
) -> Chunk:
    """An image in a user turn: ``data`` (bytes) or ``url`` (http or https).

    Data is checked and measured once, here (Pillow, the ``memctx[images]``
    extra): it must be a PNG, JPEG, GIF or WebP image, of ``media_type``
    when one is given. The content is ``{"data": "<base64>"}`` (or
    ``{"url": ...}``); the metadata holds ``media_type``, ``width``,
    ``height`` and ``byte_size``. For a URL, ``media_type`` is guessed from
    the path when not given, and ``width`` / ``height`` may be given (else
    the image is priced at the provider's largest cost). ``detail`` is
    OpenAI's (``"auto"``, ``"low"``, ``"high"``). The XML is a short
    ``<image .../>``-like element with no content: no base64 is ever sent
    as text. ``call_id``: the image belongs to the result of that tool
    call (a screenshot a tool returned); placed right after the result, it
    is sent inside it where the provider allows (see
    ``docs/providers-fidelity.md``).
    """
    _media.check_one_source(data, url)
    if detail is not None and detail not in _media.DETAILS:
        raise InvalidChunkError(
            "detail", f"must be one of {', '.join(_media.DETAILS)}, got {detail!r}"
        )
    if data is not None:
        if width is not None or height is not None:
            raise InvalidChunkError("width", "is read from the data; give it only with url=")
        found = _media.inspect_image(data, media_type)
    else:
        found = _media.inspect_image_url(url, media_type, width, height)
    return _media_chunk(
        "image", found, id, priority, pinned, custom, created_at, detail=detail, call_id=call_id
    )


def document(
    data: bytes | None = None,
    url: str | None = None,
    media_type: str = "application/pdf",
    title: str | None = None,
    *,
    pages: int | None = None,
    call_id: str | None = None,
    id: str | None = None,
    priority: int = 0,
    pinned: bool = False,
    custom: Mapping[str, Any] | None = None,
    created_at: _dt.datetime | None = None,
) -> Chunk:
    """A PDF document in a user turn: ``data`` (bytes) or ``url`` (http or https).

    Data must be a PDF; its pages are counted here (for the token cost). A
    URL's ``pages`` may be given (else one page is assumed). ``title`` is
    sent where the provider takes one (Anthropic's document title, OpenAI's
    file name). Content, XML and ``call_id`` as for :func:`image`.
    """
    _media.check_one_source(data, url)
    if data is not None:
        if pages is not None:
            raise InvalidChunkError("pages", "is read from the data; give it only with url=")
        found = _media.inspect_document(data, media_type)
    else:
        if pages is not None:
            int_in_range(InvalidChunkError, 1).check(pages, "pages")
        found = _media.inspect_document_url(url, media_type, pages)
    if title is not None:
        check_name(title, "title")
    return _media_chunk(
        "document", found, id, priority, pinned, custom, created_at, title=title, call_id=call_id
    )


def _media_chunk(
    action: str,
    found: _media.Media,
    id: str | None,
    priority: int,
    pinned: bool,
    custom: Mapping[str, Any] | None,
    created_at: _dt.datetime | None,
    **extra: Any,
) -> Chunk:
    return make(
        ChunkType.AGENT,
        found.content,
        id=id,
        priority=priority,
        pinned=pinned,
        custom=custom,
        created_at=created_at,
        role="user",
        action=action,
        media_type=found.media_type,
        byte_size=found.byte_size,
        width=found.width,
        height=found.height,
        pages=found.pages,
        **extra,
    )
