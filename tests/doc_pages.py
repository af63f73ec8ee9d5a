"""The fenced blocks of the documentation pages (README.md and docs/), for the tests."""

from __future__ import annotations

import re
from pathlib import Path

import attrs

ROOT = Path(__file__).resolve().parent.parent

FENCE = re.compile(
    r"^(?:<!-- (?P<marker>[^>]*?) -->\n)?```(?P<lang>[\w-]*)[^\n]*\n(?P<body>.*?)^```[ \t]*$",
    re.DOTALL | re.MULTILINE,
)


@attrs.frozen
class Block:
    """One fenced block of a page, with the line it starts on."""

    page: str
    line: int
    lang: str
    marker: str
    body: str

    @property
    def where(self) -> str:
        return f"{self.page}:{self.line}"

    @property
    def runs(self) -> bool:
        if self.marker == "not run":
            return False
        return self.lang in ("python", "console") or self.marker.startswith(("write:", "expect:"))


def blocks(page: Path) -> list[Block]:
    text = page.read_text(encoding="utf-8")
    name = str(page.relative_to(ROOT)) if page.is_relative_to(ROOT) else page.name
    return [
        Block(
            page=name,
            line=text[: m.start("body")].count("\n"),
            lang=m.group("lang"),
            marker=(m.group("marker") or "").strip(),
            body=m.group("body"),
        )
        for m in FENCE.finditer(text)
    ]
