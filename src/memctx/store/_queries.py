"""The statements every store operation is made of, each run inside a caller's transaction."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Final

from sqlalchemy import insert
from sqlmodel import Session, col, select

from memctx._chunk import Chunk
from memctx._exceptions import (
    ChunkConflictError,
    ChunkNotFoundError,
    StoreArgumentError,
    StoreError,
    ThreadNotFoundError,
)
from memctx._json import freeze_json
from memctx.store._schema import (
    BatchRow,
    ChunkRow,
    EventRow,
    ThreadRow,
    chunk_values,
    differing_fields,
    dump_json,
    load_json,
    now_iso,
    row_values,
)

MAX_THREAD_ID_LENGTH: Final = 255
_IN_CHUNK: Final = 500  # values per IN (...) list: well under every backend's parameter limit


def check_thread_id(thread_id: object) -> str:
    """Return ``thread_id`` if it is a usable thread id, else raise :class:`StoreArgumentError`."""
    if not isinstance(thread_id, str):
        raise StoreArgumentError(f"a thread id must be a string, got {type(thread_id).__name__}")
    if not thread_id.strip():
        raise StoreArgumentError("a thread id must not be empty or blank")
    if len(thread_id) > MAX_THREAD_ID_LENGTH:
        raise StoreArgumentError(
            f"a thread id has at most {MAX_THREAD_ID_LENGTH} characters, got {len(thread_id)}"
        )
    if any(ord(c) < 32 or 0xD800 <= ord(c) <= 0xDFFF for c in thread_id):
        raise StoreArgumentError(f"a thread id must not contain control characters: {thread_id!r}")
    return thread_id


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


def _appended_after(session: Session, thread_id: str, base_seq: int) -> list[ChunkRow]:
    statement = (
        select(ChunkRow)
        .where(ChunkRow.thread_id == thread_id, ChunkRow.origin == "append")
        .where(ChunkRow.seq > base_seq)
        .order_by(col(ChunkRow.seq))
    )
    return list(session.exec(statement).all())


def visible_seqs(session: Session, batch: BatchRow) -> list[int]:
    """The sequence numbers visible in ``batch`` now, in view order."""
    view = batch_view(batch)
    base = 0 if view is None else batch.base_seq
    statement = (
        select(ChunkRow.seq)
        .where(ChunkRow.thread_id == batch.thread_id, ChunkRow.origin == "append")
        .where(ChunkRow.seq > base)
        .order_by(col(ChunkRow.seq))
    )
    appended = list(session.exec(statement).all())
    return appended if view is None else view + appended


def visible_rows(session: Session, batch: BatchRow) -> list[ChunkRow]:
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


def rows_by_seq(session: Session, thread_id: str, seqs: Sequence[int]) -> dict[int, ChunkRow]:
    """The thread's rows with these sequence numbers."""
    found: dict[int, ChunkRow] = {}
    if len(seqs) > 4 * _IN_CHUNK:
        statement = select(ChunkRow).where(ChunkRow.thread_id == thread_id)
        wanted = set(seqs)
        return {r.seq: r for r in session.exec(statement) if r.seq in wanted}
    for part in _chunks(seqs):
        statement = select(ChunkRow).where(
            ChunkRow.thread_id == thread_id, col(ChunkRow.seq).in_(part)
        )
        found.update((r.seq, r) for r in session.exec(statement))
    return found


def rows_by_chunk_id(
    session: Session, thread_id: str, chunk_ids: Sequence[str]
) -> dict[str, ChunkRow]:
    """The thread's rows with these chunk ids."""
    found: dict[str, ChunkRow] = {}
    for part in _chunks(chunk_ids):
        statement = select(ChunkRow).where(
            ChunkRow.thread_id == thread_id, col(ChunkRow.chunk_id).in_(part)
        )
        found.update((r.chunk_id, r) for r in session.exec(statement))
    return found


def chunk_not_found(session: Session, thread_id: str, chunk_id: str) -> ChunkNotFoundError:
    """The error for a chunk id the thread does not hold, saying if another thread holds it."""
    statement = select(ChunkRow.thread_id).where(ChunkRow.chunk_id == chunk_id).limit(1)
    elsewhere = session.exec(statement).first() is not None
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
    session: Session, thread_id: str, prepared: Mapping[str, dict[str, Any]]
) -> tuple[dict[str, ChunkRow], list[dict[str, Any]]]:
    """Split chunks into those already stored (the same value: fine) and new ones.

    A different chunk stored under one of the ids is a :class:`ChunkConflictError`.
    """
    existing = rows_by_chunk_id(session, thread_id, list(prepared))
    for chunk_id, row in existing.items():
        stored = row_values(row)
        if stored != prepared[chunk_id]:
            fields = ", ".join(differing_fields(stored, prepared[chunk_id]))
            raise ChunkConflictError(thread_id, chunk_id, f"{fields} differ (stored as #{row.seq})")
    new = [values for chunk_id, values in prepared.items() if chunk_id not in existing]
    return existing, new


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
    rows = [
        {
            **values,
            "thread_id": thread.id,
            "seq": first + i,
            "origin": origin,
            "batch": thread.batch,
        }
        for i, values in enumerate(new)
    ]
    session.exec(insert(ChunkRow), params=rows)
    thread.last_seq = first + len(new) - 1
    session.add(thread)
    session.flush()
    return [row["seq"] for row in rows]


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
    if not isinstance(kind, str) or not kind.strip():
        raise StoreArgumentError(f"an event kind must be a non-empty string, got {kind!r}")
    if not isinstance(payload, Mapping):
        raise StoreArgumentError(
            f"an event payload must be a JSON object, got {type(payload).__name__}"
        )
    try:
        freeze_json(payload, "payload")
        return kind, dump_json(payload)
    except (TypeError, ValueError) as exc:
        raise StoreArgumentError(f"the event payload is not JSON: {exc}") from None


def record_event(session: Session, thread_id: str, kind: str, payload: Mapping[str, Any]) -> None:
    """Add an event to the thread (in the caller's transaction)."""
    kind, text = check_payload(kind, payload)
    session.add(EventRow(thread_id=thread_id, kind=kind, payload=text, created_at=now_iso()))
