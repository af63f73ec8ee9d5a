"""The full-text index of every stored chunk, written with the chunk in the same transaction.

What a chunk is found by: the text of its content (text as is; JSON content
by its keys and its string and number values, not its escapes), then its
``tool``, ``skill`` and ``call_id`` metadata. Of a content text longer than
:data:`MAX_INDEXED` characters, the first and the last half of that are
indexed (a long log keeps its end, where errors are). A word is a run of
Unicode letters and digits, lower-cased: ``jsonrep.py`` is ``jsonrep`` and
``py``, ``KeyError`` is ``keyerror``, ``test_io`` is ``test`` and ``io``.

The index says which chunks hold a word, nothing more (no positions, no
counts): phrases, counts and lengths for the ranking are read from the few
chunks a search ranks (:mod:`memctx.store._search`), which keeps an append's
index write small. Each thread has a search key (``memctx_search_threads``,
made with the thread by a trigger, never reused), so a search reads only its
thread's part of the index.

SQLite: a contentless FTS5 table ``memctx_search`` (``unicode61`` words,
diacritics kept, ``detail=none``), one row per chunk whose ``rowid`` is the
thread's key times 2³² plus the chunk's sequence number, so a thread's rows
are one rowid range. Its text is computed by SQLite itself from the chunk row
(:data:`_SQLITE_TEXT`, JSON functions), when the row is inserted and, to
remove it, when its thread is deleted (a trigger).

PostgreSQL: a table ``memctx_search`` of ``(key, seq, terms)`` whose
``tsvector`` holds the chunk's distinct words (:func:`words`, so no text
search configuration is involved: no stemming, no stop words, as on SQLite),
each prefixed by the thread's key (``7:keyerror``), with a GIN index: a word's
entry lists only its thread's chunks. Words are cut at :data:`MAX_WORD`
characters. A thread's rows go with its key row (a trigger).
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping, Sequence
from typing import Any, Final

from sqlalchemy import Connection, text

MAX_WORD: Final = 100
"""Characters of a word that are indexed and searched: a longer query word finds the words
that begin with its first ``MAX_WORD`` characters (on both backends)."""

MAX_INDEXED: Final = 100_000
"""Characters of a chunk's content text that are indexed: the first and the last half of this."""

KEY_SHIFT: Final = 2**32
"""SQLite: a chunk's ``rowid`` in ``memctx_search`` is ``thread key * KEY_SHIFT + seq``."""

_ASCII_WORDS: Final = bytes(
    (ord(chr(c).lower()) if chr(c).isalnum() else 32) if c < 128 else c for c in range(256)
)
"""Bytes to words: ASCII letters lower-cased, digits kept, other ASCII a space, the rest kept."""
_ASCII: Final = bytes(range(128))
_METADATA_WORDS: Final = ("tool", "skill", "call_id")
_HALF: Final = MAX_INDEXED // 2
_MAX_TERMS_TEXT: Final = 600_000
"""PostgreSQL: characters of a chunk's distinct words that are indexed (a ``tsvector`` holds
at most 1 MB; only metadata of extraordinary length comes near it)."""

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

SQLITE_TABLE: Final = (
    "CREATE VIRTUAL TABLE memctx_search USING fts5(body, content = '', detail = none, "
    "tokenize = 'unicode61 remove_diacritics 0')"
)
"""SQLite: the index's FTS5 table (also made alone by ``benchmarks.recall``, to measure it)."""
_SQLITE_DDL: Final = (
    "CREATE TABLE memctx_search_threads (key INTEGER PRIMARY KEY AUTOINCREMENT, "
    "thread_id VARCHAR NOT NULL UNIQUE REFERENCES memctx_threads (id) ON DELETE CASCADE)",
    SQLITE_TABLE,
    "CREATE TRIGGER memctx_search_thread_created AFTER INSERT ON memctx_threads BEGIN "
    "INSERT INTO memctx_search_threads (thread_id) VALUES (new.id); END",
    "CREATE TRIGGER memctx_search_thread_deleted BEFORE DELETE ON memctx_threads BEGIN "
    "INSERT INTO memctx_search (memctx_search, rowid, body) "
    f"SELECT 'delete', k.key * {KEY_SHIFT} + c.seq, {_SQLITE_TEXT} "
    "FROM memctx_search_threads AS k JOIN memctx_chunks AS c ON c.thread_id = k.thread_id "
    "WHERE k.thread_id = old.id; END",
)
_POSTGRESQL_DDL: Final = (
    "CREATE TABLE memctx_search_threads (key SERIAL PRIMARY KEY, thread_id VARCHAR NOT NULL "
    "UNIQUE REFERENCES memctx_threads (id) ON DELETE CASCADE)",
    "CREATE TABLE memctx_search (key INTEGER NOT NULL, seq INTEGER NOT NULL, "
    "terms tsvector NOT NULL, PRIMARY KEY (key, seq))",
    "CREATE INDEX memctx_search_terms ON memctx_search USING gin (terms)",
    "CREATE FUNCTION memctx_search_thread_created() RETURNS trigger LANGUAGE plpgsql "
    "SET search_path FROM CURRENT AS $$ BEGIN "
    "INSERT INTO memctx_search_threads (thread_id) VALUES (NEW.id); RETURN NULL; END $$",
    "CREATE TRIGGER memctx_search_thread_created AFTER INSERT ON memctx_threads "
    "FOR EACH ROW EXECUTE PROCEDURE memctx_search_thread_created()",
    "CREATE FUNCTION memctx_search_thread_deleted() RETURNS trigger LANGUAGE plpgsql "
    "SET search_path FROM CURRENT AS $$ BEGIN "
    "DELETE FROM memctx_search WHERE key = OLD.key; RETURN NULL; END $$",
    "CREATE TRIGGER memctx_search_thread_deleted AFTER DELETE ON memctx_search_threads "
    "FOR EACH ROW EXECUTE PROCEDURE memctx_search_thread_deleted()",
)
_KEY_OF: Final = text("SELECT key FROM memctx_search_threads WHERE thread_id = :t")
_FILL_KEYS: Final = text(
    "INSERT INTO memctx_search_threads (thread_id) SELECT id FROM memctx_threads ORDER BY id"
)
_SQLITE_INSERT: Final = text(
    f"INSERT INTO memctx_search (rowid, body) SELECT k.key * {KEY_SHIFT} + c.seq, {_SQLITE_TEXT} "
    "FROM memctx_search_threads AS k JOIN memctx_chunks AS c ON c.thread_id = k.thread_id "
    "WHERE k.thread_id = :t AND c.seq BETWEEN :first AND :last"
)
_SQLITE_FILL_ALL: Final = text(
    f"INSERT INTO memctx_search (rowid, body) SELECT k.key * {KEY_SHIFT} + c.seq, {_SQLITE_TEXT} "
    "FROM memctx_search_threads AS k JOIN memctx_chunks AS c ON c.thread_id = k.thread_id"
)
# Each chunk's words come space-separated; PostgreSQL prefixes each with the thread's key.
_POSTGRESQL_INSERT: Final = text(
    "INSERT INTO memctx_search (key, seq, terms) SELECT k.key, u.s, CASE WHEN u.w = '' "
    "THEN CAST('' AS tsvector) ELSE array_to_tsvector(string_to_array(k.p || "
    "replace(u.w, ' ', ' ' || k.p), ' ')) END "
    "FROM (SELECT key, CAST(key AS text) || ':' AS p FROM memctx_search_threads "
    "WHERE thread_id = :t) AS k, unnest(CAST(:seqs AS integer[]), CAST(:words AS text[])) "
    "AS u (s, w)"
)
_FILL_PAGE: Final = 2_000
_PAGE_OF_ROWS: Final = text(
    "SELECT thread_id, seq, content, metadata AS meta FROM memctx_chunks "
    "WHERE thread_id > :t OR (thread_id = :t AND seq > :s) ORDER BY thread_id, seq LIMIT :n"
)


def spaced_words(text: str) -> bytes:
    """The words of ``text`` (runs of letters and digits, lower-cased as SQLite's
    ``unicode61`` does) in UTF-8, separated by spaces (one or more): ASCII by one byte
    translation, other characters by whether each distinct one is a letter or digit."""
    if text.isascii():
        return text.encode("ascii").translate(_ASCII_WORDS)
    raw = text.lower().encode("utf-8", "surrogatepass")
    spaced = raw.translate(_ASCII_WORDS)
    for char in set(raw.translate(None, _ASCII).decode("utf-8", "surrogatepass")):
        if not char.isalnum():
            spaced = spaced.replace(char.encode("utf-8", "surrogatepass"), b" ")
    return spaced


def words(text: str, *, cut: bool = True) -> list[str]:
    """The words of ``text`` (:func:`spaced_words`), cut at :data:`MAX_WORD` characters
    unless ``cut`` is false."""
    found = spaced_words(text).decode("utf-8", "surrogatepass").split()
    if not cut or not found or max(map(len, found)) <= MAX_WORD:
        return found
    return [w[:MAX_WORD] for w in found]


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
    (what :data:`_SQLITE_TEXT` computes in SQLite); ``ValueError`` if either is not JSON."""
    value = json.loads(content)
    found = value if isinstance(value, str) else " ".join(_json_text(value))
    if len(found) > MAX_INDEXED:
        found = f"{found[:_HALF]} {found[-_HALF:]}"
    if meta == "{}":
        return found
    metadata = json.loads(meta)
    names = [metadata[k] for k in _METADATA_WORDS if isinstance(metadata.get(k), str)]
    return " ".join((found, *names))


def distinct_words(content: str, meta: str) -> str:
    """PostgreSQL: the distinct words of a chunk row, space-separated in no particular
    order, as its index row holds them (without the thread's key)."""
    text = indexed_text(content, meta)
    found = spaced_words(text).split()
    if found and max(map(len, found)) > MAX_WORD:  # in bytes: perhaps fewer characters
        found = [w.encode("utf-8") for w in words(text)]
    joined = b" ".join(set(found)).decode("utf-8")
    if len(joined) <= _MAX_TERMS_TEXT:
        return joined
    return joined[: joined.rfind(" ", 0, _MAX_TERMS_TEXT + 1)].rstrip()


# -- the index's tables -----------------------------------------------------------------------


def create_index(connection: Connection) -> None:
    """Create the index's tables (new database, or the migration to schema version 4)."""
    ddl = _POSTGRESQL_DDL if connection.dialect.name == "postgresql" else _SQLITE_DDL
    for statement in ddl:
        connection.execute(text(statement))


def thread_key(connection: Connection, thread_id: str) -> int | None:
    """The thread's search key (made with the thread, by a trigger)."""
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
        found = [distinct_words(row["content"], row["meta"]) for row in rows]
        seqs = list(range(first_seq, first_seq + len(rows)))
        connection.execute(_POSTGRESQL_INSERT, {"t": thread_id, "seqs": seqs, "words": found})
        return
    last = first_seq + len(rows) - 1
    connection.execute(_SQLITE_INSERT, {"t": thread_id, "first": first_seq, "last": last})


def fill_index(connection: Connection) -> None:
    """Index every stored chunk (the migration to schema version 4)."""
    connection.execute(_FILL_KEYS)
    if connection.dialect.name != "postgresql":
        connection.execute(_SQLITE_FILL_ALL)
        return
    last: tuple[str, int] = ("", -1)
    while True:
        params = {"t": last[0], "s": last[1], "n": _FILL_PAGE}
        rows = connection.execute(_PAGE_OF_ROWS, params).all()
        if not rows:
            return
        for thread_id, seqs, found in _by_thread(rows):
            connection.execute(_POSTGRESQL_INSERT, {"t": thread_id, "seqs": seqs, "words": found})
        last = (rows[-1].thread_id, rows[-1].seq)


def _by_thread(rows: Sequence[Any]) -> Iterator[tuple[str, list[int], list[str]]]:
    """Rows of chunks in thread order as ``(thread, sequence numbers, distinct words)``."""
    start = 0
    for end in range(1, len(rows) + 1):
        if end == len(rows) or rows[end].thread_id != rows[start].thread_id:
            part = rows[start:end]
            yield (
                part[0].thread_id,
                [row.seq for row in part],
                [distinct_words(row.content, row.meta) for row in part],
            )
            start = end
