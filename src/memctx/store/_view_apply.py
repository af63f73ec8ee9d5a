"""Views computed by the caller: ``apply_view``, and the compressions and compactions
the store computes from what it read (:mod:`memctx.store._context_ops`).

A view computed from a state read earlier must not hide what was appended
since: :func:`read_view` says what the view was computed from, and the
chunks visible after that are kept visible after the view. When the thread
changed otherwise (another view operation), nothing is written: the store's
own operations compute again, a caller's ``apply_view(based_on=...)`` gets a
:class:`~memctx.ViewConflictError`.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import attrs
from sqlmodel import Session

from memctx._chunk import Chunk
from memctx._exceptions import StoreArgumentError, ViewConflictError, ViewOperationError
from memctx._state import MemoryState
from memctx._validators import describe, message_error, non_empty_str
from memctx.store._queries import (
    check_payload,
    check_thread_id,
    get_batch,
    get_thread,
    record_event,
)
from memctx.store._row_reads import appended_seqs, visible_rows, visible_seqs
from memctx.store._schema import row_to_chunk
from memctx.store._view_ops import new_view, place_chunks

_error = message_error(ViewOperationError)


def apply_view(
    session: Session,
    thread_id: str,
    chunks: Sequence[Chunk],
    operation: str,
    params: Mapping[str, Any] | None,
    events: Iterable[tuple[str, Mapping[str, Any]]],
    based_on: object = None,
) -> int:
    """Make ``chunks`` the visible list as one new batch; record ``events`` with it.

    ``based_on`` (the state, or the chunk ids, the view was computed from):
    the chunks visible after those are kept visible after the view; a
    thread whose visible chunks no longer start with them is a
    :class:`~memctx.ViewConflictError`.
    """
    seen = None if based_on is None else based_on_ids(thread_id, based_on)
    number = _apply(session, thread_id, chunks, operation, params, events, seen)
    assert number is not None
    return number


def based_on_ids(thread_id: str, based_on: object) -> tuple[str, ...]:
    """The chunk ids of ``based_on``: a :class:`~memctx.MemoryState` of the thread, or ids."""
    if isinstance(based_on, MemoryState):
        if based_on.thread_id not in (None, thread_id):
            raise ViewOperationError(
                f"based_on is a state of thread {based_on.thread_id!r}, not of {thread_id!r}"
            )
        return based_on.ids
    if isinstance(based_on, str | bytes) or not isinstance(based_on, Sequence):
        raise ViewOperationError(
            "based_on must be the state the view was computed from (or its chunk ids), "
            f"got {describe(based_on)}"
        )
    for chunk_id in based_on:
        non_empty_str(_error, blank_ok=False).check(chunk_id, "based_on's chunk ids")
    return tuple(based_on)


@attrs.frozen
class Seen:
    """What a view was computed from: the thread's newest batch then, and the newest
    sequence number the computation read."""

    batch: int
    seq: int


def read_view(session: Session, thread_id: str, *, lock: bool = False) -> tuple[MemoryState, Seen]:
    """The visible chunks and what they were read at (:func:`apply_seen_view` checks it)."""
    check_thread_id(thread_id)
    thread = get_thread(session, thread_id, lock=lock)
    rows = visible_rows(session, get_batch(session, thread_id, thread.batch))
    seen = Seen(thread.last_batch, max([thread.last_seq, *(row.seq for row in rows)]))
    return MemoryState([row_to_chunk(r) for r in rows], thread_id=thread_id), seen


def apply_seen_view(
    session: Session,
    thread_id: str,
    chunks: Sequence[Chunk],
    operation: str,
    params: Mapping[str, Any] | None,
    events: Iterable[tuple[str, Mapping[str, Any]]],
    seen: Seen,
) -> int | None:
    """:func:`apply_view` for a view computed from what :func:`read_view` returned.

    The chunks appended since ``seen`` were not seen, so they stay visible
    after the view. When another view operation started a batch since, the
    view would undo it: nothing is written and ``None`` is returned (compute
    again).
    """
    return _apply(session, thread_id, chunks, operation, params, events, seen)


def _apply(
    session: Session,
    thread_id: str,
    chunks: Sequence[Chunk],
    operation: str,
    params: Mapping[str, Any] | None,
    events: Iterable[tuple[str, Mapping[str, Any]]],
    seen: Seen | tuple[str, ...] | None,
) -> int | None:
    """Write the view; ``seen``: what it was computed from (a :class:`Seen`, whose
    batch must still be the newest, else ``None`` is returned; or the chunk ids
    the visible list must still start with, else :class:`~memctx.ViewConflictError`)."""
    check_thread_id(thread_id)
    non_empty_str(_error, blank_ok=False).check(operation, "operation")
    if isinstance(chunks, str | bytes) or not isinstance(chunks, Sequence):
        raise ViewOperationError(f"chunks must be a sequence of chunks, got {describe(chunks)}")
    params = {} if params is None else params
    check_payload(operation, params, "params (the view's parameters)")
    checked = check_events(events)
    thread = get_thread(session, thread_id, lock=True)
    previous = thread.batch
    unseen: list[int] = []
    if isinstance(seen, tuple):
        rows = visible_rows(session, get_batch(session, thread_id, previous))
        visible_ids = [row.chunk_id for row in rows[: len(seen)]]
        if visible_ids != list(seen):
            raise ViewConflictError(thread_id, _difference(seen, visible_ids))
        before = len(rows)
        unseen = [row.seq for row in rows[len(seen) :]]
    else:
        if seen is not None and thread.last_batch != seen.batch:
            return None
        before = len(visible_seqs(session, get_batch(session, thread_id, previous)))
        if seen is not None and thread.last_seq > seen.seq:
            unseen = appended_seqs(session, thread_id, seen.seq)
    _, view = place_chunks(session, thread, chunks, "view")
    shown = set(view)
    view += [s for s in unseen if s not in shown]
    number = new_view(session, thread, operation, params, view, previous, before)
    for kind, payload in checked:
        record_event(session, thread_id, kind, payload)
    return number


def _difference(based_on: Sequence[str], visible: Sequence[str]) -> str:
    """Where the visible chunks stop matching ``based_on``, for the conflict's message."""
    at = next((i for i, (a, b) in enumerate(zip(based_on, visible, strict=False)) if a != b), None)
    if at is None:
        return f"{len(visible)} of the {len(based_on)} chunks it was computed from are visible"
    return f"visible chunk {at} is {visible[at]!r}, the state had {based_on[at]!r}"


View = tuple[Sequence[Chunk], str, Mapping[str, Any], Sequence[tuple[str, Mapping[str, Any]]]]
"""One view to write: its chunks, operation, params and events."""


def apply_views_on(
    session: Session, thread_id: str, based_on: Sequence[str], views: Sequence[View]
) -> tuple[int, ...] | None:
    """Write ``views`` in order, each a batch, if the visible chunks still start with
    ``based_on`` (the ids the views were computed from); return their batch numbers.

    Chunks appended since (visible after ``based_on``) are kept visible after each
    view, all in this one transaction, so no append is ever hidden. ``None`` (and
    nothing written) when the view changed otherwise: compute again.
    """
    check_thread_id(thread_id)
    checked = [
        (chunks, operation, params, check_events(events))
        for chunks, operation, params, events in views
    ]
    thread = get_thread(session, thread_id, lock=True)
    previous = thread.batch
    rows = visible_rows(session, get_batch(session, thread_id, previous))
    if [row.chunk_id for row in rows[: len(based_on)]] != list(based_on):
        return None
    appended = [row_to_chunk(row) for row in rows[len(based_on) :]]
    before = len(rows)
    numbers = []
    for chunks, operation, params, events in checked:
        check_payload(operation, params, "params (the view's parameters)")
        _, view = place_chunks(session, thread, [*chunks, *appended], "view")
        previous = new_view(session, thread, operation, params, view, previous, before)
        for kind, payload in events:
            record_event(session, thread_id, kind, payload)
        before = len(view)
        numbers.append(previous)
    return tuple(numbers)


def check_events(events: object) -> list[tuple[str, Mapping[str, Any]]]:
    """Events to record: ``(kind, payload)`` pairs, each checked by :func:`check_payload`."""
    if isinstance(events, str | bytes | Mapping) or not isinstance(events, Iterable):
        raise StoreArgumentError(f"events must be (kind, payload) pairs, got {describe(events)}")
    checked: list[tuple[str, Mapping[str, Any]]] = []
    for event in events:
        if not isinstance(event, tuple | list) or len(event) != 2:
            raise StoreArgumentError(
                f"an event must be a (kind, payload) pair, got {describe(event)}"
            )
        kind, payload = event
        check_payload(kind, payload)
        checked.append((kind, payload))
    return checked
