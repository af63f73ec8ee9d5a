"""Images and documents in chunks: checked once, stored as JSON, priced by each provider's rule.

A chunk's content is JSON, so binary data travels as base64: an image or
document chunk holds ``{"data": "<base64>"}`` or ``{"url": "https://..."}``,
and its metadata the facts worked out once, when the chunk is made:
``media_type``, ``byte_size``, and ``width`` / ``height`` of an image (read
with Pillow, the ``memctx[images]`` extra) or ``pages`` of a PDF. State
files, the store and snapshots keep content and metadata as they keep any
chunk's, so nothing needs decoding again.

Token costs follow each provider's published rule (see
``docs/providers-fidelity.md`` for the sources and the figures):

- OpenAI (GPT-4o, GPT-4.1, GPT-5 family): ``detail="low"`` costs 85 tokens;
  otherwise the image is scaled to fit 2048 x 2048, then its shortest side
  to 768 px (never up), and costs 85 + 170 per 512 px tile.
- Anthropic: an image whose long edge exceeds 1568 px or whose area exceeds
  1,192,464 px (1092 x 1092) is scaled down to fit, then costs
  ``ceil(width * height / 750)``.
- Gemini (2.x): an image of at most 384 px both ways costs 258 tokens;
  a larger one is tiled in 768 x 768 tiles of 258 tokens each.

An image given by URL has no known size unless you pass ``width`` and
``height``: it is priced at the provider's largest cost (an upper bound).
PDF pages are priced per page (Gemini's published 258; for OpenAI and
Anthropic an estimate, since their cost depends on each page's text).
"""

from __future__ import annotations

import base64
import binascii
import io
import math
import mimetypes
import re
import urllib.parse
from collections.abc import Mapping
from typing import Any, Final

import attrs

from memctx._chunk import Chunk, ChunkType
from memctx._exceptions import InvalidChunkError, MissingExtraError

IMAGE_TYPES: Final = ("image/png", "image/jpeg", "image/gif", "image/webp")
"""The image media types every provider takes."""
DOCUMENT_TYPES: Final = ("application/pdf",)
"""The document media types every provider takes."""
DETAILS: Final = ("auto", "low", "high")
"""OpenAI's ``detail`` values."""

_PIL_FORMATS: Final = {
    "PNG": "image/png",
    "JPEG": "image/jpeg",
    "GIF": "image/gif",
    "WEBP": "image/webp",
}
_PDF_PAGE: Final = re.compile(rb"/Type\s*/Page(?![a-zA-Z])")


@attrs.frozen
class Media:
    """What a media chunk's constructor stores: the content and the metadata facts."""

    content: dict[str, str]
    media_type: str
    byte_size: int | None = None
    width: int | None = None
    height: int | None = None
    pages: int | None = None


def _bytes(data: object, field: str) -> bytes:
    if isinstance(data, bytearray | memoryview):
        data = bytes(data)
    if not isinstance(data, bytes):
        raise InvalidChunkError(field, f"must be bytes, got {type(data).__name__}")
    if not data:
        raise InvalidChunkError(field, "is empty")
    return data


def check_url(url: object, field: str = "url") -> str:
    """``url`` if it is an absolute http(s) URL with a host."""
    if not isinstance(url, str):
        raise InvalidChunkError(field, f"must be a string, got {type(url).__name__}")
    parts = urllib.parse.urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.netloc or any(c in url for c in " \n\t"):
        raise InvalidChunkError(field, f"must be an http(s) URL, got {url[:80]!r}")
    return url


def check_one_source(data: object, url: object) -> None:
    if (data is None) == (url is None):
        raise InvalidChunkError("data", "give exactly one of data= (bytes) and url=")


def _url_media_type(url: str, media_type: str | None, allowed: tuple[str, ...]) -> str:
    found = media_type or mimetypes.guess_type(urllib.parse.urlsplit(url).path)[0]
    if found is None:
        raise InvalidChunkError("media_type", f"cannot tell it from {url[:80]!r}; pass it")
    return _known_type(found, allowed)


def _known_type(media_type: object, allowed: tuple[str, ...]) -> str:
    if not isinstance(media_type, str) or media_type not in allowed:
        raise InvalidChunkError(
            "media_type", f"unsupported {media_type!r}; one of {', '.join(allowed)}"
        )
    return media_type


def _pillow() -> Any:
    try:
        import PIL.Image
    except ImportError:
        raise MissingExtraError(
            "images", "reading an image's size (chunks.image(data=...))"
        ) from None
    return PIL.Image


def inspect_image(data: object, media_type: str | None) -> Media:
    """Check ``data`` is an image of a supported type (and of ``media_type`` when given)."""
    raw = _bytes(data, "data")
    if media_type is not None:
        _known_type(media_type, IMAGE_TYPES)
    image_module = _pillow()
    try:
        with image_module.open(io.BytesIO(raw)) as image:
            found = _PIL_FORMATS.get(image.format or "")
            width, height = image.size
            image.verify()
    except Exception as exc:  # Pillow raises many kinds for data that is not an image
        raise InvalidChunkError("data", f"is not a readable image ({exc})") from None
    if found is None:
        raise InvalidChunkError(
            "data", f"is a {image.format} image; supported: {', '.join(IMAGE_TYPES)}"
        )
    if media_type is not None and media_type != found:
        raise InvalidChunkError("media_type", f"is {media_type!r} but the data is {found!r}")
    return Media(_encoded(raw), found, len(raw), width, height)


def inspect_image_url(
    url: object, media_type: str | None, width: int | None, height: int | None
) -> Media:
    checked = check_url(url)
    if (width is None) != (height is None):
        raise InvalidChunkError("width", "give both width and height, or neither")
    return Media(
        {"url": checked}, _url_media_type(checked, media_type, IMAGE_TYPES), None, width, height
    )


def inspect_document(data: object, media_type: str | None) -> Media:
    raw = _bytes(data, "data")
    found = _known_type(media_type or "application/pdf", DOCUMENT_TYPES)
    if not raw.startswith(b"%PDF-"):
        raise InvalidChunkError("data", "is not a PDF (it does not start with %PDF-)")
    pages = len(_PDF_PAGE.findall(raw)) or 1
    return Media(_encoded(raw), found, len(raw), pages=pages)


def inspect_document_url(url: object, media_type: str | None, pages: int | None) -> Media:
    checked = check_url(url)
    found = _url_media_type(checked, media_type, DOCUMENT_TYPES)
    return Media({"url": checked}, found, pages=pages)


def _encoded(raw: bytes) -> dict[str, str]:
    return {"data": base64.b64encode(raw).decode("ascii")}


def decoded(content: Mapping[str, Any]) -> bytes:
    """The bytes of a media chunk's ``{"data": ...}`` content."""
    try:
        return base64.b64decode(str(content["data"]), validate=True)
    except (KeyError, binascii.Error) as exc:
        raise InvalidChunkError("content", f"holds no base64 data ({exc})") from None


def data_url(media_type: str, content: Mapping[str, Any]) -> str:
    """``data:<type>;base64,<data>`` for a chunk holding data (its URL when it holds one)."""
    if "url" in content:
        return str(content["url"])
    return f"data:{media_type};base64,{content['data']}"


# -- token costs ----------------------------------------------------------------------------

OPENAI_LOW: Final = 85
OPENAI_BASE: Final = 85
OPENAI_TILE: Final = 170
ANTHROPIC_MAX_EDGE: Final = 1568
ANTHROPIC_MAX_PIXELS: Final = 1092 * 1092
ANTHROPIC_PIXELS_PER_TOKEN: Final = 750
GEMINI_IMAGE: Final = 258
GEMINI_SMALL: Final = 384
GEMINI_TILE_SIZE: Final = 768
DOCUMENT_PAGE_TOKENS: Final = {"openai": 1_500, "anthropic": 3_000, "gemini": 258}
"""Per PDF page: Gemini's published figure; for OpenAI and Anthropic an estimate (Anthropic
publishes 1,500-3,000 per page, the upper end is used; OpenAI publishes no figure)."""


def openai_image_tokens(width: int | None, height: int | None, detail: str | None = None) -> int:
    """OpenAI's tile rule (GPT-4o family): 85, or 85 + 170 per 512 px tile after scaling."""
    if detail == "low":
        return OPENAI_LOW
    if width is None or height is None:
        width, height = 768, 2048  # the most tiles an image can make
    w, h = float(width), float(height)
    if max(w, h) > 2048:
        scale = 2048 / max(w, h)
        w, h = w * scale, h * scale
    if min(w, h) > 768:
        scale = 768 / min(w, h)
        w, h = w * scale, h * scale
    tiles = math.ceil(round(w, 6) / 512) * math.ceil(round(h, 6) / 512)
    return OPENAI_BASE + OPENAI_TILE * tiles


def anthropic_image_tokens(width: int | None, height: int | None) -> int:
    """Anthropic's rule: scaled down to fit 1568 px and 1.19 MP, then width * height / 750."""
    if width is None or height is None:
        return math.ceil(ANTHROPIC_MAX_PIXELS / ANTHROPIC_PIXELS_PER_TOKEN)
    w, h = float(width), float(height)
    scale = min(1.0, ANTHROPIC_MAX_EDGE / max(w, h), math.sqrt(ANTHROPIC_MAX_PIXELS / (w * h)))
    w, h = math.floor(w * scale), math.floor(h * scale)
    return max(1, math.ceil(w * h / ANTHROPIC_PIXELS_PER_TOKEN))


def gemini_image_tokens(width: int | None, height: int | None) -> int:
    """Gemini's rule: 258 for an image within 384 x 384, else 258 per 768 x 768 tile."""
    if width is None or height is None:
        width, height = 3072, 3072  # no published maximum: priced as a 4 x 4 tile image
    if width <= GEMINI_SMALL and height <= GEMINI_SMALL:
        return GEMINI_IMAGE
    return GEMINI_IMAGE * math.ceil(width / GEMINI_TILE_SIZE) * math.ceil(height / GEMINI_TILE_SIZE)


def is_media(action: str | None) -> bool:
    return action in ("image", "document")


def is_opaque(chunk: Chunk) -> bool:
    """Whether cutting ``chunk`` would break it: an image or document (base64 data), signed
    or redacted reasoning (a provider checks the signature against the exact text)."""
    if chunk.type is ChunkType.AGENT:
        return is_media(chunk.action)
    if chunk.type is ChunkType.WORKING_FLOW:
        return chunk.subtype == "REDACTED_THINKING" or chunk.metadata.signature is not None
    return False


def media_tokens(action: str | None, metadata: Any, provider: str | None) -> int:
    """The tokens one image or document costs ``provider`` (OpenAI's rule when None)."""
    provider = provider or "openai"
    if action == "document":
        return DOCUMENT_PAGE_TOKENS[provider] * (metadata.pages or 1)
    width, height = metadata.width, metadata.height
    if provider == "anthropic":
        return anthropic_image_tokens(width, height)
    if provider == "gemini":
        return gemini_image_tokens(width, height)
    return openai_image_tokens(width, height, metadata.detail)
