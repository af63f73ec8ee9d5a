"""The store's operations on threads, chunks, metadata and events, each one transaction.

Every function takes the session of one transaction (a write one where it
writes) and checks its arguments before it touches the database;
:class:`~memctx.store.MemoryStore` and :class:`~memctx.store.AsyncMemoryStore`
both run them, so the two behave the same by construction.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Mapping
from typing import Any, TypeAlias

from sqlalchemy.exc import IntegrityError
from sqlmodel import Session, col, delete, select

from memctx._chunk import Chunk
from memctx._exceptions import StoreArgumentError, ThreadExistsError
from memctx._progress import Progress
from memctx._state import MemoryState
from memctx.store._own_appends import Noted, with_chunks
from memctx.store._queries import (
    append_chunks,
    check_event_kind,
    check_metadata,
    check_thread_id,
    get_batch,
    get_thread,
    merge_metadata,
    metadata_of,
    prepare_chunks,
    record_event,
    thread_batches,
    thread_events,
)
from memctx.store._records import Batch, StoredChunk, StoreEvent, ThreadInfo
from memctx.store._row_reads import (
    history_rows,
    visible_rows,
    visible_seqs,
)
from memctx.store._schema import BatchRow, ThreadRow, load_json, row_to_chunk

MakeChunks: TypeAlias = Callable[
    [int, dict[str, Any]], tuple[Iterable[Chunk], Mapping[str, Any] | None]
]
"""What ``append_with`` calls: ``make(length, metadata) -> (chunks, metadata_update)``."""


def create_thread(session: Session, thread_id: str | None) -> str:
    """Create a thread (``thread_<hex>`` when no id is given); :class:`ThreadExistsError`."""
    if thread_id is None:
        thread_id = "thread_" + os.urandom(6).hex()
    check_thread_id(thread_id)
    if session.get(ThreadRow, thread_id) is not None:
        raise ThreadExistsError(thread_id)
    try:
        session.add(ThreadRow(id=thread_id))
        session.flush()
    except IntegrityError:  # created by another writer since the check above
        raise ThreadExistsError(thread_id) from None
    session.add(
        BatchRow(thread_id=thread_id, number=0, operation="create", params="{}", base_seq=0)
    )
    return thread_id


def has_thread(session: Session, thread_id: str) -> bool:
    check_thread_id(thread_id)
    return session.get(ThreadRow, thread_id) is not None


def thread_info(session: Session, thread_id: str) -> ThreadInfo:
    check_thread_id(thread_id)
    return _info(get_thread(session, thread_id))


def list_threads(session: Session) -> list[ThreadInfo]:
    rows = session.exec(select(ThreadRow).order_by(col(ThreadRow.created_at), col(ThreadRow.id)))
    return [_info(row) for row in rows]


def delete_thread(session: Session, thread_id: str) -> None:
    """Delete the thread; its chunks, batches, events and counts go too (ON DELETE CASCADE)."""
    check_thread_id(thread_id)
    get_thread(session, thread_id, lock=True)
    session.exec(delete(ThreadRow).where(col(ThreadRow.id) == thread_id))


def append(
    session: Session,
    thread_id: str,
    chunks: Iterable[Chunk],
    thread_metadata: Mapping[str, Any] | None,
    progress: Progress | None = None,
    noted: Noted | None = None,
) -> int:
    """Steps for ``progress``: each chunk checked, then each one stored (or found stored);
    ``noted`` is told what was written (:mod:`._own_appends`)."""
    if noted is not None:
        noted.value = None  # a transaction run again starts afresh
    check_thread_id(thread_id)
    progress = progress or Progress(None)
    given = tuple(chunks)
    progress.start(2 * len(given))
    prepared = prepare_chunks(thread_id, progress.over(given))
    progress.advance(len(given) - len(prepared))  # ids given twice are stored once
    update = {} if thread_metadata is None else check_metadata(thread_metadata)
    thread = get_thread(session, thread_id, lock=True)
    added = append_chunks(session, thread, prepared, progress.advance, noted)
    with_chunks(noted, given)
    merge_metadata(session, thread, update)
    progress.finish()
    return added


def append_with(
    session: Session, thread_id: str, make: MakeChunks, noted: Noted | None = None
) -> int:
    if noted is not None:
        noted.value = None
    check_thread_id(thread_id)
    if not callable(make):
        raise StoreArgumentError(f"append_with needs a function, got {make!r}")
    thread = get_thread(session, thread_id, lock=True)
    made = make(thread.last_seq, metadata_of(thread))
    if not isinstance(made, tuple) or len(made) != 2:
        raise StoreArgumentError(
            f"append_with: make must return (chunks, metadata_update), got {made!r}"
        )
    chunks, update = made
    added = append_chunks(session, thread, prepare_chunks(thread_id, chunks), noted=noted)
    with_chunks(noted, chunks)
    merge_metadata(session, thread, {} if update is None else check_metadata(update))
    return added


def thread_metadata(session: Session, thread_id: str) -> dict[str, Any]:
    check_thread_id(thread_id)
    return metadata_of(get_thread(session, thread_id))


def update_thread_metadata(
    session: Session, thread_id: str, values: Mapping[str, Any]
) -> dict[str, Any]:
    check_thread_id(thread_id)
    update = check_metadata(values, "values")
    return merge_metadata(session, get_thread(session, thread_id, lock=True), update)


def current_state(session: Session, thread_id: str) -> MemoryState:
    check_thread_id(thread_id)
    thread = get_thread(session, thread_id)
    rows = visible_rows(session, get_batch(session, thread_id, thread.batch))
    return MemoryState([row_to_chunk(r) for r in rows], thread_id=thread_id)


def history(session: Session, thread_id: str) -> tuple[StoredChunk, ...]:
    check_thread_id(thread_id)
    thread = get_thread(session, thread_id)
    shown = set(visible_seqs(session, get_batch(session, thread_id, thread.batch)))
    return tuple(
        StoredChunk(r.seq, row_to_chunk(r), r.origin, r.batch, r.seq in shown)
        for r in history_rows(session, thread_id)
    )


def batches(session: Session, thread_id: str) -> tuple[Batch, ...]:
    check_thread_id(thread_id)
    current = get_thread(session, thread_id).batch
    return tuple(
        Batch(
            r.number,
            r.operation,
            load_json(r.params, "batch"),
            r.created_at,
            r.number == current,
        )
        for r in thread_batches(session, thread_id)
    )


def events(session: Session, thread_id: str, kind: str | None) -> tuple[StoreEvent, ...]:
    check_thread_id(thread_id)
    if kind is not None:
        check_event_kind(kind)
    get_thread(session, thread_id)
    return tuple(
        StoreEvent(r.id or 0, r.thread_id, r.kind, load_json(r.payload, "event"), r.created_at)
        for r in thread_events(session, thread_id, kind)
    )


def add_event(session: Session, thread_id: str, kind: str, payload: Mapping[str, Any]) -> None:
    check_thread_id(thread_id)
    get_thread(session, thread_id, lock=True)
    record_event(session, thread_id, kind, payload)


def _info(row: ThreadRow) -> ThreadInfo:
    return ThreadInfo(
        row.id, row.created_at, row.last_seq, row.batch, row.last_batch + 1, metadata_of(row)
    )
