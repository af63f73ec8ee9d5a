"""``store.search``: the chunks of a thread's whole history that hold a query's words.

A query is text, never syntax: memctx splits it into words as the index does
(:func:`~memctx.store._search_index.words`; its first :data:`MAX_QUERY_WORDS`),
and each word goes to the database as a quoted term in a bound parameter, so
quotes, ``AND``/``OR``/``NOT``/``NEAR``, ``*``, ``:``, ``-``, parentheses or
SQL find the words they hold and nothing else. A query without a word (blank,
or only punctuation) finds nothing.

Ranking, the same on both backends (computed here, from the same words): first
the chunks holding the query's words as a phrase (in order, adjacent), then
those holding every word, then those holding some; within each group by BM25
(k1 = 1.2, b = 0.75, a chunk's length in words), newest first on a tie.

What is ranked, so that a search costs about the same at any thread length
(the index tells only which chunks hold a word; counts, lengths and phrases
are read from the candidates' text):

1. Word frequencies (BM25's document frequencies) are counted among the
   thread's newest :data:`SAMPLE` chunks: exact in a thread no longer than
   that, estimated in a longer one.
2. The candidates for the phrase and every-word groups are the newest
   :data:`POOL` chunks holding the :data:`DRIVERS` rarest words.
3. When those give fewer than ``limit`` hits, the newest :data:`POOL`
   chunks holding any of the rarer words (the rarest, and the next ones
   while their estimated chunks add up to at most :data:`ANY_WORDS_READ`)
   are candidates too: a word in most chunks of a long thread does not
   find chunks by itself.

So in a thread where more than :data:`POOL` chunks hold the rarest words, the
best of the newest ones are found. ``types`` is applied by the index;
``visible`` to the newest :data:`VISIBLE_READ` candidates.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Iterable, Sequence
from typing import Any, Final

import attrs
from sqlalchemy import Row
from sqlmodel import Session

from memctx._chunk import Chunk, ChunkType
from memctx._exceptions import StoreArgumentError, StoreError
from memctx._validators import describe
from memctx.store._queries import check_thread_id, get_batch, get_thread
from memctx.store._row_reads import rows_by_seq, visible_seqs
from memctx.store._schema import row_to_chunk
from memctx.store._search_index import indexed_text, words
from memctx.store._search_reads import Index

MAX_QUERY_WORDS: Final = 64
"""Words of a query that are searched; the rest is ignored."""

DEFAULT_LIMIT: Final = 5
"""How many hits :meth:`~memctx.store.MemoryStore.search` returns when not told."""

SAMPLE: Final = 500
"""The newest chunks among which word frequencies are counted."""

POOL: Final = 200
"""Candidates of each kind that a search ranks (or ``limit``, if more)."""

DRIVERS: Final = 3
"""The rarest words whose chunks are the candidates for the phrase and every-word groups."""

ANY_WORDS_READ: Final = 1_000
"""Estimated chunks of the words that find the candidates holding some of them."""

VISIBLE_READ: Final = 8 * POOL
"""With ``visible=``, the newest candidates of each kind that are read to keep those shown
(or hidden)."""

_K1: Final = 1.2
_B: Final = 0.75


@attrs.frozen
class SearchHit:
    """A chunk that :meth:`~memctx.store.MemoryStore.search` found.

    ``position`` is its index in the thread's whole history
    (``store.get_all_chunks(thread)[hit.position] is`` an equal chunk; its
    sequence number minus one). ``score`` is higher for a better hit: ``2 + r``
    when the chunk holds the query's words as a phrase, ``1 + r`` when it holds
    them all, ``r`` when it holds some, where ``r = bm25 / (1 + bm25)`` is its
    BM25 relevance brought into ``[0, 1)``.
    """

    chunk: Chunk
    score: float
    position: int


def _types(types: object) -> frozenset[str] | None:
    if types is None:
        return None
    given: list[Any]
    if isinstance(types, str):
        given = [types]
    elif isinstance(types, Iterable):
        given = list(types)
    else:
        raise StoreArgumentError(f"types takes chunk types or a list, got {describe(types)}")
    if not given:
        raise StoreArgumentError("types is empty: give None to search chunks of every type")
    try:
        return frozenset(ChunkType(t).value for t in given)
    except (ValueError, TypeError):
        known = ", ".join(t.value for t in ChunkType)
        raise StoreArgumentError(
            f"unknown chunk type in {describe(given)}; known: {known}"
        ) from None


def check_search(
    query: object, limit: object, types: object, visible: object
) -> tuple[list[str], int, frozenset[str] | None, bool | None]:
    """The query's words and the checked options, or :class:`StoreArgumentError`."""
    if not isinstance(query, str):
        raise StoreArgumentError(f"a search query must be a string, got {describe(query)}")
    if isinstance(limit, bool) or not isinstance(limit, int) or limit < 1:
        raise StoreArgumentError(f"limit must be a positive int, got {describe(limit)}")
    if visible is not None and not isinstance(visible, bool):
        raise StoreArgumentError(f"visible must be True, False or None, got {describe(visible)}")
    return words(query, cut=False)[:MAX_QUERY_WORDS], limit, _types(types), visible


def search(
    session: Session,
    thread_id: str,
    query: str,
    limit: int = DEFAULT_LIMIT,
    types: Any = None,
    visible: bool | None = None,
) -> tuple[SearchHit, ...]:
    """The operation behind ``store.search``: ranked hits of the thread, best first."""
    check_thread_id(thread_id)
    found, limit, type_values, visible = check_search(query, limit, types, visible)
    thread = get_thread(session, thread_id)
    if not found or thread.last_seq == 0:
        return ()
    index = Index.of(session.connection(), thread_id)
    if index is None:  # not made by this schema: a corrupt database
        return ()
    shown: set[int] | None = None
    if visible is not None:
        shown = set(visible_seqs(session, get_batch(session, thread_id, thread.batch)))
    search = _Search(session, index, found, thread.last_seq, type_values, shown, visible)
    return search.run(limit)


@attrs.define
class _Candidate:
    """A chunk being ranked: its row, its length in words and its query words' counts."""

    row: Row[Any]
    length: int
    counts: dict[str, int]
    every: bool
    phrase: bool


class _Search:
    """One search: estimate word frequencies, gather candidates, rank them."""

    def __init__(
        self,
        session: Session,
        index: Index,
        found: list[str],
        chunk_count: int,
        types: frozenset[str] | None,
        shown: set[int] | None,
        visible: bool | None,
    ) -> None:
        self.session = session
        self.index = index
        self.found = found
        self.phrase = f" {' '.join(found)} "
        self.terms = list(dict.fromkeys(found))
        self.chunk_count = chunk_count
        self.types = None if types is None else sorted(types)
        self.shown = shown
        self.visible = visible
        self.candidates: dict[int, _Candidate] = {}
        self.frequencies = self._frequencies()

    def _frequencies(self) -> dict[str, float]:
        """Each word's number of chunks: counted in the newest :data:`SAMPLE`, exact when the
        thread has no more, else scaled to the thread (a word not seen counts as half)."""
        first = max(1, self.chunk_count - SAMPLE + 1)
        counts = self.index.sample(self.terms, first)
        if first == 1:
            return {t: float(n) for t, n in zip(self.terms, counts, strict=True)}
        scale = self.chunk_count / (self.chunk_count - first + 1)
        return {
            t: min(float(self.chunk_count), (n or 0.5) * scale)
            for t, n in zip(self.terms, counts, strict=True)
        }

    def run(self, limit: int) -> tuple[SearchHit, ...]:
        size = max(POOL, limit)
        exact = self.chunk_count <= SAMPLE
        present = [t for t in self.terms if self.frequencies[t] > 0]
        by_rarity = sorted(present, key=lambda t: (self.frequencies[t], -len(t)))
        if len(present) == len(self.terms):
            self._add(self.index_pool(by_rarity[:DRIVERS], True, size))
        if sum(c.every for c in self.candidates.values()) < limit and by_rarity:
            chosen: list[str] = []
            read = 0.0
            for term in by_rarity:
                read += self.frequencies[term]
                if chosen and read > ANY_WORDS_READ and not exact:
                    break
                chosen.append(term)
            self._add(self.index_pool(chosen, False, size))
        return self._ranked(limit)

    def index_pool(self, terms: Sequence[str], every: bool, size: int) -> list[int]:
        """The newest ``size`` candidates holding every or any of ``terms``, not yet ranked,
        kept by ``visible``."""
        read = size if self.shown is None else max(size, VISIBLE_READ)
        seqs = self.index.pool(terms, every=every, types=self.types, limit=read)
        kept = [s for s in seqs if s not in self.candidates]
        if self.shown is not None:
            kept = [s for s in kept if (s in self.shown) == self.visible]
        return kept[:size]

    def _add(self, seqs: Sequence[int]) -> None:
        rows = rows_by_seq(self.session, self.index.thread_id, seqs)
        for seq in seqs:
            row = rows.get(seq)
            if row is not None:
                self.candidates[seq] = self._candidate(row)

    def _candidate(self, row: Row[Any]) -> _Candidate:
        try:
            text = indexed_text(row.content, row.meta)
        except (TypeError, ValueError) as exc:
            where = f"thread {row.thread_id!r}, chunk #{row.seq}"
            raise StoreError(f"{where}: the database holds invalid JSON ({exc})") from None
        held = words(text)
        frequency = Counter(held)
        counts = {t: frequency[t] for t in self.terms}
        every = all(counts.values())
        phrase = every and (len(self.found) == 1 or self.phrase in f" {' '.join(held)} ")
        return _Candidate(row, len(held), counts, every, phrase)

    def _ranked(self, limit: int) -> tuple[SearchHit, ...]:
        if not self.candidates:
            return ()
        docs = float(self.chunk_count)
        weights = {}
        for term, frequency in self.frequencies.items():
            idf = math.log((docs - frequency + 0.5) / (frequency + 0.5))
            weights[term] = idf if idf > 0 else 1e-6  # as SQLite's bm25()
        average = max(1.0, sum(c.length for c in self.candidates.values()) / len(self.candidates))
        scored = []
        for seq, candidate in self.candidates.items():
            norm = _K1 * (1 - _B + _B * candidate.length / average)
            relevance = sum(
                weights[t] * n * (_K1 + 1) / (n + norm) for t, n in candidate.counts.items() if n
            )
            if not relevance:
                continue  # holds none of the words (a row the index matched on other words)
            tier = 2 if candidate.phrase else 1 if candidate.every else 0
            scored.append((tier, relevance, seq, candidate.row))
        scored.sort(key=lambda s: (s[0], s[1], s[2]), reverse=True)
        return tuple(
            SearchHit(row_to_chunk(row), tier + relevance / (1.0 + relevance), seq - 1)
            for tier, relevance, seq, row in scored[:limit]
        )
