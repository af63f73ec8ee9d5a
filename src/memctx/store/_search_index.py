"""The full-text index of every stored chunk, written with the chunk in the same transaction.

What a chunk is found by (:func:`chunk_words`): the words of its content (text
as is; JSON content by its keys and values, not its escapes) and of its
``tool``, ``skill`` and ``call_id`` metadata. A word is a run of Unicode
letters and digits (``jsonrep.py`` is ``jsonrep`` and ``py``, ``KeyError`` is
``keyerror``), case-folded and cut at :data:`MAX_WORD` characters. memctx
splits the words itself, for both backends alike, so a query finds the same
chunks on either; of a chunk longer than :data:`MAX_INDEXED` characters, the
first and last halves of that are indexed (a long log keeps its end, where
errors are).

SQLite: an FTS5 table ``memctx_search`` (``ascii`` tokenizer over memctx's own
words, so FTS5 splits nothing further), one row per chunk whose ``rowid`` is
the thread's search key (``memctx_search_threads``) times 2³² plus the chunk's
sequence number: a thread's rows are one rowid range, which a search reads and
a trigger deletes with the thread.

PostgreSQL: a table ``memctx_search`` of ``(thread_id, seq, length, vector)``,
the vector a ``tsvector`` built from memctx's words and their positions (no
text search configuration is involved, so there is no stemming and no stop
word, as on SQLite), with a GIN index; its rows go with their chunk rows
(``ON DELETE CASCADE``). PostgreSQL keeps at most 256 positions per word and
none past 16,383: a phrase later in a very long chunk is found as its words.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator, Mapping, Sequence
from typing import Any, Final

from sqlalchemy import Connection, bindparam, text

MAX_WORD: Final = 100
"""Characters of a word that are indexed and searched (a longer word is cut there)."""

MAX_INDEXED: Final = 100_000
"""Characters of a chunk's text that are indexed: the first and the last half of this."""

KEY_SHIFT: Final = 2**32
"""SQLite: a chunk's ``rowid`` in ``memctx_search`` is ``thread key * KEY_SHIFT + seq``."""

_WORD: Final = re.compile(r"[^\W_]+")
_METADATA_WORDS: Final = ("tool", "skill", "call_id")

_SQLITE_DDL: Final = (
    "CREATE TABLE memctx_search_threads (key INTEGER PRIMARY KEY, thread_id VARCHAR NOT NULL "
    "UNIQUE REFERENCES memctx_threads (id) ON DELETE CASCADE)",
    "CREATE VIRTUAL TABLE memctx_search USING fts5(body, tokenize = 'ascii')",
    f"CREATE TRIGGER memctx_search_thread_deleted AFTER DELETE ON memctx_search_threads "
    f"BEGIN DELETE FROM memctx_search WHERE rowid BETWEEN old.key * {KEY_SHIFT} "
    f"AND old.key * {KEY_SHIFT} + {KEY_SHIFT - 1}; END",
)
_POSTGRESQL_DDL: Final = (
    "CREATE TABLE memctx_search (thread_id VARCHAR NOT NULL, seq INTEGER NOT NULL, "
    "length INTEGER NOT NULL, vector tsvector NOT NULL, PRIMARY KEY (thread_id, seq), "
    "FOREIGN KEY (thread_id, seq) REFERENCES memctx_chunks (thread_id, seq) ON DELETE CASCADE)",
    "CREATE INDEX memctx_search_vector ON memctx_search USING gin (vector)",
)
_KEY_OF: Final = text("SELECT key FROM memctx_search_threads WHERE thread_id = :t")
_NEW_KEY: Final = text("INSERT INTO memctx_search_threads (thread_id) VALUES (:t)")
_SQLITE_INSERT: Final = text("INSERT INTO memctx_search (rowid, body) VALUES (:rowid, :body)")
_POSTGRESQL_INSERT: Final = text(
    "INSERT INTO memctx_search (thread_id, seq, length, vector) "
    "VALUES (:t, :s, :length, CAST(:vector AS tsvector))"
)
_FILL_PAGE: Final = 2_000
_ALL_ROWS: Final = text(
    "SELECT thread_id, seq, content, metadata AS meta FROM memctx_chunks "
    "WHERE thread_id > :t OR (thread_id = :t AND seq > :s) ORDER BY thread_id, seq LIMIT :n"
).bindparams(bindparam("n"))


def words(text: str) -> list[str]:
    """The words of ``text`` as the index holds them: case-folded runs of letters and digits."""
    return [w if len(w) <= MAX_WORD else w[:MAX_WORD] for w in _WORD.findall(text.casefold())]


def _json_words(value: Any) -> Iterator[str]:
    """The keys and scalar values of a JSON value, as text."""
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for key, item in value.items():
            yield key
            yield from _json_words(item)
    elif isinstance(value, list):
        for item in value:
            yield from _json_words(item)
    elif value is not None and not isinstance(value, bool):
        yield str(value)


def indexed_text(content: str, meta: str) -> str:
    """What the index holds of a chunk, from its stored ``content`` and ``metadata`` JSON text."""
    value = json.loads(content)
    found = value if isinstance(value, str) else " ".join(_json_words(value))
    if len(found) > MAX_INDEXED:
        half = MAX_INDEXED // 2
        found = f"{found[:half]} {found[-half:]}"
    if meta != "{}":
        metadata = json.loads(meta)
        names = [metadata[k] for k in _METADATA_WORDS if isinstance(metadata.get(k), str)]
        if names:
            found = " ".join((found, *names))
    return found


def tsvector_literal(found: Sequence[str]) -> str:
    """The ``tsvector`` of ``found`` words with their positions (1, 2, ...).

    Words are letters and digits only, so none needs escaping inside quotes.
    """
    positions: dict[str, list[str]] = {}
    for position, word in enumerate(found, 1):
        at = positions.setdefault(word, [])
        if len(at) < 256 and position <= 16383:
            at.append(str(position))
    return " ".join(f"'{w}':{','.join(p) or '16383'}" for w, p in positions.items())


# -- the index's tables -----------------------------------------------------------------------


def create_index(connection: Connection) -> None:
    """Create the index's tables (new database, or the migration to schema version 4)."""
    ddl = _POSTGRESQL_DDL if connection.dialect.name == "postgresql" else _SQLITE_DDL
    for statement in ddl:
        connection.execute(text(statement))


def thread_key(connection: Connection, thread_id: str, *, create: bool) -> int | None:
    """SQLite: the thread's search key (made on its first indexed chunk when ``create``)."""
    key = connection.execute(_KEY_OF, {"t": thread_id}).scalar()
    if key is None and create:
        connection.execute(_NEW_KEY, {"t": thread_id})
        key = connection.execute(_KEY_OF, {"t": thread_id}).scalar()
    return None if key is None else int(key)


def index_rows(
    connection: Connection, thread_id: str, first_seq: int, rows: Sequence[Mapping[str, Any]]
) -> None:
    """Index chunk rows (column values) stored as ``first_seq``, ``+1``, ... in the caller's
    transaction: the one way index rows are written."""
    if not rows:
        return
    texts = [words(indexed_text(r["content"], r["meta"])) for r in rows]
    if connection.dialect.name == "postgresql":
        connection.execute(
            _POSTGRESQL_INSERT,
            [
                {"t": thread_id, "s": seq, "length": len(w), "vector": tsvector_literal(w)}
                for seq, w in enumerate(texts, first_seq)
            ],
        )
        return
    key = thread_key(connection, thread_id, create=True)
    assert key is not None
    base = key * KEY_SHIFT
    connection.execute(
        _SQLITE_INSERT,
        [{"rowid": base + seq, "body": " ".join(w)} for seq, w in enumerate(texts, first_seq)],
    )


def fill_index(connection: Connection) -> None:
    """Index every stored chunk, a page of rows at a time (the migration to version 4)."""
    last: tuple[str, int] = ("", -1)
    while True:
        rows = connection.execute(_ALL_ROWS, {"t": last[0], "s": last[1], "n": _FILL_PAGE}).all()
        if not rows:
            return
        start = 0
        for end in range(1, len(rows) + 1):  # runs of consecutive rows of one thread
            if end == len(rows) or (rows[end].thread_id, rows[end].seq) != (
                rows[end - 1].thread_id,
                rows[end - 1].seq + 1,
            ):
                run = rows[start:end]
                values = [{"content": r.content, "meta": r.meta} for r in run]
                index_rows(connection, run[0].thread_id, run[0].seq, values)
                start = end
        last = (rows[-1].thread_id, rows[-1].seq)
