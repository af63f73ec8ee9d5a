"""Real images and PDFs for the tests, made with Pillow."""

from __future__ import annotations

import io
from typing import Final

EXPECTED_1000_PX: Final = {"openai": 765, "anthropic": 1334, "gemini": 1032}
"""What the 1000 x 1000 PNG of :func:`make_png` costs by each provider's published rule.

OpenAI: shortest side scaled 1000 -> 768, 2 x 2 tiles of 512: 85 + 4 * 170.
Anthropic: within 1568 px and 1.19 MP, so unscaled: 1,000,000 / 750 = 1333.3.
Gemini: over 384 px, so 768 px tiles: 2 x 2 at 258 each.
"""


def make_png(width: int = 1000, height: int = 1000) -> bytes:
    """A real PNG of ``width`` x ``height`` pixels, made with Pillow."""
    from PIL import Image

    out = io.BytesIO()
    Image.new("RGB", (width, height), (200, 30, 30)).save(out, "PNG")
    return out.getvalue()


def make_pdf(pages: int = 2) -> bytes:
    """A real PDF of ``pages`` pages, written by Pillow."""
    from PIL import Image

    out = io.BytesIO()
    sheets = [Image.new("RGB", (612, 792), (255, 255, 255)) for _ in range(pages)]
    sheets[0].save(out, "PDF", save_all=True, append_images=sheets[1:])
    return out.getvalue()
