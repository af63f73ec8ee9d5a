"""MemoryStore: threads of chunks in SQLite or PostgreSQL, safe for concurrent processes."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Mapping
from typing import Any, TypeAlias

from sqlalchemy import delete
from sqlmodel import col, select

from memctx._builder import ContextBuilder
from memctx._chunk import Chunk
from memctx._exceptions import StoreArgumentError, ThreadExistsError
from memctx._result import ContextBuildResult
from memctx._state import MemoryState
from memctx.store._build import build_thread
from memctx.store._queries import (
    append_chunks,
    check_event_kind,
    check_metadata,
    check_thread_id,
    get_batch,
    get_thread,
    history_rows,
    merge_metadata,
    metadata_of,
    prepare_chunks,
    record_event,
    visible_rows,
    visible_seqs,
)
from memctx.store._records import StoredChunk, StoreEvent, ThreadInfo
from memctx.store._schema import (
    BatchRow,
    ChunkRow,
    EventRow,
    ThreadRow,
    TokenCountRow,
    load_json,
    now_iso,
    parse_iso,
    row_to_chunk,
)
from memctx.store._snapshot import export_thread, parse_snapshot, write_snapshot
from memctx.store._view_methods import ViewMethods

MakeChunks: TypeAlias = Callable[
    [int, dict[str, Any]], tuple[Iterable[Chunk], Mapping[str, Any] | None]
]
"""What :meth:`MemoryStore.append_with` calls: ``(length, metadata) -> (chunks, update)``."""


class MemoryStore(ViewMethods):
    """Threads of chunks, persisted in SQLite (the default) or PostgreSQL.

    Open one with :meth:`open`; close it with :meth:`close` or use it as a
    context manager. One store may be used from several threads, and any
    number of processes may open the same database: appends are atomic and
    each thread's sequence numbers stay gap-free and ordered.

    A thread holds every chunk ever appended (:meth:`get_all_chunks`); the
    view operations (:meth:`truncate`, :meth:`insert`, :meth:`replace`,
    :meth:`clear`, :meth:`filter`) only change which of them are visible
    (:meth:`get_current_state`), each starting a new batch that
    :meth:`rollback` can return from.
    """

    # -- threads ------------------------------------------------------------------------------

    def create_thread(self, thread_id: str | None = None, *, exist_ok: bool = False) -> str:
        """Create a thread and return its id (``thread_<hex>`` when not given).

        An existing id raises :class:`~memctx.ThreadExistsError` unless ``exist_ok``.
        """
        if thread_id is None:
            thread_id = "thread_" + os.urandom(6).hex()
        check_thread_id(thread_id)
        try:
            with self._session(write=True, on_conflict=lambda: ThreadExistsError(thread_id)) as s:
                if s.get(ThreadRow, thread_id) is not None:
                    raise ThreadExistsError(thread_id)
                s.add(ThreadRow(id=thread_id, created_at=now_iso()))
                s.flush()
                s.add(
                    BatchRow(
                        thread_id=thread_id,
                        number=0,
                        operation="create",
                        params="{}",
                        base_seq=0,
                        created_at=now_iso(),
                    )
                )
        except ThreadExistsError:
            if not exist_ok:
                raise
        return thread_id

    def has_thread(self, thread_id: str) -> bool:
        """Whether the thread exists."""
        check_thread_id(thread_id)
        with self._session(write=False) as session:
            return session.get(ThreadRow, thread_id) is not None

    def thread_info(self, thread_id: str) -> ThreadInfo:
        """The thread's summary; :class:`~memctx.ThreadNotFoundError` if there is none."""
        check_thread_id(thread_id)
        with self._session(write=False) as session:
            return _info(get_thread(session, thread_id))

    def list_threads(self) -> list[ThreadInfo]:
        """Every thread, oldest first."""
        with self._session(write=False) as session:
            rows = session.exec(
                select(ThreadRow).order_by(col(ThreadRow.created_at), col(ThreadRow.id))
            )
            return [_info(row) for row in rows]

    def delete_thread(self, thread_id: str) -> None:
        """Delete the thread with all its chunks, batches, events and cached counts."""
        check_thread_id(thread_id)
        with self._session(write=True) as session:
            get_thread(session, thread_id, lock=True)
            session.exec(delete(TokenCountRow).where(col(TokenCountRow.thread_id) == thread_id))
            session.exec(delete(EventRow).where(col(EventRow.thread_id) == thread_id))
            session.exec(delete(BatchRow).where(col(BatchRow.thread_id) == thread_id))
            session.exec(delete(ChunkRow).where(col(ChunkRow.thread_id) == thread_id))
            session.exec(delete(ThreadRow).where(col(ThreadRow.id) == thread_id))

    # -- chunks -------------------------------------------------------------------------------

    def append(
        self,
        thread_id: str,
        *chunks: Chunk,
        thread_metadata: Mapping[str, Any] | None = None,
    ) -> int:
        """Append ``chunks`` in one transaction; return how many were new.

        Idempotent on chunk id: a chunk stored already (the same value) is
        skipped, so retrying an append is safe. A *different* chunk under a
        stored id raises :class:`~memctx.ChunkConflictError` and nothing of
        the call is stored. "The same" means stored identically, field by
        field: content ``1`` and ``1.0`` (or reordered keys) render
        differently, so they differ. New chunks are visible at the end of
        the view. ``thread_metadata`` is merged into the thread's metadata
        in the same transaction.
        """
        check_thread_id(thread_id)
        prepared = prepare_chunks(thread_id, chunks)
        update = {} if thread_metadata is None else check_metadata(thread_metadata)
        with self._session(write=True) as session:
            thread = get_thread(session, thread_id, lock=True)
            added = append_chunks(session, thread, prepared)
            merge_metadata(session, thread, update)
            return added

    def append_with(self, thread_id: str, make: MakeChunks) -> int:
        """Append what ``make`` returns, deciding it under the thread's write lock.

        ``make(length, metadata)`` is called inside the write transaction
        with the number of chunks in the thread's history and a copy of its
        metadata, and returns ``(chunks, metadata_update)``: the chunks are
        appended (as :meth:`append` does) and the update (or ``None``)
        merged into the metadata, in that transaction. No other writer of
        the thread, in any process, runs between the call and the commit,
        so ``make`` can number chunks (``msg-{length + 1}``) or advance a
        state kept in the metadata without gaps or lost updates. An
        exception from ``make`` propagates and nothing is written. Returns
        how many chunks were new.
        """
        check_thread_id(thread_id)
        with self._session(write=True) as session:
            thread = get_thread(session, thread_id, lock=True)
            made = make(thread.last_seq, metadata_of(thread))
            if not isinstance(made, tuple) or len(made) != 2:
                raise StoreArgumentError(
                    f"append_with: make must return (chunks, metadata_update), got {made!r}"
                )
            new_chunks, update = made
            prepared = prepare_chunks(thread_id, new_chunks)
            added = append_chunks(session, thread, prepared)
            merge_metadata(session, thread, {} if update is None else check_metadata(update))
            return added

    def thread_metadata(self, thread_id: str) -> dict[str, Any]:
        """A copy of the thread's metadata (a JSON object; ``{}`` until some is set)."""
        check_thread_id(thread_id)
        with self._session(write=False) as session:
            return metadata_of(get_thread(session, thread_id))

    def update_thread_metadata(self, thread_id: str, values: Mapping[str, Any]) -> dict[str, Any]:
        """Merge ``values`` into the thread's metadata (key by key, atomically); return it all.

        Values are JSON values and read back with the same types. A key
        given replaces the stored value of that key; other keys are kept.
        """
        check_thread_id(thread_id)
        update = check_metadata(values, "values")
        with self._session(write=True) as session:
            return merge_metadata(session, get_thread(session, thread_id, lock=True), update)

    def get_current_state(self, thread_id: str) -> MemoryState:
        """The visible chunks of the thread, in order, as a :class:`~memctx.MemoryState`."""
        check_thread_id(thread_id)
        with self._session(write=False) as session:
            thread = get_thread(session, thread_id)
            rows = visible_rows(session, get_batch(session, thread_id, thread.batch))
            return MemoryState([row_to_chunk(r) for r in rows], thread_id=thread_id)

    def get_all_chunks(self, thread_id: str) -> tuple[Chunk, ...]:
        """Every chunk ever stored in the thread, visible or not, in the order they were stored."""
        return tuple(item.chunk for item in self.history(thread_id))

    def history(self, thread_id: str) -> tuple[StoredChunk, ...]:
        """Every stored chunk with its sequence number, origin, batch and visibility."""
        check_thread_id(thread_id)
        with self._session(write=False) as session:
            thread = get_thread(session, thread_id)
            shown = set(visible_seqs(session, get_batch(session, thread_id, thread.batch)))
            rows = history_rows(session, thread_id)
            return tuple(
                StoredChunk(r.seq, row_to_chunk(r), r.origin, r.batch, r.seq in shown) for r in rows
            )

    # -- views ----------------------------------------------------------------------------

    # -- snapshots, events, builds ------------------------------------------------------------

    def export_snapshot(self, thread_id: str) -> dict[str, Any]:
        """The thread (visible chunks, history, batches) as a versioned JSON document."""
        check_thread_id(thread_id)
        with self._session(write=False) as session:
            return export_thread(session, thread_id)

    def import_snapshot(
        self, data: Mapping[str, Any] | str | bytes, *, thread_id: str | None = None
    ) -> str:
        """Create a thread from a snapshot (a document or its JSON text); return its id.

        The id is ``thread_id``, else the snapshot's own. The whole snapshot
        is checked first: a corrupt or unsupported one raises
        :class:`~memctx.StateFileError` and nothing is written.
        """
        snapshot = parse_snapshot(data)
        target = thread_id if thread_id is not None else snapshot.thread_id
        if target is None:
            raise StoreArgumentError("the snapshot names no thread; pass thread_id")
        check_thread_id(target)
        with self._session(write=True, on_conflict=lambda: ThreadExistsError(target)) as s:
            if s.get(ThreadRow, target) is not None:
                raise ThreadExistsError(target)
            write_snapshot(s, snapshot, target)
        return target

    def events(self, thread_id: str, kind: str | None = None) -> tuple[StoreEvent, ...]:
        """The thread's events (only those of ``kind`` when given), oldest first."""
        check_thread_id(thread_id)
        if kind is not None:
            check_event_kind(kind)
        with self._session(write=False) as session:
            get_thread(session, thread_id)
            statement = select(EventRow).where(EventRow.thread_id == thread_id)
            if kind is not None:
                statement = statement.where(EventRow.kind == kind)
            rows = session.exec(statement.order_by(col(EventRow.id)))
            return tuple(
                StoreEvent(
                    r.id or 0,
                    r.thread_id,
                    r.kind,
                    load_json(r.payload, "event"),
                    parse_iso(r.created_at),
                )
                for r in rows
            )

    def record_event(self, thread_id: str, kind: str, payload: Mapping[str, Any]) -> None:
        """Record an event of your own (e.g. ``context.compressed``) with a JSON payload."""
        check_thread_id(thread_id)
        with self._session(write=True) as session:
            get_thread(session, thread_id, lock=True)
            record_event(session, thread_id, kind, payload)

    def build(
        self,
        thread_id: str,
        max_tokens: int | None = None,
        *,
        builder: ContextBuilder | None = None,
        **options: Any,
    ) -> ContextBuildResult:
        """Build the thread's visible chunks, as :meth:`ContextBuilder.build` does.

        Token counts stored by earlier builds are reused and new ones stored
        (per tokenizer ``cache_key`` and renderer chain), and a
        ``context.built`` event records the budget, the token count and how
        many chunks were included and left out.
        """
        check_thread_id(thread_id)
        return build_thread(self._session, thread_id, builder or self.builder, max_tokens, options)


def _info(row: ThreadRow) -> ThreadInfo:
    return ThreadInfo(
        row.id,
        parse_iso(row.created_at),
        row.last_seq,
        row.batch,
        row.last_batch + 1,
        metadata_of(row),
    )
