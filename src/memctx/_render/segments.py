"""Segments: a chunk's XML plus the newline after it, and where counts of pieces add up.

A message's content is the concatenation of its chunks' segments. Token
counts of segments add up to the count of the message when each segment
after the first starts with a character that cannot join the newline before
it into one token (:attr:`RenderedChunk.safe_start`).
"""

from __future__ import annotations

from typing import Final

from memctx._chunk import Role

SEPARATOR: Final = "\n"
"""Written after every chunk's XML (and after the system prompt) in a message."""

PREFIX_CHARS_PER_TOKEN: Final = 4
"""Characters per missing token in the first piece of a long chunk counted against a limit."""


def splits_after_newline(char: str) -> bool:
    """Whether tiktoken's pre-tokenizers (cl100k_base, o200k_base) always split between a
    newline and ``char``: no pre-token runs from a newline into a character other than
    whitespace and ``/``."""
    return not char.isspace() and char != "/"


def safe_split_point(text: str, start: int) -> int | None:
    """The first index ``>= start`` just after a newline that is followed by a
    character other than whitespace and ``/``, or None.

    tiktoken always splits there (:func:`splits_after_newline`), so the tokens of
    ``text`` are the tokens of ``text[:i]`` followed by those of ``text[i:]``.
    """
    index = text.find("\n", start)
    while index != -1 and index + 1 < len(text):
        if splits_after_newline(text[index + 1]):
            return index + 1
        index = text.find("\n", index + 1)
    return None


def last_split_point(text: str, end: int) -> int:
    """The last index below ``end`` that is a split point as in :func:`safe_split_point`
    (0 if none). Both characters around it lie before ``end``, so any text sharing
    ``text[:end]`` splits there too."""
    index = text.rfind("\n", 0, end - 1) if end >= 2 else -1
    while index != -1:
        if splits_after_newline(text[index + 1]):
            return index + 1
        index = text.rfind("\n", 0, index)
    return 0


def word_split_point(text: str, start: int) -> int | None:
    """The first index ``>= start`` where tiktoken must split ``text``: a split point as in
    :func:`safe_split_point`, or a space ``" "`` after a character other than whitespace
    (no pre-token runs from a letter, digit or punctuation into a space after it, and
    none starting before it looks past it), or None."""
    found = safe_split_point(text, start)
    index = text.find(" ", max(start, 1), found)
    while index != -1:
        if not text[index - 1].isspace():
            return index
        index = text.find(" ", index + 1, found)
    return found


def last_word_split_point(text: str, end: int) -> int:
    """The last index below ``end`` that is a split point as in :func:`word_split_point`,
    with both characters around it before ``end`` (0 if none)."""
    found = last_split_point(text, end)
    index = text.rfind(" ", max(found + 1, 1), end) if end >= 2 else -1
    while index != -1:
        if not text[index - 1].isspace():
            return index
        index = text.rfind(" ", max(found + 1, 1), index)
    return found


class RenderedChunk:
    """A chunk as a renderer chain made it: its role, its segment, replaced characters."""

    __slots__ = ("replaced", "role", "safe_start", "segment")

    def __init__(self, role: Role, segment: str, replaced: int) -> None:
        self.role = role
        self.segment = segment
        self.replaced = replaced
        # Token counts of segments add up exactly when each segment after the
        # first in a message starts with a character that cannot join the
        # newline before it into one pre-token (see docs/building-and-budgets.md, "Exact counts").
        first = segment[:1]
        self.safe_start = bool(first) and splits_after_newline(first)
