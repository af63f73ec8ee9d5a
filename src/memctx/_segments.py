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


def safe_split_point(text: str, start: int) -> int | None:
    """The first index ``>= start`` just after a newline that is followed by a
    character other than whitespace and ``/``, or None.

    tiktoken's pre-tokenizers (cl100k_base, o200k_base) always split there:
    no pre-token runs from a newline into such a character. So the tokens of
    ``text`` are the tokens of ``text[:i]`` followed by those of ``text[i:]``.
    """
    index = text.find("\n", start)
    while index != -1 and index + 1 < len(text):
        following = text[index + 1]
        if not following.isspace() and following != "/":
            return index + 1
        index = text.find("\n", index + 1)
    return None


class RenderedChunk:
    """A chunk as a renderer chain made it: its role, its segment, replaced characters."""

    __slots__ = ("replaced", "role", "safe_start", "segment")

    def __init__(self, role: Role, segment: str, replaced: int) -> None:
        self.role = role
        self.segment = segment
        self.replaced = replaced
        # Token counts of segments add up exactly when each segment after the
        # first in a message starts with a character that cannot join the
        # newline before it into one pre-token (see the README, "Exactness").
        first = segment[:1]
        self.safe_start = bool(first) and not first.isspace() and first != "/"
