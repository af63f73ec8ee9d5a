"""The view operations, each one write transaction: a new batch, its event, never a deletion.

A view operation never deletes or changes a stored chunk. It computes a new
list of visible chunks from the current one (:mod:`memctx.store._views`),
stores it as a new batch and makes that batch current. Chunks appended later
are visible after the view. A rollback starts a new batch that shows what an
earlier batch shows (plus the chunks appended since): rollbacks are batches
too, so they can be rolled back in turn.

Every function takes the session of a write transaction and checks its
arguments before it writes; :class:`~memctx.store.MemoryStore` and
:class:`~memctx.store.AsyncMemoryStore` both run them.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from sqlalchemy import Row
from sqlmodel import Session

from memctx._build.builder import ContextBuilder
from memctx._chunk import Chunk, ChunkType, Role
from memctx._exceptions import ViewOperationError
from memctx._validators import describe, int_in_range, is_bool, message_error
from memctx.store import _views
from memctx.store._queries import (
    check_thread_id,
    chunk_not_found,
    get_batch,
    get_thread,
    new_batch,
    prepare_chunks,
    record_event,
    split_existing,
    store_new,
)
from memctx.store._records import VIEW_CHANGED
from memctx.store._row_reads import (
    rows_by_chunk_id,
    visible_rows,
    visible_seqs,
)
from memctx.store._schema import ThreadRow, row_to_chunk

_error = message_error(ViewOperationError)


def truncate(session: Session, thread_id: str, given: Mapping[str, Any]) -> int:
    """Show only part of the visible chunks (one of :data:`~._views.TRUNCATIONS`)."""
    name, value = _views.truncation(**given)
    return _change(
        session,
        thread_id,
        "truncate",
        {name: value},
        lambda visible, _: _views.truncate_view([s for s, _ in visible], name, value),
    )


def insert(session: Session, thread_id: str, position: int, chunks: Sequence[Chunk]) -> int:
    """Store ``chunks`` (or reuse stored ones) and show them at visible ``position``."""
    if not chunks:
        raise ViewOperationError("insert needs at least one chunk")
    _views.check_position(position)

    def compute(visible: _views.Visible, new: list[int]) -> list[int]:
        view = [s for s, _ in visible]
        at = _views.insert_position(position, len(view))
        return view[:at] + new + view[at:]

    params = {"position": position, "chunk_ids": [getattr(c, "id", None) for c in chunks]}
    return _change(session, thread_id, "insert", params, compute, chunks, "insert")


def replace(session: Session, thread_id: str, target: int | str, chunk: Chunk) -> int:
    """Show ``chunk`` in place of the visible chunk ``target`` (an index or a chunk id)."""
    params: dict[str, Any] = {"target": target, "chunk_id": getattr(chunk, "id", None)}

    def compute(visible: _views.Visible, new: list[int]) -> list[int]:
        index = _views.replace_index(target, visible)
        params["replaced_chunk_id"] = visible[index][1].id
        return [new[0] if i == index else s for i, (s, _) in enumerate(visible)]

    refers_to = target if isinstance(target, str) else None
    return _change(session, thread_id, "replace", params, compute, (chunk,), "replace", refers_to)


def clear(session: Session, thread_id: str, keep_system: bool, keep: object = ()) -> int:
    """Hide every visible chunk, or every one but the SYSTEM chunks.

    ``keep`` names chunks of the thread the cleared view shows as well,
    visible before or not (seed 001's tool description, which a clear
    brings back): first, in the order of the thread's history.
    """
    is_bool(_error).check(keep_system, "keep_system")
    kept_ids = _views.chunk_ids("keep", keep)
    check_thread_id(thread_id)
    get_thread(session, thread_id, lock=True)
    rows = rows_by_chunk_id(session, thread_id, kept_ids) if kept_ids else {}
    for chunk_id in kept_ids:
        if chunk_id not in rows:
            raise chunk_not_found(session, thread_id, chunk_id)
    extra = sorted(row.seq for row in rows.values())

    def compute(visible: _views.Visible, _: list[int]) -> list[int]:
        system = [s for s, c in visible if keep_system and c.type is ChunkType.SYSTEM]
        return extra + [s for s in system if s not in extra]

    params: dict[str, Any] = {"keep_system": keep_system}
    if kept_ids:
        params["keep"] = list(kept_ids)
    return _change(session, thread_id, "clear", params, compute)


def role_function(builder: ContextBuilder) -> Callable[[Chunk], Role]:
    """The chat role ``builder``'s renderers give a chunk."""
    registry = builder.registry
    return lambda chunk: registry.resolve(chunk).get_role(chunk)


def filter_view(
    session: Session,
    thread_id: str,
    criteria: Mapping[str, Any],
    role_of: Callable[[Chunk], Role],
) -> int:
    """Keep visible only the chunks meeting every criterion (see :func:`_views.filter_params`)."""
    params = _views.filter_params(**criteria)
    keep = _views.filter_predicate(params, role_of)
    return _change(
        session, thread_id, "filter", params, lambda visible, _: [s for s, c in visible if keep(c)]
    )


def rollback(session: Session, thread_id: str, target: object) -> int:
    """Start a batch that shows what batch ``target`` shows; return its number."""
    check_thread_id(thread_id)
    thread = get_thread(session, thread_id, lock=True)
    target = int_in_range(_error).check(target, "batch")
    if not 0 <= target <= thread.last_batch:
        raise ViewOperationError(
            f"thread {thread_id!r} has batches 0..{thread.last_batch}; "
            f"there is no batch {describe(target)}"
        )
    previous = thread.batch
    before = len(visible_seqs(session, get_batch(session, thread_id, previous)))
    target_row = get_batch(session, thread_id, target)
    view = None if target_row.view is None else visible_seqs(session, target_row)
    return new_view(session, thread, "rollback", {"batch": target}, view, previous, before)


def _change(
    session: Session,
    thread_id: str,
    operation: str,
    params: Mapping[str, Any],
    compute: _views.Compute,
    new_chunks: Sequence[Chunk] = (),
    origin: str = "insert",
    refers_to: str | None = None,
) -> int:
    """Run one view operation; return the new batch.

    ``new_chunks`` (insert, replace) are stored first; one that is already
    stored unchanged is reused, unless it is visible already. ``refers_to``
    is a chunk id the operation needs visible (replace by id): one the
    thread does not hold is a :class:`~memctx.ChunkNotFoundError`.
    """
    check_thread_id(thread_id)
    thread = get_thread(session, thread_id, lock=True)
    previous = thread.batch
    visible: _views.Visible = [
        (row.seq, row_to_chunk(row))
        for row in visible_rows(session, get_batch(session, thread_id, previous))
    ]
    if refers_to is not None and all(chunk.id != refers_to for _, chunk in visible):
        if not rows_by_chunk_id(session, thread_id, [refers_to]):
            raise chunk_not_found(session, thread_id, refers_to)
        raise ViewOperationError(
            f"chunk {refers_to!r} is hidden in the current batch; only visible chunks can be "
            "replaced"
        )
    seqs: list[int] = []
    if new_chunks:
        existing, seqs = place_chunks(session, thread, new_chunks, origin)
        shown = {seq for seq, _ in visible}
        for row in existing.values():
            if row.seq in shown:
                raise ViewOperationError(
                    f"chunk {row.chunk_id!r} is visible already; a chunk is shown only once"
                )
    view = compute(visible, seqs)
    return new_view(session, thread, operation, params, view, previous, len(visible))


def place_chunks(
    session: Session, thread: ThreadRow, chunks: Sequence[Chunk], origin: str
) -> tuple[dict[str, Row[Any]], list[int]]:
    """Store the chunks not stored yet; return the stored ones and every chunk's sequence number.

    A chunk stored already must be the same chunk (else
    :class:`~memctx.ChunkConflictError`); one given twice is a
    :class:`~memctx.ViewOperationError` (a view shows a chunk once).
    """
    prepared = prepare_chunks(thread.id, chunks)
    if len(prepared) != len(chunks):
        twice = next(i for i, n in Counter(c.id for c in chunks).items() if n > 1)
        raise ViewOperationError(f"chunk {twice!r} is given twice; a view shows a chunk once")
    existing, new = split_existing(session, thread.id, prepared)
    added = iter(store_new(session, thread, new, origin))
    return existing, [existing[cid].seq if cid in existing else next(added) for cid in prepared]


def new_view(
    session: Session,
    thread: ThreadRow,
    operation: str,
    params: Mapping[str, Any],
    view: list[int] | None,
    previous: int,
    before: int,
) -> int:
    """Store ``view`` as the thread's new current batch with its ``view.changed`` event."""
    batch = new_batch(session, thread, operation, params, view)
    after = len(view) if view is not None else len(visible_seqs(session, batch))
    record_event(
        session,
        thread.id,
        VIEW_CHANGED,
        {
            "operation": operation,
            "params": dict(params),
            "batch": batch.number,
            "previous_batch": previous,
            "visible_before": before,
            "visible_after": after,
        },
    )
    return batch.number
