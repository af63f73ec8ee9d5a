"""Real images and PDFs for the tests, made with Pillow."""

from __future__ import annotations

import io


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
