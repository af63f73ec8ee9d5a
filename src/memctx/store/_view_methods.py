"""The view operations of :class:`~memctx.store.MemoryStore` (seed 001)."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from sqlmodel import col, select

from memctx._builder import ContextBuilder
from memctx._chunk import Chunk, ChunkType
from memctx._exceptions import ViewOperationError
from memctx._validators import describe, is_bool, message_error, non_empty_str
from memctx.store import _views
from memctx.store._base import StoreBase
from memctx.store._queries import check_payload, check_thread_id, get_thread
from memctx.store._records import Batch
from memctx.store._schema import BatchRow, load_json, parse_iso


class ViewMethods(StoreBase):
    """Non-destructive views: each operation changes only which chunks are visible.

    Every operation starts a new batch and returns its number; history is
    never deleted, and :meth:`rollback` returns to any batch.
    """

    def _change(
        self,
        thread_id: str,
        operation: str,
        params: Mapping[str, Any],
        compute: _views.Compute,
        new_chunks: tuple[Chunk, ...] = (),
        origin: str = "insert",
        refers_to: str | None = None,
    ) -> int:
        check_thread_id(thread_id)
        with self._session(write=True) as session:
            return _views.change_view(
                session, thread_id, operation, params, compute, new_chunks, origin, refers_to
            )

    def truncate(
        self,
        thread_id: str,
        *,
        keep_first: int | None = None,
        keep_last: int | None = None,
        remove_first: int | None = None,
        remove_last: int | None = None,
        range: tuple[int | None, int | None] | None = None,
    ) -> int:
        """Show only part of the visible chunks; return the new batch.

        Give exactly one of ``keep_first``/``keep_last``/``remove_first``/
        ``remove_last`` (counts) or ``range=(start, end)`` (a slice of the
        visible chunks; ``end`` excluded, negative counts from the end).
        """
        name, value = _views.truncation(
            keep_first=keep_first,
            keep_last=keep_last,
            remove_first=remove_first,
            remove_last=remove_last,
            range=range,
        )
        return self._change(
            thread_id,
            "truncate",
            {name: value},
            lambda visible, _: _views.truncate_view([s for s, _ in visible], name, value),
        )

    def insert(self, thread_id: str, position: int, *chunks: Chunk) -> int:
        """Store ``chunks`` and show them at visible ``position`` (``-1``: the end).

        Return the new batch. A chunk stored already (the same value) is
        shown rather than stored twice; one that is visible already is a
        :class:`~memctx.ViewOperationError`.
        """
        if not chunks:
            raise ViewOperationError("insert needs at least one chunk")

        def compute(visible: _views.Visible, new: list[int]) -> list[int]:
            view = [s for s, _ in visible]
            at = _views.insert_position(position, len(view))
            return view[:at] + new + view[at:]

        _views.check_position(position)
        params = {"position": position, "chunk_ids": [getattr(c, "id", None) for c in chunks]}
        return self._change(thread_id, "insert", params, compute, chunks, "insert")

    def replace(self, thread_id: str, target: int | str, chunk: Chunk) -> int:
        """Show ``chunk`` in place of the visible chunk ``target`` (an index or a chunk id).

        The replaced chunk stays in the history. ``chunk`` needs an id of its
        own (a thread's ids are unique). Return the new batch.
        """
        params: dict[str, Any] = {"target": target, "chunk_id": getattr(chunk, "id", None)}

        def compute(visible: _views.Visible, new: list[int]) -> list[int]:
            index = _views.replace_index(target, visible)
            params["replaced_chunk_id"] = visible[index][1].id
            return [new[0] if i == index else s for i, (s, _) in enumerate(visible)]

        refers_to = target if isinstance(target, str) else None
        return self._change(thread_id, "replace", params, compute, (chunk,), "replace", refers_to)

    def clear(self, thread_id: str, *, keep_system: bool = True) -> int:
        """Hide every visible chunk, or every one but the SYSTEM chunks; return the new batch."""
        is_bool(message_error(ViewOperationError)).check(keep_system, "keep_system")
        return self._change(
            thread_id,
            "clear",
            {"keep_system": keep_system},
            lambda visible, _: [
                s for s, c in visible if keep_system and c.type is ChunkType.SYSTEM
            ],
        )

    def filter(
        self,
        thread_id: str,
        *,
        roles: str | Iterable[str] | None = None,
        types: ChunkType | str | Iterable[ChunkType | str] | None = None,
        contains: str | Iterable[str] | None = None,
        excludes: str | Iterable[str] | None = None,
        builder: ContextBuilder | None = None,
    ) -> int:
        """Keep visible only the chunks that meet every criterion given; return the new batch.

        ``roles``: the chat role the chunk is rendered under (by ``builder``'s
        renderers); ``types``: :class:`~memctx.ChunkType`\\ s; ``contains``:
        texts that must all occur in the content; ``excludes``: texts none
        of which may occur.
        """
        params = _views.filter_params(roles, types, contains, excludes)
        registry = (builder or self.builder).registry
        role_of: Callable[[Chunk], Any] = lambda c: registry.resolve(c).get_role(c)  # noqa: E731
        keep = _views.filter_predicate(params, role_of)
        return self._change(
            thread_id, "filter", params, lambda visible, _: [s for s, c in visible if keep(c)]
        )

    def apply_view(
        self,
        thread_id: str,
        chunks: Sequence[Chunk],
        *,
        operation: str,
        params: Mapping[str, Any] | None = None,
        events: Sequence[tuple[str, Mapping[str, Any]]] = (),
    ) -> int:
        """Make ``chunks`` the visible list, in that order, as one new batch; return it.

        The building block of view operations of your own (compression,
        compaction): a chunk the thread holds already (same id) must be
        equal to the stored one, else :class:`~memctx.ChunkConflictError`,
        and is shown again; a new chunk is stored in the history (origin
        ``view``). ``operation`` and ``params`` (JSON) describe the batch,
        and ``events`` (``(kind, payload)`` pairs) are recorded with it,
        all in one transaction. Chunks appended later are visible after the
        view; :meth:`rollback` returns to the previous batch.
        """
        check_thread_id(thread_id)
        non_empty_str(message_error(ViewOperationError), blank_ok=False).check(
            operation, "operation"
        )
        params = {} if params is None else params
        if isinstance(chunks, str | bytes) or not isinstance(chunks, Sequence):
            raise ViewOperationError(f"chunks must be a sequence of chunks, got {describe(chunks)}")
        check_payload(operation, params)
        checked = _views.check_events(events)
        with self._session(write=True) as session:
            return _views.apply_view(session, thread_id, chunks, operation, params, checked)

    def rollback(self, thread_id: str, batch: int) -> int:
        """Show again what ``batch`` showed, plus the chunks appended since; return the new batch.

        The rollback is itself a batch, so it can be rolled back too.
        """
        check_thread_id(thread_id)
        with self._session(write=True) as session:
            return _views.rollback(session, thread_id, batch)

    def batches(self, thread_id: str) -> tuple[Batch, ...]:
        """The thread's batches, oldest first."""
        check_thread_id(thread_id)
        with self._session(write=False) as session:
            current = get_thread(session, thread_id).batch
            rows = session.exec(
                select(BatchRow)
                .where(BatchRow.thread_id == thread_id)
                .order_by(col(BatchRow.number))
            )
            return tuple(
                Batch(
                    r.number,
                    r.operation,
                    load_json(r.params, "batch"),
                    parse_iso(r.created_at),
                    r.number == current,
                )
                for r in rows
            )
