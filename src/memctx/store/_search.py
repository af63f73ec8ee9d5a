"""``store.search``: the chunks of a thread's whole history that hold a query's words.

A query is text, never syntax: memctx splits it into words as the index does
(:func:`~memctx.store._search_index.words`; its first :data:`MAX_QUERY_WORDS`),
and each word goes to the database as a quoted term in a bound parameter, so
quotes, ``AND``/``OR``/``NOT``/``NEAR``, ``*``, ``:``, ``-``, parentheses or
SQL find the words they hold and nothing else. A query without a word (blank,
or only punctuation) finds nothing.

Ranking, alike on both backends: first the chunks holding the query's words as
a phrase (in order, adjacent), then those holding every word, then those
holding some; within each group by BM25 (k1 = 1.2, b = 0.75, as SQLite's
``bm25()``), newest first on a tie. On SQLite the BM25 statistics (chunk count,
word frequencies, average length) are FTS5's, over the whole database; on
PostgreSQL memctx computes the same formula over the thread (its chunk count,
and the matching chunks' frequencies and average length). Scores compare hits
of one search, not searches or backends.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from typing import Any, Final

import attrs
from sqlalchemy import Connection, bindparam, text
from sqlmodel import Session

from memctx._chunk import Chunk, ChunkType
from memctx._exceptions import StoreArgumentError
from memctx._validators import describe
from memctx.store._queries import check_thread_id, get_batch, get_thread
from memctx.store._row_reads import rows_by_seq, visible_seqs
from memctx.store._schema import row_to_chunk
from memctx.store._search_index import KEY_SHIFT, MAX_WORD, thread_key, words

MAX_QUERY_WORDS: Final = 64
"""Words of a query that are searched; the rest is ignored."""

DEFAULT_LIMIT: Final = 5
"""How many hits :meth:`~memctx.store.MemoryStore.search` returns when not told."""


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
    if not found:
        return ()
    shown: set[int] | None = None
    if visible is not None:
        shown = set(visible_seqs(session, get_batch(session, thread_id, thread.batch)))
    ranked = _ranked(
        session.connection(),
        thread_id,
        thread.last_seq,
        found,
        type_values,
        None if shown is None else limit,
    )
    picked: list[tuple[int, float]] = []
    for seq, score in ranked:
        if shown is None or (seq in shown) == visible:
            picked.append((seq, score))
            if len(picked) == limit:
                break
    rows = rows_by_seq(session, thread_id, [seq for seq, _ in picked])
    return tuple(SearchHit(row_to_chunk(rows[seq]), score, seq - 1) for seq, score in picked)


def _ranked(
    connection: Connection,
    thread_id: str,
    chunk_count: int,
    found: Sequence[str],
    types: frozenset[str] | None,
    limit: int | None,
) -> Iterator[tuple[int, float]]:
    """``(seq, score)`` of the matching chunks, best first (all of them when ``limit`` is None)."""
    if connection.dialect.name == "postgresql":
        found = [w[:MAX_WORD] for w in found]  # as the index holds them
        terms = list(dict.fromkeys(found))
        statement, params = _postgresql(thread_id, chunk_count, found, terms)
    else:
        key = thread_key(connection, thread_id)
        if key is None:  # not made by this schema: a corrupt database
            return
        statement, params = _sqlite(key, found, list(dict.fromkeys(found)))
    params["t"] = thread_id
    if types is not None:
        statement = (
            f"SELECT * FROM ({statement}) AS m WHERE EXISTS (SELECT 1 FROM memctx_chunks AS c "
            "WHERE c.thread_id = :t AND c.seq = m.seq AND c.type IN :types)"
        )
        params["types"] = sorted(types)
    statement += " ORDER BY phrase DESC, every DESC, relevance DESC, seq DESC"
    if limit is not None:
        statement += " LIMIT :n"
        params["n"] = limit
    compiled = text(statement)
    if types is not None:
        compiled = compiled.bindparams(bindparam("types", expanding=True))
    for seq, phrase, every, relevance in connection.execute(compiled, params):
        tier = 2 if phrase else 1 if every else 0
        yield int(seq), tier + relevance / (1.0 + relevance)


def _sqlite(key: int, found: Sequence[str], terms: Sequence[str]) -> tuple[str, dict[str, Any]]:
    """FTS5: one MATCH for any word ranked by ``bm25()``, and two for the groups."""
    quoted = [f'"{t}"' for t in terms]  # words hold letters and digits only
    in_thread = "memctx_search MATCH :{} AND rowid BETWEEN :lo AND :hi"
    statement = (
        "SELECT rowid - :lo AS seq, "
        f"rowid IN (SELECT rowid FROM memctx_search WHERE {in_thread.format('phrase')}) AS phrase, "
        f"rowid IN (SELECT rowid FROM memctx_search WHERE {in_thread.format('every')}) AS every, "
        "-bm25(memctx_search) AS relevance "
        f"FROM memctx_search WHERE {in_thread.format('any')}"
    )
    params: dict[str, Any] = {
        "lo": key * KEY_SHIFT,
        "hi": key * KEY_SHIFT + KEY_SHIFT - 1,
        "any": " OR ".join(quoted),
        "every": " AND ".join(quoted),
        "phrase": '"' + " ".join(found) + '"',
    }
    return statement, params


def _postgresql(
    thread_id: str, chunk_count: int, found: Sequence[str], terms: Sequence[str]
) -> tuple[str, dict[str, Any]]:
    """A ``tsvector`` search by the GIN index, and BM25 computed from its frequencies."""
    quoted = [f"'{t}'" for t in terms]  # words hold letters and digits only
    frequencies = ", ".join(
        f"CAST(ts_rank_cd('{{1,1,1,1}}', s.vector, CAST(:q{i} AS tsquery), 0) AS float8) AS f{i}"
        for i in range(len(terms))
    )
    counts = ", ".join(
        f"CAST(count(*) FILTER (WHERE f{i} > 0) AS float8) AS d{i}" for i in range(len(terms))
    )
    relevance = " + ".join(
        f"greatest(ln((:docs - d{i} + 0.5) / (d{i} + 0.5)), 1e-6) * f{i} * 2.2 "
        f"/ (f{i} + 1.2 * (0.25 + 0.75 * cand.length / stats.avgdl))"
        for i in range(len(terms))
    )
    statement = (
        "WITH cand AS (SELECT s.seq, s.length, "
        "s.vector @@ CAST(:phrase AS tsquery) AS phrase, "
        f"s.vector @@ CAST(:every AS tsquery) AS every, {frequencies} "
        "FROM memctx_search AS s WHERE s.thread_id = :t AND s.vector @@ CAST(:any AS tsquery)), "
        "stats AS (SELECT greatest(CAST(avg(length) AS float8), 1.0) AS avgdl, "
        f"{counts} FROM cand) "
        f"SELECT cand.seq, cand.phrase, cand.every, {relevance} AS relevance "
        "FROM cand CROSS JOIN stats"
    )
    params: dict[str, Any] = {
        "docs": float(chunk_count),
        "any": " | ".join(quoted),
        "every": " & ".join(quoted),
        "phrase": " <-> ".join(f"'{w}'" for w in found),
    }
    params.update((f"q{i}", q) for i, q in enumerate(quoted))
    return statement, params
