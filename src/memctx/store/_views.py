"""Non-destructive views (seed 001): which stored chunks are visible, batch by batch.

A view operation never deletes or changes a stored chunk. It computes a new
list of visible chunks from the current one, stores it as a new batch and
makes that batch current. Chunks appended later are visible after the view.
A rollback starts a new batch that shows what an earlier batch shows (plus
the chunks appended since): rollbacks are batches too, so they can be
rolled back in turn.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any, Final, TypeAlias

from sqlmodel import Session

from memctx._chunk import ROLES, Chunk, ChunkType, Role
from memctx._exceptions import StoreArgumentError, ViewOperationError
from memctx._validators import describe, int_in_range, message_error, non_empty_str
from memctx.store._queries import (
    check_payload,
    chunk_not_found,
    get_batch,
    get_thread,
    new_batch,
    prepare_chunks,
    record_event,
    rows_by_chunk_id,
    split_existing,
    store_new,
    visible_rows,
    visible_seqs,
)
from memctx.store._records import VIEW_CHANGED
from memctx.store._schema import ChunkRecord, ThreadRow, row_to_chunk

Visible: TypeAlias = list[tuple[int, Chunk]]
"""The visible chunks with their sequence numbers, in view order."""

Compute: TypeAlias = Callable[[Visible, list[int]], list[int]]
"""Computes the new view from the visible chunks and the sequence numbers of new chunks."""

TRUNCATIONS: Final = ("keep_first", "keep_last", "remove_first", "remove_last", "range")


_error: Final = message_error(ViewOperationError)
_COUNT: Final = int_in_range(_error, 0)
_INT: Final = int_in_range(_error)
_NON_EMPTY: Final = non_empty_str(_error)


def _count(name: str, value: object) -> int:
    return _COUNT.check(value, name)


def truncation(**given: Any) -> tuple[str, Any]:
    """The one truncation asked for, checked: ``(name, value)``; ``range`` is ``[start, end]``."""
    chosen = [(name, value) for name, value in given.items() if value is not None]
    if len(chosen) != 1:
        names = ", ".join(TRUNCATIONS)
        got = ", ".join(name for name, _ in chosen) or "none"
        raise ViewOperationError(f"truncate takes exactly one of {names}; got {got}")
    name, value = chosen[0]
    if name != "range":
        return name, _count(name, value)
    if isinstance(value, str) or not isinstance(value, Sequence) or len(value) != 2:
        raise ViewOperationError(f"range must be (start, end), got {describe(value)}")
    start, end = value
    for bound in (start, end):
        if bound is not None and (isinstance(bound, bool) or not isinstance(bound, int)):
            raise ViewOperationError(f"range bounds must be ints or None, got {describe(value)}")
    return name, [start, end]


def truncate_view(view: list[int], name: str, value: Any) -> list[int]:
    """Apply one truncation (slice semantics, as in seed 001) to ``view``."""
    if name == "keep_first":
        return view[:value]
    if name == "keep_last":
        return view[len(view) - value :] if value else []
    if name == "remove_first":
        return view[value:]
    if name == "remove_last":
        return view[: max(len(view) - value, 0)]
    start, end = value
    return view[start:end]


def check_position(position: object) -> int:
    """An insert position: an int, ``-1`` (the end) or not negative."""
    position = _INT.check(position, "position")
    if position < -1:
        raise ViewOperationError(f"position must be -1 (the end) or from 0 on, got {position}")
    return position


def insert_position(position: object, length: int) -> int:
    """Where to insert: ``-1`` is the end; otherwise ``0 <= position <= length``."""
    position = check_position(position)
    if position == -1:
        return length
    if not 0 <= position <= length:
        raise ViewOperationError(
            f"position {describe(position)} is outside the visible chunks "
            f"(0..{length}, or -1 for the end)"
        )
    return position


def replace_index(target: object, visible: Visible) -> int:
    """The visible index ``target`` names: an index (negative from the end) or a chunk id."""
    if isinstance(target, str):
        for index, (_, chunk) in enumerate(visible):
            if chunk.id == target:
                return index
        raise ViewOperationError(
            f"chunk {target!r} is not visible; only visible chunks can be replaced"
        )
    if isinstance(target, bool) or not isinstance(target, int):
        raise ViewOperationError(
            f"replace takes a visible index or a chunk id, got {describe(target)}"
        )
    if not -len(visible) <= target < len(visible):
        raise ViewOperationError(
            f"index {describe(target)} is outside the {len(visible)} visible chunks"
        )
    return target % len(visible)


def _items(name: str, value: object, kind: str) -> tuple[object, ...]:
    """``value`` as a tuple: one item of ``kind`` alone, or an iterable of them."""
    if not isinstance(value, Iterable):
        raise ViewOperationError(f"{name} takes {kind} or a list of them, got {describe(value)}")
    return tuple(value)


def _strings(name: str, value: str | Iterable[str] | None) -> tuple[str, ...]:
    if value is None:
        return ()
    items = (value,) if isinstance(value, str) else _items(name, value, "a string")
    return tuple(_NON_EMPTY.check(item, f"{name}[{i}]") for i, item in enumerate(items))


def filter_params(
    roles: str | Iterable[str] | None,
    types: ChunkType | str | Iterable[ChunkType | str] | None,
    contains: str | Iterable[str] | None,
    excludes: str | Iterable[str] | None,
) -> dict[str, list[str]]:
    """The filter's criteria, checked, as JSON; at least one must be given."""
    role_list = _strings("roles", roles)
    for role in role_list:
        if role not in ROLES:
            raise ViewOperationError(f"unknown role {role!r}; roles are {sorted(ROLES)}")
    if types is None:
        type_list: tuple[str, ...] = ()
    else:
        given: list[Any] = (
            [types] if isinstance(types, str) else list(_items("types", types, "a type"))
        )
        try:
            type_list = tuple(ChunkType(t).value for t in given)
        except ValueError:
            known = ", ".join(t.value for t in ChunkType)
            raise ViewOperationError(
                f"unknown chunk type in {describe(given)}; known: {known}"
            ) from None
    params = {
        "roles": list(role_list),
        "types": list(type_list),
        "contains": list(_strings("contains", contains)),
        "excludes": list(_strings("excludes", excludes)),
    }
    params = {name: values for name, values in params.items() if values}
    if not params:
        raise ViewOperationError("filter needs at least one of roles, types, contains, excludes")
    return params


def filter_predicate(
    params: Mapping[str, list[str]], role_of: Callable[[Chunk], Role]
) -> Callable[[Chunk], bool]:
    """True for a chunk that meets every criterion (AND)."""
    roles = set(params.get("roles", ()))
    types = set(params.get("types", ()))
    contains = params.get("contains", ())
    excludes = params.get("excludes", ())

    def keep(chunk: Chunk) -> bool:
        if types and chunk.type.value not in types:
            return False
        if roles and role_of(chunk) not in roles:
            return False
        text = chunk.text
        return all(s in text for s in contains) and not any(s in text for s in excludes)

    return keep


def change_view(
    session: Session,
    thread_id: str,
    operation: str,
    params: Mapping[str, Any],
    compute: Compute,
    new_chunks: Sequence[Chunk] = (),
    origin: str = "insert",
    refers_to: str | None = None,
) -> int:
    """Run one view operation in the caller's write transaction; return the new batch.

    ``new_chunks`` (insert, replace) are stored first; one that is already
    stored unchanged is reused, unless it is visible already. ``refers_to``
    is a chunk id the operation needs visible (replace by id): one the
    thread does not hold is a :class:`~memctx.ChunkNotFoundError`.
    """
    thread = get_thread(session, thread_id, lock=True)
    previous = thread.batch
    visible: Visible = [
        (row.seq, row_to_chunk(row))
        for row in visible_rows(session, get_batch(session, thread_id, previous))
    ]
    if refers_to is not None and all(chunk.id != refers_to for _, chunk in visible):
        if not rows_by_chunk_id(session.connection(), thread_id, [refers_to]):
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
    return _new_view(session, thread, operation, params, view, previous, len(visible))


def place_chunks(
    session: Session, thread: ThreadRow, chunks: Sequence[Chunk], origin: str
) -> tuple[dict[str, ChunkRecord], list[int]]:
    """Store the chunks not stored yet; return the stored ones and every chunk's sequence number.

    A chunk stored already must be the same chunk (else
    :class:`~memctx.ChunkConflictError`); one given twice is a
    :class:`~memctx.ViewOperationError` (a view shows a chunk once).
    """
    prepared = prepare_chunks(thread.id, chunks)
    if len(prepared) != len(chunks):
        twice = next(i for i, n in Counter(c.id for c in chunks).items() if n > 1)
        raise ViewOperationError(f"chunk {twice!r} is given twice; a view shows a chunk once")
    existing, new = split_existing(session.connection(), thread.id, prepared)
    added = iter(store_new(session, thread, new, origin))
    return existing, [existing[cid].seq if cid in existing else next(added) for cid in prepared]


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


def apply_view(
    session: Session,
    thread_id: str,
    chunks: Sequence[Chunk],
    operation: str,
    params: Mapping[str, Any],
    events: Sequence[tuple[str, Mapping[str, Any]]],
) -> int:
    """Make ``chunks`` the visible list as one new batch; record ``events`` with it."""
    thread = get_thread(session, thread_id, lock=True)
    previous = thread.batch
    before = len(visible_seqs(session, get_batch(session, thread_id, previous)))
    _, view = place_chunks(session, thread, chunks, "view")
    number = _new_view(session, thread, operation, params, view, previous, before)
    for kind, payload in events:
        record_event(session, thread_id, kind, payload)
    return number


def _new_view(
    session: Session,
    thread: ThreadRow,
    operation: str,
    params: Mapping[str, Any],
    view: list[int],
    previous: int,
    before: int,
) -> int:
    batch = new_batch(session, thread, operation, params, view)
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
            "visible_after": len(view),
        },
    )
    return batch.number


def rollback(session: Session, thread_id: str, target: object) -> int:
    """Start a batch that shows what batch ``target`` shows; return its number."""
    thread = get_thread(session, thread_id, lock=True)
    target = _INT.check(target, "batch")
    if not 0 <= target <= thread.last_batch:
        raise ViewOperationError(
            f"thread {thread_id!r} has batches 0..{thread.last_batch}; "
            f"there is no batch {describe(target)}"
        )
    previous = thread.batch
    before = len(visible_seqs(session, get_batch(session, thread_id, previous)))
    target_row = get_batch(session, thread_id, target)
    view = None if target_row.view is None else visible_seqs(session, target_row)
    batch = new_batch(session, thread, "rollback", {"batch": target}, view)
    after = len(visible_seqs(session, batch))
    record_event(
        session,
        thread_id,
        VIEW_CHANGED,
        {
            "operation": "rollback",
            "params": {"batch": target},
            "batch": batch.number,
            "previous_batch": previous,
            "visible_before": before,
            "visible_after": after,
        },
    )
    return batch.number
