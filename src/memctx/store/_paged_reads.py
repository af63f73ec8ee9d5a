"""The reads of a paged build (:mod:`._paged`): a bounded window of a thread, never all of it.

A cold paged build reads, in one transaction: the thread's version and last
sequence number, its batch, the light rows of the batch's view (when it has
one: a compaction's view is short), the *special* rows of the thread (pinned,
SYSTEM, or not appended: a partial index holds only those), the units that
may still wait for an answer (``memctx_waiting``) with every member of each,
and the newest page of appended rows with their stored counts. What a build
needs of any other row it reads later, by sequence number, unit or chunk id,
each through an index; the ids and types of every visible row (the left-out
list of a result) only when the result is asked for them.

A light row is ``(seq, chunk_id, type, unit_key, unit_opener, pinned, origin)``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Final

import attrs
from sqlalchemy import Integer, bindparam, text
from sqlmodel import Session

from memctx._exceptions import StoreError, ThreadNotFoundError
from memctx.store._queries import check_thread_id, get_batch
from memctx.store._row_reads import (
    batch_view,
    counted,
    in_parts,
    raw_rows,
    rows_of,
    visible_light_rows,
)
from memctx.store._schema import SPECIAL_ROWS, BatchRow, UTCDateTime

LightRow = tuple[Any, ...]

FIRST_PAGE: Final = 64
"""Rows read in the first page of a thread's newest chunks."""

# Plain SQL: a newly opened store compiles each statement on first use, and a cold
# build's first read runs all of these (text compiles in a fraction of a select's time).
_LIGHT: Final = "seq, chunk_id, type, unit_key, unit_opener, pinned, origin"
_VERSION: Final = text(
    "SELECT created_at, batch, last_seq FROM memctx_threads WHERE id = :thread_id"
).columns(created_at=UTCDateTime(), batch=Integer(), last_seq=Integer())
_BATCH: Final = text(
    "SELECT view, base_seq FROM memctx_batches WHERE thread_id = :thread_id AND number = :number"
)
_SPECIAL: Final = text(
    f"SELECT {_LIGHT} FROM memctx_chunks WHERE thread_id = :thread_id AND {SPECIAL_ROWS}"
)
_WAITING: Final = text(
    "SELECT unit_key FROM memctx_waiting WHERE thread_id = :thread_id AND seq > :base"
)
_UNITS: Final = text(
    f"SELECT {_LIGHT} FROM memctx_chunks WHERE thread_id = :thread_id AND unit_key IN :keys"
).bindparams(bindparam("keys", expanding=True))
_IDS: Final = text(
    f"SELECT {_LIGHT} FROM memctx_chunks WHERE thread_id = :thread_id AND chunk_id IN :ids"
).bindparams(bindparam("ids", expanding=True))
# The newest appended rows after ``base`` up to ``last``, with their stored counts.
_NEWEST: Final = text(
    "SELECT c.thread_id, c.seq, c.chunk_id, c.origin, c.batch, c.type, c.role, c.action,"
    " c.subtype, c.content, c.metadata AS meta, c.priority, c.created_at, c.unit_key,"
    " c.unit_opener, c.pinned, t.tokens AS stored_tokens FROM memctx_chunks c"
    " LEFT OUTER JOIN memctx_token_counts t ON t.thread_id = c.thread_id AND t.seq = c.seq"
    " AND t.tokenizer = :tokenizer AND t.renderer = :renderer"
    " WHERE c.thread_id = :thread_id AND c.origin = 'append' AND c.seq > :base"
    " AND c.seq <= :last ORDER BY c.seq DESC LIMIT :limit"
)


@attrs.frozen
class Window:
    """What the first read of a cold paged build found (see the module docstring)."""

    created_at: object
    batch: int
    last: int
    """The thread's last sequence number: appended rows up to it are visible."""
    base: int
    view: list[int] | None
    view_light: list[LightRow]
    special: list[LightRow]
    units: list[LightRow]
    """Every member of the units that may wait for an answer."""
    newest: list[Any]
    """The newest appended rows (with content and ``stored_tokens``), newest first."""


def read_window(session: Session, thread_id: str, tokenizer: str | None, renderer: str) -> Window:
    """The first read of a cold paged build."""
    check_thread_id(thread_id)
    found = session.connection().execute(_VERSION, {"thread_id": thread_id}).first()
    if found is None:
        raise ThreadNotFoundError(thread_id)
    created_at, number, last = found
    stored = session.connection().execute(_BATCH, {"thread_id": thread_id, "number": number})
    row = stored.first()
    if row is None:
        raise StoreError(f"thread {thread_id!r}: batch {number} is missing from the database")
    batch = BatchRow(
        thread_id=thread_id,
        number=number,
        operation="",
        params="",
        view=row[0],
        base_seq=row[1],
    )
    view = batch_view(batch)
    base = 0 if view is None else batch.base_seq
    view_light = [] if view is None else visible_light_rows(session, batch, view_only=True)
    special = raw_rows(session, _SPECIAL, {"thread_id": thread_id})
    waiting = {r[0] for r in raw_rows(session, _WAITING, {"thread_id": thread_id, "base": base})}
    answered = {r[3] for r in view_light if r[3] is not None and not r[4]}
    waiting.update(r[3] for r in view_light if r[4] and r[3] not in answered)
    units = read_units(session, thread_id, sorted(waiting))
    params = {
        "thread_id": thread_id,
        "tokenizer": tokenizer,
        "renderer": renderer,
        "base": base,
        "last": last,
        "limit": FIRST_PAGE,
    }
    newest = counted(list(rows_of(session, _NEWEST, params)))
    return Window(created_at, number, last, base, view, view_light, special, units, newest)


def read_units(session: Session, thread_id: str, keys: Sequence[str]) -> list[LightRow]:
    """The light rows of every member of the units ``keys`` (any sequence number)."""
    found: list[LightRow] = []
    for part in in_parts(keys):
        found += raw_rows(session, _UNITS, {"thread_id": thread_id, "keys": part})
    return found


def read_ids(session: Session, thread_id: str, ids: Sequence[str]) -> list[LightRow]:
    """The light rows of the thread's chunks with these ids."""
    found: list[LightRow] = []
    for part in in_parts(ids):
        found += raw_rows(session, _IDS, {"thread_id": thread_id, "ids": part})
    return found


def read_light(
    session: Session, thread_id: str, created_at: object, number: int, length: int
) -> tuple[list[str], list[str]]:
    """The ids and types of the first ``length`` rows visible in batch ``number`` (what a
    paged build's left-out list reads, when asked); :class:`StoreError` when the thread
    was deleted since."""
    found = session.connection().execute(_VERSION, {"thread_id": thread_id}).first()
    if found is None or found[0] != created_at:
        raise StoreError(
            f"thread {thread_id!r} was deleted after this build: its left-out chunks "
            "can no longer be listed"
        )
    light = visible_light_rows(session, get_batch(session, thread_id, number))[:length]
    return [r[1] for r in light], [r[2] for r in light]
