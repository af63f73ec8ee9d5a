"""The full-text index of every stored chunk, written with the chunk in the same transaction.

What a chunk is found by: the text of its content (text as is; JSON content
by its keys and its string and number values, not its escapes), then its
``tool``, ``skill`` and ``call_id`` metadata. Of a content text longer than
:data:`MAX_INDEXED` characters, the first and the last half of that are
indexed (a long log keeps its end, where errors are). A word is a run of
Unicode letters and digits, lower-cased: ``jsonrep.py`` is ``jsonrep`` and
``py``, ``KeyError`` is ``keyerror``, ``test_io`` is ``test`` and ``io``.

SQLite: a contentless FTS5 table ``memctx_search`` (``unicode61`` words,
diacritics kept), one row per chunk whose ``rowid`` is the thread's search key
(``memctx_search_threads``, made with the thread by a trigger) times 2³² plus
the chunk's sequence number, so a thread's rows are one rowid range. Its text
is computed by SQLite itself from the chunk row (:data:`_SQLITE_TEXT`, JSON
functions), when the row is inserted and, to remove it, when its thread is
deleted (a trigger).

PostgreSQL: a table ``memctx_search`` of ``(thread_id, seq, length, vector)``
whose ``tsvector`` memctx builds from the same words (:func:`words`) and their
positions, so no text search configuration is involved (no stemming, no stop
words, as on SQLite); a GIN index on it; its rows go with their chunk rows
(``ON DELETE CASCADE``). PostgreSQL keeps at most 256 positions per word and
none past 16,383 (a phrase later in a very long chunk is found as its words),
and cuts words at :data:`MAX_WORD` characters.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator, Mapping, Sequence
from typing import Any, Final

from sqlalchemy import Connection, text

MAX_WORD: Final = 100
"""PostgreSQL: characters of a word that are indexed and searched (a longer one is cut)."""

MAX_INDEXED: Final = 100_000
"""Characters of a chunk's content text that are indexed: the first and the last half of this."""

KEY_SHIFT: Final = 2**32
"""SQLite: a chunk's ``rowid`` in ``memctx_search`` is ``thread key * KEY_SHIFT + seq``."""

_WORD: Final = re.compile(r"[^\W_]+")
_METADATA_WORDS: Final = ("tool", "skill", "call_id")
_HALF: Final = MAX_INDEXED // 2

_SQLITE_CONTENT: Final = (
    "CASE json_type(c.content) WHEN 'text' THEN json_extract(c.content, '$') ELSE "
    "(SELECT group_concat(coalesce(CASE WHEN typeof(key) = 'text' THEN key END, '') || ' ' || "
    "coalesce(CASE WHEN type IN ('text', 'integer', 'real') THEN atom END, ''), ' ') "
    "FROM json_tree(c.content)) END"
)
_SQLITE_TEXT: Final = (
    f"(SELECT CASE WHEN length(t) > {MAX_INDEXED} THEN substr(t, 1, {_HALF}) || ' ' || "
    f"substr(t, -{_HALF}) ELSE t END FROM (SELECT {_SQLITE_CONTENT} AS t))"
    + "".join(
        f" || ' ' || coalesce(json_extract(c.metadata, '$.{k}'), '')" for k in _METADATA_WORDS
    )
)
"""The text SQLite indexes of the chunk row ``c``: one expression, for insert and delete alike
(a contentless FTS5 row is deleted by giving the text it was indexed with)."""

_SQLITE_DDL: Final = (
    "CREATE TABLE memctx_search_threads (key INTEGER PRIMARY KEY, thread_id VARCHAR NOT NULL "
    "UNIQUE REFERENCES memctx_threads (id) ON DELETE CASCADE)",
    "CREATE VIRTUAL TABLE memctx_search USING fts5(body, content = '', "
    "tokenize = 'unicode61 remove_diacritics 0')",
    "CREATE TRIGGER memctx_search_thread_created AFTER INSERT ON memctx_threads BEGIN "
    "INSERT INTO memctx_search_threads (thread_id) VALUES (new.id); END",
    "CREATE TRIGGER memctx_search_thread_deleted BEFORE DELETE ON memctx_threads BEGIN "
    "INSERT INTO memctx_search (memctx_search, rowid, body) "
    f"SELECT 'delete', k.key * {KEY_SHIFT} + c.seq, {_SQLITE_TEXT} "
    "FROM memctx_search_threads AS k JOIN memctx_chunks AS c ON c.thread_id = k.thread_id "
    "WHERE k.thread_id = old.id; END",
)
_POSTGRESQL_DDL: Final = (
    "CREATE TABLE memctx_search (thread_id VARCHAR NOT NULL, seq INTEGER NOT NULL, "
    "length INTEGER NOT NULL, vector tsvector NOT NULL, PRIMARY KEY (thread_id, seq), "
    "FOREIGN KEY (thread_id, seq) REFERENCES memctx_chunks (thread_id, seq) ON DELETE CASCADE)",
    "CREATE INDEX memctx_search_vector ON memctx_search USING gin (vector)",
)
_KEY_OF: Final = text("SELECT key FROM memctx_search_threads WHERE thread_id = :t")
_SQLITE_INSERT: Final = text(
    f"INSERT INTO memctx_search (rowid, body) SELECT k.key * {KEY_SHIFT} + c.seq, {_SQLITE_TEXT} "
    "FROM memctx_search_threads AS k JOIN memctx_chunks AS c ON c.thread_id = k.thread_id "
    "WHERE k.thread_id = :t AND c.seq BETWEEN :first AND :last"
)
_SQLITE_FILL: Final = text(
    "INSERT INTO memctx_search_threads (thread_id) SELECT id FROM memctx_threads"
)
_SQLITE_FILL_ALL: Final = text(
    f"INSERT INTO memctx_search (rowid, body) SELECT k.key * {KEY_SHIFT} + c.seq, {_SQLITE_TEXT} "
    "FROM memctx_search_threads AS k JOIN memctx_chunks AS c ON c.thread_id = k.thread_id"
)
_POSTGRESQL_INSERT: Final = text(
    "INSERT INTO memctx_search (thread_id, seq, length, vector) "
    "VALUES (:t, :s, :length, CAST(:vector AS tsvector))"
)
_FILL_PAGE: Final = 2_000
_PAGE_OF_ROWS: Final = text(
    "SELECT thread_id, seq, content, metadata AS meta FROM memctx_chunks "
    "WHERE thread_id > :t OR (thread_id = :t AND seq > :s) ORDER BY thread_id, seq LIMIT :n"
)


def words(text: str, *, cut: bool = True) -> list[str]:
    """The words of ``text`` (runs of letters and digits), lower-cased as SQLite's
    ``unicode61`` does; cut at :data:`MAX_WORD` characters unless ``cut`` is false."""
    found: list[str] = _WORD.findall(text.lower())
    if not cut:
        return found
    return [w if len(w) <= MAX_WORD else w[:MAX_WORD] for w in found]


def _json_text(value: Any) -> Iterator[str]:
    """The keys and the string and number values of a JSON value (as SQLite's ``json_tree``)."""
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for key, item in value.items():
            yield key
            yield from _json_text(item)
    elif isinstance(value, list):
        for item in value:
            yield from _json_text(item)
    elif isinstance(value, int | float) and not isinstance(value, bool):
        yield str(value)


def indexed_text(content: str, meta: str) -> str:
    """The text the index holds of a chunk, from its stored ``content`` and ``metadata`` JSON
    (what :data:`_SQLITE_TEXT` computes in SQLite)."""
    value = json.loads(content)
    found = value if isinstance(value, str) else " ".join(_json_text(value))
    if len(found) > MAX_INDEXED:
        found = f"{found[:_HALF]} {found[-_HALF:]}"
    if meta == "{}":
        return found
    metadata = json.loads(meta)
    names = [metadata[k] for k in _METADATA_WORDS if isinstance(metadata.get(k), str)]
    return " ".join((found, *names))


def tsvector_literal(found: Sequence[str]) -> str:
    """The ``tsvector`` of the words ``found``, at positions 1, 2, ...

    Words hold letters and digits only, so none needs escaping inside its
    quotes. Positions past PostgreSQL's limits are left out here, as
    PostgreSQL would drop them.
    """
    positions: dict[str, list[str]] = {}
    for position, word in enumerate(found, 1):
        at = positions.setdefault(word, [])
        if len(at) < 256 and position <= 16383:
            at.append(str(position))
    return " ".join(f"'{w}':{','.join(p)}" if p else f"'{w}'" for w, p in positions.items())


# -- the index's tables -----------------------------------------------------------------------


def create_index(connection: Connection) -> None:
    """Create the index's tables (new database, or the migration to schema version 4)."""
    ddl = _POSTGRESQL_DDL if connection.dialect.name == "postgresql" else _SQLITE_DDL
    for statement in ddl:
        connection.execute(text(statement))


def thread_key(connection: Connection, thread_id: str) -> int | None:
    """SQLite: the thread's search key (made with the thread, by a trigger)."""
    key = connection.execute(_KEY_OF, {"t": thread_id}).scalar()
    return None if key is None else int(key)


def index_rows(
    connection: Connection, thread_id: str, first_seq: int, rows: Sequence[Mapping[str, Any]]
) -> None:
    """Index the chunk rows just stored as ``first_seq``, ``+1``, ... (their column values),
    in the caller's transaction: the one way index rows are written."""
    if not rows:
        return
    if connection.dialect.name == "postgresql":
        values = [_vector_row(thread_id, seq, row) for seq, row in enumerate(rows, first_seq)]
        connection.execute(_POSTGRESQL_INSERT, values)
        return
    last = first_seq + len(rows) - 1
    connection.execute(_SQLITE_INSERT, {"t": thread_id, "first": first_seq, "last": last})


def _vector_row(thread_id: str, seq: int, row: Mapping[str, Any]) -> dict[str, Any]:
    """PostgreSQL: the index row of a chunk row's ``content`` and ``meta``."""
    found = words(indexed_text(row["content"], row["meta"]))
    return {"t": thread_id, "s": seq, "length": len(found), "vector": tsvector_literal(found)}


def fill_index(connection: Connection) -> None:
    """Index every stored chunk (the migration to schema version 4)."""
    if connection.dialect.name != "postgresql":
        connection.execute(_SQLITE_FILL)
        connection.execute(_SQLITE_FILL_ALL)
        return
    last: tuple[str, int] = ("", -1)
    while True:
        params = {"t": last[0], "s": last[1], "n": _FILL_PAGE}
        rows = connection.execute(_PAGE_OF_ROWS, params).all()
        if not rows:
            return
        connection.execute(
            _POSTGRESQL_INSERT,
            [
                _vector_row(row.thread_id, row.seq, {"content": row.content, "meta": row.meta})
                for row in rows
            ],
        )
        last = (rows[-1].thread_id, rows[-1].seq)
