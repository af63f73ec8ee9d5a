"""``store.search``: the chunks of a thread's whole history that hold a query's words.

A query is text, never syntax: memctx splits it into words as the index does
(:func:`~memctx.store._search_index.words`; its first :data:`MAX_QUERY_WORDS`),
and each word goes to the database as a quoted term in a bound parameter, so
quotes, ``AND``/``OR``/``NOT``/``NEAR``, ``*``, ``:``, ``-``, parentheses or
SQL find the words they hold and nothing else. A query without a word (blank,
or only punctuation) finds nothing.

Ranking, the same on both backends (computed here, from the same words,
:mod:`memctx.store._search_match`): first the chunks holding the query's words
as a phrase (in order, adjacent), then those holding every word, then those
holding some; within each group by BM25 (k1 = 1.2, b = 0.75; a chunk's length
is that of its words and the spaces between them), newest first on a tie.

What is ranked, so that a search costs about the same at any thread length
(the index tells only which chunks hold a word; counts, lengths and phrases
are read from the candidates' text):

1. Word frequencies (BM25's document frequencies) are counted among the
   thread's newest :data:`SAMPLE` chunks: exact in a thread no longer than
   that, estimated in a longer one.
2. The candidates for the phrase and every-word groups are the newest
   :data:`POOL` chunks holding the :data:`DRIVERS` rarest words.
3. When those give fewer than ``limit`` hits, the words are taken in groups,
   rarest first, whose estimated chunks add up to :data:`POOL` (or one word),
   and the newest :data:`POOL` chunks holding some words of a group are
   candidates, group after group (at most :data:`ANY_POOLS`) while fewer than
   ``limit`` chunks are found: a word in most chunks of a long thread does not
   crowd out the rarer ones.
4. Of each kind of candidates, the newest are read until their text adds up to
   :data:`TEXT_READ` characters.

So where more chunks match than that, the best of the newest are found.
``types`` is applied by the index; ``visible`` to the newest
:data:`VISIBLE_READ` candidates of each kind.
"""

from __future__ import annotations

import math
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
from memctx.store._search_match import Match, QueryWords
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

ANY_POOLS: Final = 3
"""Groups of words (rarest first) whose chunks are candidates when fewer than ``limit`` hit."""

TEXT_READ: Final = 150_000
"""Characters of candidates' text read per kind of candidate (newest first; at least
``limit`` candidates are read)."""

VISIBLE_READ: Final = 8 * POOL
"""With ``visible=``, the newest candidates of each kind that are read to keep those shown
(or hidden)."""

_K1: Final = 1.2
_B: Final = 0.75
_ROWS_READ: Final = 20


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
    return words(query)[:MAX_QUERY_WORDS], limit, _types(types), visible


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


@attrs.frozen
class _Candidate:
    """A chunk being ranked: its row and how it holds the query's words."""

    row: Row[Any]
    match: Match


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
        self.query = QueryWords(found)
        self.terms = self.query.terms
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
        present = [t for t in self.terms if self.frequencies[t] > 0]
        by_rarity = sorted(present, key=lambda t: (self.frequencies[t], -len(t)))
        if len(present) == len(self.terms):
            self._read(self._pool(by_rarity[:DRIVERS], True, limit), limit)
        if sum(c.match.every for c in self.candidates.values()) < limit:
            for number, group in enumerate(self._groups(by_rarity)):
                if number == ANY_POOLS or (number and len(self.candidates) >= limit):
                    break
                self._read(self._pool(group, False, limit), limit)
        return self._ranked(limit)

    def _groups(self, by_rarity: Sequence[str]) -> list[list[str]]:
        """The words in groups, rarest first, whose estimated chunks add up to at most
        :data:`POOL` (or one word): each group finds the chunks holding some of its words."""
        groups: list[list[str]] = []
        total = 0.0
        for term in by_rarity:
            frequency = self.frequencies[term]
            if not groups or total + frequency > POOL:
                groups.append([])
                total = 0.0
            groups[-1].append(term)
            total += frequency
        return groups

    def _pool(self, terms: Sequence[str], every: bool, limit: int) -> list[int]:
        """The newest candidates holding every or any of ``terms``, not yet read, kept by
        ``visible``."""
        size = max(POOL, limit)
        read = size if self.shown is None else max(size, VISIBLE_READ)
        seqs = self.index.pool(terms, every=every, types=self.types, limit=read)
        kept = [s for s in seqs if s not in self.candidates]
        if self.shown is not None:
            kept = [s for s in kept if (s in self.shown) == self.visible]
        return kept[:size]

    def _read(self, seqs: Sequence[int], limit: int) -> None:
        """Read and match the candidates ``seqs``, newest first, until their text adds up
        to :data:`TEXT_READ` characters (and at least ``limit`` of them are read)."""
        read = taken = 0
        for start in range(0, len(seqs), _ROWS_READ):
            part = seqs[start : start + _ROWS_READ]
            rows = rows_by_seq(self.session, self.index.thread_id, part)
            for seq in part:
                if read >= TEXT_READ and taken >= limit:
                    return
                row = rows.get(seq)
                if row is None:
                    continue
                try:
                    text = indexed_text(row.content, row.meta)
                except (TypeError, ValueError) as exc:
                    where = f"thread {row.thread_id!r}, chunk #{row.seq}"
                    raise StoreError(f"{where}: the database holds invalid JSON ({exc})") from None
                self.candidates[seq] = _Candidate(row, self.query.match(text))
                read += len(text)
                taken += 1

    def _ranked(self, limit: int) -> tuple[SearchHit, ...]:
        if not self.candidates:
            return ()
        docs = float(self.chunk_count)
        weights = {}
        for term, frequency in self.frequencies.items():
            idf = math.log((docs - frequency + 0.5) / (frequency + 0.5))
            weights[term] = idf if idf > 0 else 1e-6  # as SQLite's bm25()
        matches = [c.match for c in self.candidates.values()]
        average = max(1.0, sum(m.length for m in matches) / len(matches))
        scored = []
        for seq, candidate in self.candidates.items():
            match = candidate.match
            norm = _K1 * (1 - _B + _B * match.length / average)
            relevance = sum(
                weights[t] * n * (_K1 + 1) / (n + norm) for t, n in match.counts.items() if n
            )
            if not relevance:
                continue  # holds none of the words (a row the index matched on other words)
            tier = 2 if match.phrase else 1 if match.every else 0
            scored.append((tier, relevance, seq, candidate.row))
        scored.sort(key=lambda s: (s[0], s[1], s[2]), reverse=True)
        return tuple(
            SearchHit(row_to_chunk(row), tier + relevance / (1.0 + relevance), seq - 1)
            for tier, relevance, seq, row in scored[:limit]
        )
