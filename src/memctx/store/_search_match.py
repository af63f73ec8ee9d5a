"""How a candidate chunk holds a query's words: how often each, whether as a phrase, and
its length; read from the chunk's indexed text with the index's words
(:func:`~memctx.store._search_index.words`), the same on both backends.

The text is turned into its words separated by spaces
(:func:`~memctx.store._search_index.spaced_words`), so that counting a word is counting
`` word `` and a phrase is one regular expression: C speed, no list of words.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

import attrs

from memctx.store._search_index import MAX_WORD, spaced_words


@attrs.frozen
class Match:
    """A candidate's counts of the query's words (by word), whether it holds them all and
    as a phrase, and the length of its text (its words and the spaces between them)."""

    counts: dict[str, int]
    every: bool
    phrase: bool
    length: int


class QueryWords:
    """The distinct words of a query (``terms``) and its phrase, matched against texts."""

    def __init__(self, found: Sequence[str]) -> None:
        self.terms = list(dict.fromkeys(found))
        self._needles = [(t, (" " + t).encode(), len(t) >= MAX_WORD) for t in self.terms]
        self._alone = {
            t: re.compile(rb"(?<= )" + re.escape(t.encode()) + rb"(?= )") for t in self.terms
        }
        parts = [re.escape(w.encode()) + (rb"[^ ]*" if len(w) >= MAX_WORD else b"") for w in found]
        self._phrase = re.compile(rb" " + rb" +".join(parts) + rb" ") if len(found) > 1 else None

    def match(self, text: str) -> Match:
        """How ``text`` (a chunk's indexed text) holds the query's words."""
        spaced = b" " + spaced_words(text) + b" "
        counts = {}
        for term, needle, prefix in self._needles:
            if prefix:  # a cut word: the words that begin with it
                counts[term] = spaced.count(needle)
                continue
            whole = needle + b" "
            found = spaced.count(whole)
            if found and needle + whole in spaced:  # "w w": one space shared by two of them
                found = len(self._alone[term].findall(spaced))
            counts[term] = found
        every = all(counts.values())
        phrase = every and (self._phrase is None or self._phrase.search(spaced) is not None)
        return Match(counts, every, phrase, len(spaced) - 2)
