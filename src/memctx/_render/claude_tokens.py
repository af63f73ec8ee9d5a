"""Claude's token counts offline, through ``ctok`` (the ``memctx[claude]`` extra, Python 3.12+).

``ctok`` reconstructs the counts of Anthropic's ``count_tokens`` per tokenizer
generation: ``v3`` (Claude 3 through Opus 4.6), ``v4.7`` (Opus 4.7) and
``v4.8`` (Opus 4.8, Sonnet 5, Fable 5: v4.7's vocabulary, another frame).
Its authors measured ``v3`` and ``v4.7`` exact on every text of their held-out
and mining corpora (and found no under-count in 2.3 million texts each);
``v4.8`` reuses v4.7's vocabulary without a gate of its own, and Opus 5's free
trailing white space is not modelled. So a :class:`ClaudeTokenizer` is
``exact`` for the ``v3`` and ``v4.7`` generations only.

What ctok measures is one user message: its text and a fixed frame (the
``⟨pad⟩`` tokens its ``tokenize`` opens with). :meth:`ClaudeTokenizer.count` is
the text's part (the tokens that are not the frame; an empty text still costs
the one word-boundary token ctok gives it); :meth:`ClaudeTokenizer.count_messages`
adds the frame once per message, an approximation for several messages (Anthropic does not
publish how a conversation is framed), exact for one user message.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Any, Final

from memctx._chunk import ContextMessage

_NUMBER: Final = re.compile(r"\d{1,2}")
_PAD: Final = "\u27e8pad\u27e9"  # ⟨pad⟩: ctok's notation for a token of the message frame
_EXACT_FAMILIES: Final = ("3", "4.7")
"""Generations ctok's authors measured exact (``v3``, ``v4.7``)."""


def claude_version(model: str) -> str:
    """The version ``ctok`` routes by, read from a model name: ``claude-3-5-sonnet-20241022``
    is ``"3.5"``, ``claude-opus-4-7`` ``"4.7"``, ``claude-sonnet-5`` ``"5"``; ``"3"`` when the
    name holds no version."""
    numbers = [p for p in re.split(r"[-_.@]", model) if _NUMBER.fullmatch(p)]
    return ".".join(numbers[:2]) or "3"


def family(version: str) -> str:
    """The tokenizer generation of ``version``: ``"3"``, ``"4.7"`` or ``"4.8"``."""
    parts = tuple(int(p) for p in version.split("."))
    padded = parts + (0,) * (2 - len(parts))
    if padded >= (4, 8):
        return "4.8"
    if padded >= (4, 7):
        return "4.7"
    return "3"


class ClaudeTokenizer:
    """Counts Claude's tokens with ``ctok`` for the generation of ``model``."""

    def __init__(self, model: str) -> None:
        import ctok

        self._ctok = ctok
        self.model: str = model
        self.version = family(claude_version(model))
        self._frame: int = ctok.tokenize("", self.version).count(_PAD)

    @property
    def name(self) -> str:
        return f"{self.model} (ctok v{self.version})"

    @property
    def exact(self) -> bool:
        """True for the generations ctok's authors measured exact (v3, v4.7)."""
        return self.version in _EXACT_FAMILIES

    @property
    def cache_key(self) -> str:
        return f"ctok:{self.version}"

    @property
    def counts_add_up(self) -> bool:
        """False: the tiling of a whole text may differ from its pieces'."""
        return False

    def count(self, text: str) -> int:
        """The tokens of ``text`` within a message (its frame not counted)."""
        tokens: list[str] = self._ctok.tokenize(text, self.version)
        return len(tokens) - self._frame

    def count_messages(self, messages: Iterable[ContextMessage | Mapping[str, Any]]) -> int:
        """Each message's text and one frame per message (exact for one user message)."""
        total = 0
        for message in messages:
            content = message["content"] if isinstance(message, Mapping) else message.content
            if not isinstance(content, str):
                raise TypeError(f"a message needs string content, got {message!r}")
            total += self.count(content) + self._frame
        return total

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, ClaudeTokenizer):
            return NotImplemented
        return (self.model, self.version) == (other.model, other.version)

    def __hash__(self) -> int:
        return hash((ClaudeTokenizer, self.model, self.version))

    def __repr__(self) -> str:
        return f"ClaudeTokenizer({self.model!r}, version={self.version!r}, exact={self.exact})"
