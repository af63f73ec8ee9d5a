"""The queries every store operation is made of, each run in the caller's session.

Threads, batches and events are read and written as SQLModel objects through
the session. Chunk rows, read and written by the thousand, are the exception
the store benchmark (``benchmarks/store_bench.py``) asks for: their
statements, built once, run on the session's connection (rows of their
columns, one ``executemany`` per insert; the reads are in
:mod:`memctx.store._row_reads`), and an append moves the thread's
``last_seq`` with one statement instead of a flush. ORM objects, the ORM's
bulk insert and the unit of work each made appending or loading 10,000
chunks measurably slower.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any, Final, TypeVar

from sqlalchemy import Row, bindparam, insert
from sqlalchemy.dialects.postgresql import insert as pg_insert
from sqlalchemy.dialects.sqlite import insert as sqlite_insert
from sqlalchemy.orm.attributes import set_committed_value
from sqlmodel import Session, col, select, update

from memctx._chunk import Chunk
from memctx._exceptions import (
    ChunkConflictError,
    ChunkNotFoundError,
    InvalidChunkError,
    StoreArgumentError,
    StoreError,
    ThreadNotFoundError,
)
from memctx._json import NotJSONError, freeze_json, thaw_json
from memctx._validators import (
    MAX_KIND_LENGTH,
    MAX_THREAD_ID_LENGTH,
    NAME_FORBIDDEN,
    message_error,
    name,
)
from memctx.store._own_appends import Noted, OwnAppend, stored_and_units
from memctx.store._row_reads import in_parts, raw_rows, rows_by_chunk_id, rows_of
from memctx.store._schema import (
    BatchRow,
    ChunkRow,
    EventRow,
    ThreadRow,
    TokenCountRow,
    chunk_values,
    differing_fields,
    dump_json,
    load_json,
    now,
    row_values,
)
from memctx.store._search_index import index_rows
from memctx.store._waiting import analyze_if_due, track_waiting

R = TypeVar("R")

_INSERT_PART: Final = 2000  # chunk rows per INSERT executemany: progress can be told between them

_THREAD_OF_CHUNK: Final = (
    select(col(ChunkRow.thread_id)).where(col(ChunkRow.chunk_id) == bindparam("chunk_id")).limit(1)
)
# On the table, not the model: the ORM's bulk insert costs a third of an append more.
_THREAD: Final = select(ThreadRow).where(col(ThreadRow.id) == bindparam("thread_id"))
_LOCK_THREAD: Final = _THREAD.with_for_update()
_THREAD_VERSION: Final = select(col(ThreadRow.created_at), col(ThreadRow.batch)).where(
    col(ThreadRow.id) == bindparam("thread_id")
)
_LOCK_THREAD_VERSION: Final = _THREAD_VERSION.with_for_update()
_COUNT_INSERTS: Final = {
    "postgresql": pg_insert(TokenCountRow.__table__).on_conflict_do_nothing(),  # type: ignore[attr-defined]
    "sqlite": sqlite_insert(TokenCountRow.__table__).on_conflict_do_nothing(),  # type: ignore[attr-defined]
}

_MOVE_LAST_SEQ: Final = (
    update(ThreadRow)
    .where(col(ThreadRow.id) == bindparam("thread_id"))
    .values(last_seq=bindparam("last_seq"))
)
_INSERT_CHUNKS: Final = insert(ChunkRow.__table__)  # type: ignore[attr-defined]
_INSERT_EVENT: Final = insert(EventRow.__table__)  # type: ignore[attr-defined]
_IDS_STORED: Final = select(col(ChunkRow.chunk_id)).where(
    col(ChunkRow.thread_id) == bindparam("thread_id"),
    col(ChunkRow.chunk_id).in_(bindparam("ids", expanding=True)),
)

_COUNTS_BY_SEQ: Final = select(col(TokenCountRow.seq), col(TokenCountRow.tokens)).where(
    col(TokenCountRow.thread_id) == bindparam("thread_id"),
    col(TokenCountRow.tokenizer) == bindparam("tokenizer"),
    col(TokenCountRow.renderer) == bindparam("renderer"),
    col(TokenCountRow.seq).in_(bindparam("seqs", expanding=True)),
)


_THREAD_ID: Final = name(
    message_error(StoreArgumentError),
    max_length=MAX_THREAD_ID_LENGTH,
    forbidden=NAME_FORBIDDEN,
    forbidden_name="control characters or lone surrogates",
)
_EVENT_KIND: Final = name(
    message_error(StoreArgumentError),
    max_length=MAX_KIND_LENGTH,
    forbidden=NAME_FORBIDDEN,
    forbidden_name="control characters or lone surrogates",
)


def check_thread_id(thread_id: object) -> str:
    """Return ``thread_id`` if it is a usable thread id, else raise :class:`StoreArgumentError`."""
    return _THREAD_ID.check(thread_id, "a thread id")


def check_event_kind(kind: object) -> str:
    """Return ``kind`` if it is a usable event kind, else raise :class:`StoreArgumentError`."""
    return _EVENT_KIND.check(kind, "an event kind")


# -- threads and batches ------------------------------------------------------------------


def get_thread(session: Session, thread_id: str, *, lock: bool = False) -> ThreadRow:
    """The thread's row, or :class:`ThreadNotFoundError`.

    ``lock=True`` is how a write locks its thread, the only way the store
    does: ``SELECT ... FOR UPDATE`` orders concurrent writers of one thread
    on PostgreSQL; on SQLite the write transaction (``BEGIN IMMEDIATE``)
    holds the database's write lock already.
    """
    statement = _LOCK_THREAD if lock else _THREAD
    row = session.exec(statement, params={"thread_id": thread_id}).first()
    if row is None:
        raise ThreadNotFoundError(thread_id)
    return row


def thread_version(session: Session, thread_id: str, *, lock: bool = False) -> tuple[Any, int]:
    """The thread's ``(created_at, batch)``, or :class:`ThreadNotFoundError`; ``lock`` as
    for :func:`get_thread`. Read without the ORM: builds ask it twice each."""
    statement = _LOCK_THREAD_VERSION if lock else _THREAD_VERSION
    row = session.connection().execute(statement, {"thread_id": thread_id}).first()
    if row is None:
        raise ThreadNotFoundError(thread_id)
    return row[0], row[1]


def get_batch(session: Session, thread_id: str, number: int) -> BatchRow:
    """The batch ``number`` of a thread (which must exist)."""
    row = session.get(BatchRow, (thread_id, number))
    if row is None:
        raise StoreError(f"thread {thread_id!r}: batch {number} is missing from the database")
    return row


def thread_batches(session: Session, thread_id: str) -> Sequence[BatchRow]:
    """Every batch of the thread, oldest first."""
    statement = select(BatchRow).where(BatchRow.thread_id == thread_id)
    return session.exec(statement.order_by(col(BatchRow.number))).all()


def new_batch(
    session: Session,
    thread: ThreadRow,
    operation: str,
    params: Mapping[str, Any],
    view: list[int] | None,
) -> BatchRow:
    """Start batch ``last_batch + 1`` with ``view`` and make it the thread's current batch."""
    number = thread.last_batch + 1
    row = BatchRow(
        thread_id=thread.id,
        number=number,
        operation=operation,
        params=dump_json(params),
        view=None if view is None else dump_json(view),
        base_seq=thread.last_seq,
    )
    session.add(row)
    thread.batch = thread.last_batch = number
    session.add(thread)
    session.flush()
    return row


# -- chunk rows ---------------------------------------------------------------------------


def chunk_not_found(session: Session, thread_id: str, chunk_id: str) -> ChunkNotFoundError:
    """The error for a chunk id the thread does not hold, saying if another thread holds it."""
    elsewhere = rows_of(session, _THREAD_OF_CHUNK, {"chunk_id": chunk_id}).first() is not None
    message = f"thread {thread_id!r} has no chunk with id {chunk_id!r}"
    if elsewhere:
        message += " (a chunk with that id belongs to another thread)"
    return ChunkNotFoundError(chunk_id, message)


# -- storing chunks -----------------------------------------------------------------------


def prepare_chunks(thread_id: str, chunks: Iterable[Chunk]) -> dict[str, dict[str, Any]]:
    """Column values per chunk id, in order; one id given twice must be the same chunk.

    The first of two equal chunks wins (they may differ only in ``created_at``).
    """
    if isinstance(chunks, Chunk | str | bytes) or not isinstance(chunks, Iterable):
        raise InvalidChunkError("chunks", f"must be a list of Chunks, got {type(chunks).__name__}")
    prepared: dict[str, dict[str, Any]] = {}
    for chunk in chunks:
        values = chunk_values(chunk)
        earlier = prepared.get(chunk.id)
        if earlier is None:
            prepared[chunk.id] = values
            continue
        fields = differing_fields(earlier, values)
        if fields:
            raise ChunkConflictError(
                thread_id, chunk.id, f"given twice in one call, with different {', '.join(fields)}"
            )
    return prepared


def split_existing(
    session: Session,
    thread_id: str,
    prepared: Mapping[str, dict[str, Any]],
    older: list[tuple[Any, ...]] | None = None,
) -> tuple[dict[str, Row[Any]], list[dict[str, Any]]]:
    """Split chunks into those already stored (the same chunk: fine) and new ones.

    "The same" is equal ``IDENTITY_FIELDS`` (all but ``created_at``); a
    different chunk stored under one of the ids is a
    :class:`ChunkConflictError`. One query per 500 chunks, whatever the outcome;
    with ``older``, the same queries add to it the light rows of the stored members
    of the chunks' units (:func:`~memctx.store._own_appends.stored_and_units`).
    """
    if older is None:
        stored = [
            chunk_id
            for part in in_parts(list(prepared))
            for (chunk_id,) in raw_rows(session, _IDS_STORED, {"thread_id": thread_id, "ids": part})
        ]
    else:
        keys = sorted({v["unit_key"] for v in prepared.values() if v["unit_key"] is not None})
        stored, found = stored_and_units(session, thread_id, list(prepared), keys)
        older += found
    existing = rows_by_chunk_id(session, thread_id, stored) if stored else {}
    for chunk_id, row in existing.items():
        fields = differing_fields(row_values(row), prepared[chunk_id])
        if fields:
            raise ChunkConflictError(
                thread_id, chunk_id, f"{', '.join(fields)} differ (stored as #{row.seq})"
            )
    new = [values for chunk_id, values in prepared.items() if chunk_id not in existing]
    return existing, new


def insert_chunks(
    session: Session,
    thread_id: str,
    first_seq: int,
    rows: Sequence[tuple[Mapping[str, Any], str, int]],
    advance: Callable[[int], None] | None = None,
) -> None:
    """Insert chunk rows ``(column values, origin, batch)`` as ``first_seq``, ``+1``, ...

    The one way chunk rows are written: one ``executemany`` per
    ``_INSERT_PART`` rows, and their search index rows
    (:mod:`~memctx.store._search_index`) in the same transaction, each part
    followed by ``advance(rows written)`` when given. The caller moves the
    thread's ``last_seq``.
    """
    connection = session.connection()
    for start in range(0, len(rows), _INSERT_PART):
        part = rows[start : start + _INSERT_PART]
        connection.execute(
            _INSERT_CHUNKS,
            [
                {**values, "thread_id": thread_id, "seq": seq, "origin": origin, "batch": batch}
                for seq, (values, origin, batch) in enumerate(part, first_seq + start)
            ],
        )
        index_rows(connection, thread_id, first_seq + start, [values for values, _, _ in part])
        track_waiting(connection, thread_id, first_seq + start, part)
        if advance is not None:
            advance(len(part))


def store_new(
    session: Session,
    thread: ThreadRow,
    new: Sequence[Mapping[str, Any]],
    origin: str,
    advance: Callable[[int], None] | None = None,
) -> list[int]:
    """Insert new chunks after the locked thread's last one; return their sequence numbers.

    The thread's ``last_seq`` moves in the same transaction, so sequences have
    no gaps whatever happens to the transaction.
    """
    if not new:
        return []
    first = thread.last_seq + 1
    rows = [(values, origin, thread.batch) for values in new]
    insert_chunks(session, thread.id, first, rows, advance)
    # A statement made once, not a flush of the changed object: the unit of
    # work costs as much as the rest of a small append.
    last = first + len(new) - 1
    session.connection().execute(_MOVE_LAST_SEQ, {"thread_id": thread.id, "last_seq": last})
    set_committed_value(thread, "last_seq", last)
    analyze_if_due(session, first - 1, last)
    return list(range(first, first + len(new)))


def append_chunks(
    session: Session,
    thread: ThreadRow,
    prepared: Mapping[str, dict[str, Any]],
    advance: Callable[[int], None] | None = None,
    noted: Noted | None = None,
) -> int:
    """Append the chunks (of :func:`prepare_chunks`) not stored yet to the locked thread.

    Returns how many were new. ``advance(n)``, when given, hears of the chunks
    found stored already, then of the new ones as they are written. ``noted``, when
    given, is told what was written (:mod:`memctx.store._own_appends`).
    """
    older: list[tuple[Any, ...]] | None = None if noted is None else []
    existing, new = split_existing(session, thread.id, prepared, older)
    if advance is not None:
        advance(len(existing))
    seqs = store_new(session, thread, new, "append", advance)
    if noted is not None and seqs:
        noted.value = OwnAppend(
            thread.created_at, thread.batch, seqs[0], tuple(new), tuple(older or ())
        )
    return len(seqs)


# -- thread metadata ----------------------------------------------------------------------


def check_metadata(values: object, name: str = "thread_metadata") -> dict[str, Any]:
    """Metadata given by a caller: a mapping of JSON values, as a plain dict."""
    if not isinstance(values, Mapping):
        raise StoreArgumentError(f"{name} must be a mapping, got {type(values).__name__}")
    try:
        return thaw_json(freeze_json(values, name))  # type: ignore[no-any-return]
    except (TypeError, ValueError) as exc:
        raise StoreArgumentError(f"{name} is not JSON: {exc}") from None


def metadata_of(thread: ThreadRow) -> dict[str, Any]:
    """The thread's metadata, as a new plain dict."""
    value = load_json(thread.meta, f"thread {thread.id!r}, metadata")
    if not isinstance(value, dict):
        raise StoreError(f"thread {thread.id!r}: corrupt metadata (not a JSON object)")
    return value


def merge_metadata(
    session: Session, thread: ThreadRow, values: Mapping[str, Any]
) -> dict[str, Any]:
    """Merge ``values`` (checked) into the locked thread's metadata; return the result."""
    merged = metadata_of(thread)
    if values:
        merged.update(values)
        thread.meta = dump_json(merged)
        session.add(thread)
        session.flush()
    return merged


# -- events -------------------------------------------------------------------------------


def check_payload(kind: object, payload: object, what: str = "an event payload") -> tuple[str, str]:
    """An event's kind and its payload as JSON text, or :class:`StoreArgumentError`
    (naming the payload ``what``)."""
    kind = check_event_kind(kind)
    if not isinstance(payload, Mapping):
        raise StoreArgumentError(f"{what} must be a JSON object, got {type(payload).__name__}")
    try:
        return kind, dump_json(freeze_json(payload, "payload"))
    except NotJSONError as exc:
        raise StoreArgumentError(f"{what} is not JSON: {exc}") from None


def record_event(session: Session, thread_id: str, kind: str, payload: Mapping[str, Any]) -> None:
    """Add an event to the thread (in the caller's transaction)."""
    kind, text = check_payload(kind, payload)
    row = {"thread_id": thread_id, "kind": kind, "payload": text, "created_at": now()}
    session.flush()  # rows the transaction added before come first
    session.connection().execute(_INSERT_EVENT, row)


def thread_events(session: Session, thread_id: str, kind: str | None) -> Sequence[EventRow]:
    """The thread's events (of ``kind`` when given), oldest first."""
    statement = select(EventRow).where(EventRow.thread_id == thread_id)
    if kind is not None:
        statement = statement.where(EventRow.kind == kind)
    return session.exec(statement.order_by(col(EventRow.id))).all()


# -- token counts -------------------------------------------------------------------------


def load_counts(session: Session, thread_id: str, tokenizer: str, renderer: str) -> dict[int, int]:
    """The stored token counts of a thread's chunks under one tokenizer and renderer chain."""
    statement = select(TokenCountRow.seq, TokenCountRow.tokens).where(
        TokenCountRow.thread_id == thread_id,
        TokenCountRow.tokenizer == tokenizer,
        TokenCountRow.renderer == renderer,
    )
    return {seq: tokens for seq, tokens in session.exec(statement)}


def counts_by_seq(
    session: Session, thread_id: str, tokenizer: str, renderer: str, seqs: Sequence[int]
) -> dict[int, int]:
    """The stored token counts of these chunks under one tokenizer and renderer chain."""
    found: dict[int, int] = {}
    params = {"thread_id": thread_id, "tokenizer": tokenizer, "renderer": renderer}
    for part in in_parts(seqs):
        found.update(raw_rows(session, _COUNTS_BY_SEQ, {**params, "seqs": part}))
    return found


def save_counts(
    session: Session, thread_id: str, tokenizer: str, renderer: str, counts: Mapping[int, int]
) -> None:
    """Store new counts; a count another process stored meanwhile is kept (they are equal)."""
    if not counts:
        return
    connection = session.connection()
    connection.execute(
        _COUNT_INSERTS[connection.dialect.name],
        [
            {
                "thread_id": thread_id,
                "seq": seq,
                "tokenizer": tokenizer,
                "renderer": renderer,
                "tokens": tokens,
            }
            for seq, tokens in sorted(counts.items())
        ],
    )
