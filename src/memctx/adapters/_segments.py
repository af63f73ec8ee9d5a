"""Cut a message's content back into the segments of its chunks.

A message's content is its chunks' XML, each followed by a newline, in
order. The XML that :func:`memctx.xml.render_element` writes is one element
whose text holds no raw ``<`` except inside CDATA sections, so each
segment's end can be found by scanning: the start tag (quoted attribute
values), then text and CDATA sections up to the matching end tag, then the
newline. A renderer whose output does not have this shape makes the scan
fail, and the adapter then keeps that message as text.
"""

from __future__ import annotations

import re
from typing import Final

_NAME: Final = re.compile(r"[A-Za-z_][A-Za-z0-9_.:-]*")
_CDATA_OPEN: Final = "<![CDATA["
_CDATA_CLOSE: Final = "]]>"


def _element_end(text: str, start: int) -> int | None:
    """The index just past the element starting at ``start``, or None."""
    if not text.startswith("<", start):
        return None
    match = _NAME.match(text, start + 1)
    if match is None:
        return None
    tag = match.group()
    pos = match.end()
    while True:  # attributes
        while pos < len(text) and text[pos] in " \t\r\n":
            pos += 1
        if text.startswith(">", pos):
            pos += 1
            break
        name = _NAME.match(text, pos)
        if name is None or not text.startswith("=", name.end()):
            return None
        quote_at = name.end() + 1
        if quote_at >= len(text) or text[quote_at] not in "\"'":
            return None
        close = text.find(text[quote_at], quote_at + 1)
        if close == -1:
            return None
        pos = close + 1
    end_tag = f"</{tag}>"
    while True:  # text and CDATA sections, up to the end tag
        lt = text.find("<", pos)
        if lt == -1:
            return None
        if text.startswith(_CDATA_OPEN, lt):
            close = text.find(_CDATA_CLOSE, lt + len(_CDATA_OPEN))
            if close == -1:
                return None
            pos = close + len(_CDATA_CLOSE)
        elif text.startswith(end_tag, lt):
            return lt + len(end_tag)
        else:
            return None


def split_segments(content: str, count: int) -> list[str] | None:
    """``content`` cut into ``count`` segments (an element and its newline each), or None."""
    segments: list[str] = []
    pos = 0
    for _ in range(count):
        end = _element_end(content, pos)
        if end is None or not content.startswith("\n", end):
            return None
        segments.append(content[pos : end + 1])
        pos = end + 1
    return segments if pos == len(content) else None
