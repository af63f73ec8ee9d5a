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
from sqlalchemy import and_, bindparam, text
from sqlalchemy import select as sa_select
from sqlmodel import Session, col, select

from memctx._exceptions import StoreError, ThreadNotFoundError
from memctx.store._queries import check_thread_id, get_batch
from memctx.store._row_reads import (
    CHUNK_COLUMNS,
    batch_view,
    counted,
    in_parts,
    raw_rows,
    rows_of,
    visible_light_rows,
)
from memctx.store._schema import (
    SPECIAL_ROWS,
    ChunkRow,
    ThreadRow,
    TokenCountRow,
    WaitingRow,
)

LightRow = tuple[Any, ...]

FIRST_PAGE: Final = 64
"""Rows read in the first page of a thread's newest chunks."""

_LIGHT: Final = tuple(
    col(c)
    for c in (
        ChunkRow.seq,
        ChunkRow.chunk_id,
        ChunkRow.type,
        ChunkRow.unit_key,
        ChunkRow.unit_opener,
        ChunkRow.pinned,
        ChunkRow.origin,
    )
)
_OF_THREAD: Final = col(ChunkRow.thread_id) == bindparam("thread_id")
_VERSION: Final = select(
    col(ThreadRow.created_at), col(ThreadRow.batch), col(ThreadRow.last_seq)
).where(col(ThreadRow.id) == bindparam("thread_id"))
_SPECIAL: Final = select(*_LIGHT).where(_OF_THREAD, text(SPECIAL_ROWS))
_WAITING: Final = select(col(WaitingRow.unit_key)).where(
    col(WaitingRow.thread_id) == bindparam("thread_id"), col(WaitingRow.seq) > bindparam("base")
)
_UNITS: Final = select(*_LIGHT).where(
    _OF_THREAD, col(ChunkRow.unit_key).in_(bindparam("keys", expanding=True))
)
_IDS: Final = select(*_LIGHT).where(
    _OF_THREAD, col(ChunkRow.chunk_id).in_(bindparam("ids", expanding=True))
)
# The newest appended rows after ``base`` (down from ``before``), with their stored counts.
_NEWEST: Final = (
    sa_select(*CHUNK_COLUMNS, col(TokenCountRow.tokens).label("stored_tokens"))
    .select_from(ChunkRow)
    .outerjoin(
        TokenCountRow,
        and_(
            col(TokenCountRow.thread_id) == col(ChunkRow.thread_id),
            col(TokenCountRow.seq) == col(ChunkRow.seq),
            col(TokenCountRow.tokenizer) == bindparam("tokenizer"),
            col(TokenCountRow.renderer) == bindparam("renderer"),
        ),
    )
    .where(
        _OF_THREAD,
        col(ChunkRow.origin) == "append",
        col(ChunkRow.seq) > bindparam("base"),
        col(ChunkRow.seq) <= bindparam("last"),
    )
    .order_by(col(ChunkRow.seq).desc())
    .limit(bindparam("limit"))
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
    batch = get_batch(session, thread_id, number)
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
