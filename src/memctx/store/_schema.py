"""The tables of the store, and the mapping between a chunk and its row.

Five tables, all prefixed ``memctx_`` so the store can share a database:

``memctx_schema``
    One row: the schema version this database was written with.
``memctx_threads``
    One row per thread: its highest chunk sequence number (``last_seq``, so
    sequences are gap-free: 1, 2, 3, ...), its current batch, its highest
    batch number and its metadata (a JSON object).
``memctx_chunks``
    Every chunk ever stored, keyed by ``(thread_id, seq)``; ``chunk_id`` is
    unique within its thread. ``unit_key``, ``unit_opener`` and ``pinned``
    repeat, as plain columns, what a build must know of every visible chunk
    without reading its content (which call or sub-agent unit it belongs to,
    whether it opens it, whether it is pinned; see :func:`unit_columns`).
    Content and metadata are JSON text, exactly as
    serialised (key order and number types are kept: PostgreSQL's ``jsonb``
    would reorder keys and so change the rendering). ``origin`` says how the
    chunk came in: ``append``, or by a view operation (``insert``,
    ``replace``, ``view`` for :meth:`~memctx.store.MemoryStore.apply_view`).
``memctx_batches``
    One row per batch: the operation that started it, its parameters, and the
    visible chunks (``view``, a JSON array of sequence numbers, or ``NULL``
    for "every appended chunk"). Chunks appended after the batch started
    (``seq > base_seq``) are visible after the view.
``memctx_events``
    What happened to a thread (``context.built``, ``view.changed``, ...).
``memctx_token_counts``
    Token counts per chunk, tokenizer ``cache_key`` and renderer fingerprint.
``memctx_waiting``
    The appended unit openers no appended answer followed yet (:class:`WaitingRow`).
    With the partial indexes of pinned, SYSTEM and not-appended chunks and of unit
    members, it lets a paged build read a window of the thread, not every row.
``memctx_search`` and ``memctx_search_threads``
    The full-text index of every stored chunk and each thread's search key,
    made by :mod:`memctx.store._search_index` with the database's own engine
    (FTS5, or a ``tsvector`` column with a GIN index), not by these models.

The store's own timestamps (``created_at`` of threads, batches and events)
are timezone-aware :class:`~datetime.datetime` columns (:class:`UTCDateTime`).
A chunk's ``created_at`` is part of the chunk's value and keeps the offset it
was given, so it is stored as its ISO 8601 text, like content and metadata
are stored as their JSON text.
"""

from __future__ import annotations

import datetime as _dt
import json
from collections.abc import Mapping
from typing import Any, Final

from sqlalchemy import (
    Column,
    DateTime,
    Dialect,
    ForeignKeyConstraint,
    Index,
    Row,
    Text,
    TypeDecorator,
    UniqueConstraint,
    text,
)
from sqlalchemy.orm import registry
from sqlalchemy.types import TypeEngine
from sqlmodel import Field, SQLModel

from memctx._chunk import Chunk
from memctx._exceptions import InvalidChunkError, StateFileError, StoreError
from memctx._units import unit_role
from memctx._validators import STORE_FORBIDDEN
from memctx.statefile import chunk_from_dict

SCHEMA_VERSION: Final = 5
"""The version of the tables above; an older database is migrated, a newer one refused."""

ORIGINS: Final = frozenset({"append", "insert", "replace", "view"})
"""How a chunk can have entered a thread."""


class UTCDateTime(TypeDecorator[_dt.datetime]):
    """A timezone-aware timestamp, read back in UTC.

    ``timestamp with time zone`` on PostgreSQL; on SQLite, which has no date
    type, ISO 8601 text in UTC (SQLAlchemy's own ``DateTime`` would drop the
    offset there), which sorts in time order.
    """

    impl = DateTime(timezone=True)
    cache_ok = True

    def load_dialect_impl(self, dialect: Dialect) -> TypeEngine[Any]:
        if dialect.name == "sqlite":
            return dialect.type_descriptor(Text())
        return dialect.type_descriptor(DateTime(timezone=True))

    def process_bind_param(self, value: _dt.datetime | None, dialect: Dialect) -> Any:
        if value is None:
            return None
        if value.tzinfo is None:
            raise ValueError(f"a stored timestamp must be timezone-aware, got {value!r}")
        value = value.astimezone(_dt.UTC)
        return value.isoformat() if dialect.name == "sqlite" else value

    def process_result_value(self, value: Any, dialect: Dialect) -> _dt.datetime | None:
        if value is None:
            return None
        if isinstance(value, str):
            value = _dt.datetime.fromisoformat(value)
        assert isinstance(value, _dt.datetime)
        if value.tzinfo is None:  # not written by the store; read as UTC
            return value.replace(tzinfo=_dt.UTC)
        return value.astimezone(_dt.UTC)


def _timestamp() -> Any:
    return Field(default_factory=now, sa_column=Column(UTCDateTime(), nullable=False))


def now() -> _dt.datetime:
    """The current time, in UTC."""
    return _dt.datetime.now(_dt.UTC)


class StoreModel(SQLModel, registry=registry()):
    """Base of the store's tables: their own registry and metadata, apart from other models."""


class SchemaInfo(StoreModel, table=True):
    """The single row saying which schema version wrote this database."""

    __tablename__ = "memctx_schema"

    id: int = Field(default=1, primary_key=True)
    version: int


class ThreadRow(StoreModel, table=True):
    """A thread: the counters that keep its sequences gap-free and its current batch."""

    __tablename__ = "memctx_threads"

    id: str = Field(primary_key=True)
    created_at: _dt.datetime = _timestamp()
    last_seq: int = 0
    batch: int = 0
    last_batch: int = 0
    # The thread's metadata: a JSON object, as text (exact types, like chunk content).
    meta: str = Field(
        default="{}",
        sa_column=Column("metadata", Text, nullable=False, server_default="{}", key="meta"),
    )


LIGHT_INDEX_COLUMNS: Final = (
    "thread_id",
    "seq",
    "origin",
    "chunk_id",
    "type",
    "unit_key",
    "unit_opener",
    "pinned",
)
"""A covering index of what a paged build reads of every visible chunk: the database
reads it without touching the rows, whose content may be long."""

SPECIAL_ROWS: Final = "(pinned OR type = 'SYSTEM' OR origin <> 'append')"
"""The rows every paged build reads (pinned, SYSTEM, or not appended), as the predicate of
their partial index ``memctx_chunks_special`` and of the query that reads them (the same
text, so that SQLite and PostgreSQL use the index)."""

UNIT_ROWS: Final = "unit_key IS NOT NULL"
"""The predicate of the partial index ``memctx_chunks_unit`` (the members of a unit)."""


def paged_indexes() -> tuple[Index, ...]:
    """The partial indexes a paged build reads through (schema version 5)."""
    return (
        Index(
            "memctx_chunks_special",
            "thread_id",
            "seq",
            sqlite_where=text(SPECIAL_ROWS),
            postgresql_where=text(SPECIAL_ROWS),
        ),
        Index(
            "memctx_chunks_unit",
            "thread_id",
            "unit_key",
            "seq",
            sqlite_where=text(UNIT_ROWS),
            postgresql_where=text(UNIT_ROWS),
        ),
    )


class ChunkRow(StoreModel, table=True):
    """One stored chunk. Rows are written once and never changed."""

    __tablename__ = "memctx_chunks"
    __table_args__ = (
        UniqueConstraint("thread_id", "chunk_id", name="memctx_chunks_thread_chunk_id"),
        ForeignKeyConstraint(["thread_id"], ["memctx_threads.id"], ondelete="CASCADE"),
        Index("memctx_chunks_light", *LIGHT_INDEX_COLUMNS),
        *paged_indexes(),
    )

    thread_id: str = Field(primary_key=True)
    seq: int = Field(primary_key=True)
    chunk_id: str
    origin: str
    batch: int
    type: str
    role: str | None = None
    action: str | None = None
    subtype: str | None = None
    content: str = Field(sa_type=Text)
    # key="meta": the column is "metadata" in SQL and "meta" in Python, ORM and Core alike.
    meta: str = Field(sa_column=Column("metadata", Text, nullable=False, key="meta"))
    priority: int
    created_at: str
    unit_key: str | None = None
    unit_opener: bool = False
    pinned: bool = False


class WaitingRow(StoreModel, table=True):
    """An appended unit opener (a tool call, a sub-agent's start) that no appended answer
    followed yet: the units a paged build must look at for calls still waiting.

    Written with the opener; the rows of a unit are deleted when an answer of it is
    appended (:func:`memctx.store._queries.insert_chunks`).
    """

    __tablename__ = "memctx_waiting"
    __table_args__ = (
        ForeignKeyConstraint(["thread_id"], ["memctx_threads.id"], ondelete="CASCADE"),
    )

    thread_id: str = Field(primary_key=True)
    unit_key: str = Field(primary_key=True)
    seq: int = Field(primary_key=True)


class BatchRow(StoreModel, table=True):
    """One batch: the view operation that started it and the chunks it made visible."""

    __tablename__ = "memctx_batches"
    __table_args__ = (
        ForeignKeyConstraint(["thread_id"], ["memctx_threads.id"], ondelete="CASCADE"),
    )

    thread_id: str = Field(primary_key=True)
    number: int = Field(primary_key=True)
    operation: str
    params: str = Field(sa_type=Text)
    view: str | None = Field(default=None, sa_type=Text)
    base_seq: int
    created_at: _dt.datetime = _timestamp()


class EventRow(StoreModel, table=True):
    """One event of a thread, with its JSON payload."""

    __tablename__ = "memctx_events"
    __table_args__ = (
        ForeignKeyConstraint(["thread_id"], ["memctx_threads.id"], ondelete="CASCADE"),
        Index("memctx_events_thread", "thread_id", "id"),
    )

    id: int | None = Field(default=None, primary_key=True)
    thread_id: str
    kind: str
    payload: str = Field(sa_type=Text)
    created_at: _dt.datetime = _timestamp()


class TokenCountRow(StoreModel, table=True):
    """The token count of one chunk under one tokenizer and one renderer chain."""

    __tablename__ = "memctx_token_counts"
    __table_args__ = (
        ForeignKeyConstraint(
            ["thread_id", "seq"],
            ["memctx_chunks.thread_id", "memctx_chunks.seq"],
            ondelete="CASCADE",
        ),
    )

    thread_id: str = Field(primary_key=True)
    seq: int = Field(primary_key=True)
    tokenizer: str = Field(primary_key=True)
    renderer: str = Field(primary_key=True)
    tokens: int


# -- JSON text -------------------------------------------------------------------------------

# One encoder each, made once: json.dumps with options builds a new encoder per call.
_encode_utf8 = json.JSONEncoder(ensure_ascii=False, allow_nan=False).encode
_encode_ascii = json.JSONEncoder(ensure_ascii=True, allow_nan=False).encode


def dump_json(value: Any) -> str:
    """Serialise a JSON value for a text column; exact on load, whatever the backend.

    Non-ASCII is kept as is unless the text holds lone surrogates, which no
    database encoding accepts; then everything non-ASCII is escaped (the
    value loads back the same either way). Frozen values (``FrozenDict``,
    tuples) serialise as the dicts and lists they stand for.
    """
    text: str = _encode_utf8(value)
    if not text.isascii():
        try:
            text.encode("utf-8")
        except UnicodeEncodeError:
            text = _encode_ascii(value)
    return text


def load_json(text: str, where: str) -> Any:
    """Parse JSON text read from the database; :class:`StoreError` if it is corrupt."""
    try:
        return json.loads(text)
    except (TypeError, ValueError) as exc:
        raise StoreError(f"{where}: the database holds invalid JSON ({exc})") from None


# -- chunk <-> row ---------------------------------------------------------------------------

STORED_FIELDS: Final = (
    "chunk_id",
    "type",
    "role",
    "action",
    "subtype",
    "content",
    "meta",
    "priority",
    "created_at",
)
"""The columns that hold a chunk's value."""

IDENTITY_FIELDS: Final = STORED_FIELDS[:-1]
"""The columns that make two chunks "the same" for an idempotent retry: all but ``created_at``.

A process that re-creates a chunk (same id, type, content, metadata, ...) at
another time is retrying, not conflicting; the stored chunk wins.
"""


def _storable(field: str, value: str | None) -> None:
    found = None if value is None else STORE_FORBIDDEN.search(value)
    if found is None:
        return
    if found.group() == "\x00":
        raise InvalidChunkError(field, "contains NUL, which the store cannot hold in a text column")
    raise InvalidChunkError(field, "contains a lone surrogate (not valid Unicode text)")


def unit_columns(chunk: Chunk) -> dict[str, Any]:
    """The light columns of ``chunk``: its unit (``["call", call_id]`` or
    ``["agent", subagent_id]`` as ASCII JSON, as the builder pairs them: an id may
    hold NUL or a lone surrogate, which a text column cannot), whether it opens
    the unit, and whether it is pinned."""
    found = unit_role(chunk)
    key = None if found is None else _encode_ascii(list(found[0]))
    opener = found is not None and found[1]
    return {"unit_key": key, "unit_opener": opener, "pinned": chunk.metadata.pinned}


def chunk_values(chunk: Chunk) -> dict[str, Any]:
    """The column values of ``chunk`` (the ``STORED_FIELDS``), checked to be storable."""
    if not isinstance(chunk, Chunk):
        raise InvalidChunkError("chunk", f"must be a Chunk, got {type(chunk).__name__}")
    _storable("id", chunk.id)
    _storable("action", chunk.action)
    _storable("subtype", chunk.subtype)
    return {
        "chunk_id": chunk.id,
        "type": chunk.type.value,
        "role": chunk.role,
        "action": chunk.action,
        "subtype": chunk.subtype,
        "content": dump_json(chunk.content),
        "meta": dump_json(chunk.metadata.to_dict()),
        "priority": chunk.priority,
        "created_at": chunk.created_at.isoformat(),
        **unit_columns(chunk),
    }


def row_values(row: Row[Any]) -> dict[str, Any]:
    """The ``STORED_FIELDS`` of a stored row."""
    return {name: getattr(row, name) for name in STORED_FIELDS}


def differing_fields(stored: Mapping[str, Any], given: Mapping[str, Any]) -> list[str]:
    """Names (as :class:`Chunk` calls them) of the ``IDENTITY_FIELDS`` in which two chunks differ.

    Empty when they are the same chunk.
    """
    names = {"chunk_id": "id", "meta": "metadata"}
    return [names.get(f, f) for f in IDENTITY_FIELDS if stored[f] != given[f]]


def row_to_chunk(row: Row[Any]) -> Chunk:
    """Rebuild the chunk a row holds; :class:`StoreError` if the row is corrupt."""
    try:
        content = json.loads(row.content)
        metadata = json.loads(row.meta)
    except (TypeError, ValueError) as exc:
        raise StoreError(f"{_where(row)}: the database holds invalid JSON ({exc})") from None
    data = {
        "id": row.chunk_id,
        "type": row.type,
        "role": row.role,
        "action": row.action,
        "subtype": row.subtype,
        "content": content,
        "metadata": metadata,
        "priority": row.priority,
        "created_at": row.created_at,
    }
    try:
        return chunk_from_dict(data)
    except StateFileError as exc:
        raise StoreError(f"{_where(row)}: the stored chunk is invalid: {exc}") from None


def _where(row: Row[Any]) -> str:
    return f"thread {row.thread_id!r}, chunk #{row.seq}"
