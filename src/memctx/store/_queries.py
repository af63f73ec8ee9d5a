"""The statements every store operation is made of, each run inside a caller's transaction."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Final

from sqlalchemy import Connection, bindparam, insert
from sqlalchemy import select as core_select
from sqlmodel import Session, select

from memctx._chunk import Chunk
from memctx._exceptions import (
    ChunkConflictError,
    ChunkNotFoundError,
    StoreArgumentError,
    StoreError,
    ThreadNotFoundError,
)
from memctx._json import NotJSONError, freeze_json, thaw_json
from memctx._limits import MAX_KIND_LENGTH, MAX_THREAD_ID_LENGTH, NAME_FORBIDDEN
from memctx._validators import message_error, name
from memctx.store._schema import (
    CHUNKS,
    BatchRow,
    ChunkRecord,
    EventRow,
    ThreadRow,
    chunk_records,
    chunk_values,
    differing_fields,
    dump_json,
    load_json,
    now_iso,
    row_values,
)

_IN_CHUNK: Final = 500  # values per IN (...) list: well under every backend's parameter limit

# The statements of the hot paths, built once (Core: rows, not ORM objects).
_INSERT_CHUNKS: Final = insert(CHUNKS)
_ALL_CHUNKS: Final = core_select(CHUNKS).where(CHUNKS.c.thread_id == bindparam("thread_id"))
_CHUNKS_BY_SEQ: Final = _ALL_CHUNKS.where(CHUNKS.c.seq.in_(bindparam("seqs", expanding=True)))
_CHUNKS_BY_ID: Final = _ALL_CHUNKS.where(CHUNKS.c.chunk_id.in_(bindparam("ids", expanding=True)))
_APPENDED_AFTER: Final = _ALL_CHUNKS.where(
    CHUNKS.c.origin == "append", CHUNKS.c.seq > bindparam("base_seq")
).order_by(CHUNKS.c.seq)
_APPENDED_SEQS_AFTER: Final = (
    core_select(CHUNKS.c.seq)
    .where(
        CHUNKS.c.thread_id == bindparam("thread_id"),
        CHUNKS.c.origin == "append",
        CHUNKS.c.seq > bindparam("base_seq"),
    )
    .order_by(CHUNKS.c.seq)
)
_HISTORY: Final = _ALL_CHUNKS.order_by(CHUNKS.c.seq)
_THREAD_OF_CHUNK: Final = (
    core_select(CHUNKS.c.thread_id).where(CHUNKS.c.chunk_id == bindparam("chunk_id")).limit(1)
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


def get_thread(session: Session, thread_id: str, *, lock: bool = False) -> ThreadRow:
    """The thread's row (locked for the transaction with ``lock``), or :class:`ThreadNotFoundError`.

    Locking the row is what orders concurrent writers of one thread on
    PostgreSQL; on SQLite the write transaction already holds the lock.
    """
    statement = select(ThreadRow).where(ThreadRow.id == thread_id)
    if lock:
        statement = statement.with_for_update()
    row = session.exec(statement).first()
    if row is None:
        raise ThreadNotFoundError(thread_id)
    return row


def get_batch(session: Session, thread_id: str, number: int) -> BatchRow:
    """The batch ``number`` of a thread (which must exist)."""
    row = session.get(BatchRow, (thread_id, number))
    if row is None:
        raise StoreError(f"thread {thread_id!r}: batch {number} is missing from the database")
    return row


def batch_view(batch: BatchRow) -> list[int] | None:
    """The sequence numbers a batch made visible (``None``: every appended chunk)."""
    if batch.view is None:
        return None
    view = load_json(batch.view, f"thread {batch.thread_id!r}, batch {batch.number}")
    if not isinstance(view, list) or not all(isinstance(s, int) for s in view):
        raise StoreError(f"thread {batch.thread_id!r}, batch {batch.number}: corrupt view")
    return view


def _appended_after(session: Session, thread_id: str, base_seq: int) -> list[ChunkRecord]:
    params = {"thread_id": thread_id, "base_seq": base_seq}
    return chunk_records(session.connection().execute(_APPENDED_AFTER, params).all())


def history_rows(session: Session, thread_id: str) -> list[ChunkRecord]:
    """Every row of the thread, in sequence order."""
    params = {"thread_id": thread_id}
    return chunk_records(session.connection().execute(_HISTORY, params).all())


def visible_seqs(session: Session, batch: BatchRow) -> list[int]:
    """The sequence numbers visible in ``batch`` now, in view order."""
    view = batch_view(batch)
    base = 0 if view is None else batch.base_seq
    params = {"thread_id": batch.thread_id, "base_seq": base}
    appended = list(session.connection().execute(_APPENDED_SEQS_AFTER, params).scalars())
    return appended if view is None else view + appended


def visible_rows(session: Session, batch: BatchRow) -> list[ChunkRecord]:
    """The rows visible in ``batch`` now, in view order."""
    view = batch_view(batch)
    if view is None:
        return _appended_after(session, batch.thread_id, 0)
    by_seq = rows_by_seq(session, batch.thread_id, view)
    missing = [s for s in view if s not in by_seq]
    if missing:
        raise StoreError(
            f"thread {batch.thread_id!r}, batch {batch.number}: the view names chunk "
            f"#{missing[0]}, which is not stored"
        )
    return [by_seq[s] for s in view] + _appended_after(session, batch.thread_id, batch.base_seq)


def _chunks(values: Sequence[Any]) -> Iterable[Sequence[Any]]:
    for start in range(0, len(values), _IN_CHUNK):
        yield values[start : start + _IN_CHUNK]


def rows_by_seq(session: Session, thread_id: str, seqs: Sequence[int]) -> dict[int, ChunkRecord]:
    """The thread's rows with these sequence numbers."""
    connection = session.connection()
    if len(seqs) > 4 * _IN_CHUNK:
        wanted = set(seqs)
        rows = connection.execute(_ALL_CHUNKS, {"thread_id": thread_id}).all()
        return {r.seq: r for r in chunk_records(rows) if r.seq in wanted}
    found: dict[int, ChunkRecord] = {}
    for part in _chunks(seqs):
        rows = connection.execute(_CHUNKS_BY_SEQ, {"thread_id": thread_id, "seqs": part}).all()
        found.update((r.seq, r) for r in chunk_records(rows))
    return found


def rows_by_chunk_id(
    connection: Connection, thread_id: str, chunk_ids: Sequence[str]
) -> dict[str, ChunkRecord]:
    """The thread's rows with these chunk ids."""
    found: dict[str, ChunkRecord] = {}
    for part in _chunks(chunk_ids):
        rows = connection.execute(_CHUNKS_BY_ID, {"thread_id": thread_id, "ids": part}).all()
        found.update((r.chunk_id, r) for r in chunk_records(rows))
    return found


def chunk_not_found(session: Session, thread_id: str, chunk_id: str) -> ChunkNotFoundError:
    """The error for a chunk id the thread does not hold, saying if another thread holds it."""
    found = session.connection().execute(_THREAD_OF_CHUNK, {"chunk_id": chunk_id}).first()
    elsewhere = found is not None
    error = ChunkNotFoundError(chunk_id)
    message = f"thread {thread_id!r} has no chunk with id {chunk_id!r}"
    if elsewhere:
        message += " (a chunk with that id belongs to another thread)"
    error.args = (message,)
    return error


def prepare_chunks(thread_id: str, chunks: Iterable[Chunk]) -> dict[str, dict[str, Any]]:
    """Column values per chunk id, in order; one id given twice must be the same chunk."""
    prepared: dict[str, dict[str, Any]] = {}
    for chunk in chunks:
        values = chunk_values(chunk)
        earlier = prepared.get(chunk.id)
        if earlier is None:
            prepared[chunk.id] = values
        elif earlier != values:
            fields = ", ".join(differing_fields(earlier, values))
            raise ChunkConflictError(
                thread_id, chunk.id, f"given twice in one call, with different {fields}"
            )
    return prepared


def split_existing(
    connection: Connection, thread_id: str, prepared: Mapping[str, dict[str, Any]]
) -> tuple[dict[str, ChunkRecord], list[dict[str, Any]]]:
    """Split chunks into those already stored (the same value: fine) and new ones.

    A different chunk stored under one of the ids is a :class:`ChunkConflictError`.
    One query per 500 chunks, whatever the outcome.
    """
    existing = rows_by_chunk_id(connection, thread_id, list(prepared))
    for chunk_id, row in existing.items():
        stored = row_values(row)
        if stored != prepared[chunk_id]:
            fields = ", ".join(differing_fields(stored, prepared[chunk_id]))
            raise ChunkConflictError(thread_id, chunk_id, f"{fields} differ (stored as #{row.seq})")
    new = [values for chunk_id, values in prepared.items() if chunk_id not in existing]
    return existing, new


def insert_chunks(
    connection: Connection,
    thread_id: str,
    first_seq: int,
    batch: int | Sequence[int],
    new: Sequence[Mapping[str, Any]],
    origin: str | Sequence[str],
) -> None:
    """Insert chunk rows (column values from :func:`chunk_values`) as ``first_seq``, ``+1``, ...

    One statement (an ``executemany``) for all of them. ``batch`` and
    ``origin`` are one value for every row, or one per row. The caller moves
    the thread's ``last_seq``.
    """
    if not new:
        return
    batches = [batch] * len(new) if isinstance(batch, int) else batch
    origins = [origin] * len(new) if isinstance(origin, str) else origin
    rows = [
        {**values, "thread_id": thread_id, "seq": seq, "origin": o, "batch": b}
        for seq, values, o, b in zip(
            range(first_seq, first_seq + len(new)), new, origins, batches, strict=True
        )
    ]
    connection.execute(_INSERT_CHUNKS, rows)


def append_chunks(
    session: Session, thread: ThreadRow, prepared: Mapping[str, dict[str, Any]]
) -> int:
    """Store the chunks of ``prepared`` not stored yet after the thread's last chunk.

    ``thread`` is the thread's row, locked by the caller's write transaction
    (:func:`get_thread` with ``lock=True``). Chunks stored already are checked
    (:func:`split_existing`); the new ones get the next sequence numbers and
    the thread's ``last_seq`` moves in the same transaction, so sequences have
    no gaps whatever happens to it. Returns how many were new.
    """
    _, new = split_existing(session.connection(), thread.id, prepared)
    return len(store_new(session, thread, new, "append"))


def check_metadata(values: object, name: str = "thread_metadata") -> dict[str, Any]:
    """Thread metadata given by a caller: a mapping of JSON values, as a plain dict."""
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


def store_new(
    session: Session, thread: ThreadRow, new: Sequence[Mapping[str, Any]], origin: str
) -> list[int]:
    """Insert new chunk rows after the thread's last one; return their sequence numbers.

    The thread's ``last_seq`` moves in the same transaction, so sequences have
    no gaps whatever happens to the transaction.
    """
    if not new:
        return []
    first = thread.last_seq + 1
    insert_chunks(session.connection(), thread.id, first, thread.batch, new, origin)
    thread.last_seq = first + len(new) - 1
    session.add(thread)
    session.flush()
    return list(range(first, first + len(new)))


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
        created_at=now_iso(),
    )
    session.add(row)
    thread.batch = thread.last_batch = number
    session.add(thread)
    session.flush()
    return row


def check_payload(kind: object, payload: object) -> tuple[str, str]:
    """An event's kind and its payload as JSON text, or :class:`StoreArgumentError`."""
    kind = check_event_kind(kind)
    if not isinstance(payload, Mapping):
        raise StoreArgumentError(
            f"an event payload must be a JSON object, got {type(payload).__name__}"
        )
    try:
        return kind, dump_json(freeze_json(payload, "payload"))
    except NotJSONError as exc:
        raise StoreArgumentError(f"the event payload is not JSON: {exc}") from None


def record_event(session: Session, thread_id: str, kind: str, payload: Mapping[str, Any]) -> None:
    """Add an event to the thread (in the caller's transaction)."""
    kind, text = check_payload(kind, payload)
    session.add(EventRow(thread_id=thread_id, kind=kind, payload=text, created_at=now_iso()))
