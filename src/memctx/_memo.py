"""Per-chunk memoised renderings, and where tiktoken must split a text.

Chunks are immutable, so what a renderer chain made of one and what an
encoding counted in it never change: both are kept in the chunk's memo,
keyed by an interned :class:`ChainToken` (and the tokenizer's cache key).
"""

from __future__ import annotations

import threading
from typing import Final

from memctx._chunk import Role
from memctx._rendering import ChunkRenderer

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


class Rendered:
    """A chunk's memoised rendering: its role and its segment (XML plus newline)."""

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


class ChainToken:
    """Memo key of one renderer chain (identity-hashed, so lookups stay in C)."""

    __slots__ = ("names",)

    def __init__(self, chain: tuple[ChunkRenderer, ...]) -> None:
        self.names = tuple(type(r).__qualname__ for r in chain)

    def __repr__(self) -> str:
        return f"ChainToken({', '.join(self.names)})"


# Equal chains (the same renderer objects in the same order) share one token,
# so builders made alike share memoised renderings. Holds the renderers alive.
CHAIN_TOKENS: dict[tuple[ChunkRenderer, ...], ChainToken] = {}
CHAIN_LOCK = threading.Lock()


def chain_token(chain: tuple[ChunkRenderer, ...]) -> ChainToken:
    with CHAIN_LOCK:
        token = CHAIN_TOKENS.get(chain)
        if token is None:
            token = CHAIN_TOKENS[chain] = ChainToken(chain)
        return token
