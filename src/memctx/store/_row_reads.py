"""Reading chunk rows: every statement that reads a thread's chunks, run on the session's
connection without the ORM (rows of plain columns; the DBAPI's own tuples for reads of
every row of a thread).

Which rows a read returns is what a batch shows: its view (sequence numbers, in order)
followed by every chunk appended after its base, or every appended chunk when it has no
view (:func:`batch_view`).
"""

from __future__ import annotations

import threading
from collections.abc import Iterator, Mapping, Sequence
from typing import Any, Final, TypeVar

from sqlalchemy import Result, Row, and_, bindparam
from sqlalchemy import select as sa_select
from sqlmodel import Session, col, select

from memctx._exceptions import StoreError, ThreadNotFoundError
from memctx.store._plain import Where, connection_of
from memctx.store._schema import BatchRow, ChunkRow, ThreadRow, TokenCountRow, load_json

R = TypeVar("R")

IN_CHUNK: Final = 500  # values per IN (...) list: well under every backend's parameter limit
_COLUMNS: Final = tuple(col(c) for c in ChunkRow.__table__.columns)  # type: ignore[attr-defined]
CHUNK_COLUMNS: Final = _COLUMNS
"""Every column of a chunk row."""
_OF_THREAD: Final = col(ChunkRow.thread_id) == bindparam("thread_id")
_ALL_ROWS: Final = select(*_COLUMNS).where(_OF_THREAD)
_HISTORY: Final = _ALL_ROWS.order_by(col(ChunkRow.seq))
_ROWS_BY_SEQ: Final = _ALL_ROWS.where(col(ChunkRow.seq).in_(bindparam("seqs", expanding=True)))
_ROWS_BY_ID: Final = _ALL_ROWS.where(col(ChunkRow.chunk_id).in_(bindparam("ids", expanding=True)))
_APPENDED: Final = (col(ChunkRow.origin) == "append", col(ChunkRow.seq) > bindparam("base_seq"))
_APPENDED_ROWS: Final = _ALL_ROWS.where(*_APPENDED).order_by(col(ChunkRow.seq))
_APPENDED_SEQS: Final = (
    select(col(ChunkRow.seq)).where(_OF_THREAD, *_APPENDED).order_by(col(ChunkRow.seq))
)
# A rebuild's one read: the thread's version, the rows appended after ``base_seq`` and
# their stored counts (the thread's row alone when nothing was appended).
_APPENDED_SINCE: Final = (
    sa_select(
        col(ThreadRow.created_at).label("thread_created_at"),
        col(ThreadRow.batch).label("thread_batch"),
        *_COLUMNS,
        col(TokenCountRow.tokens).label("stored_tokens"),
    )
    .select_from(ThreadRow)
    .outerjoin(
        ChunkRow,
        and_(
            col(ChunkRow.thread_id) == col(ThreadRow.id),
            col(ChunkRow.origin) == "append",
            col(ChunkRow.seq) > bindparam("base_seq"),
        ),
    )
    .outerjoin(
        TokenCountRow,
        and_(
            col(TokenCountRow.thread_id) == col(ChunkRow.thread_id),
            col(TokenCountRow.seq) == col(ChunkRow.seq),
            col(TokenCountRow.tokenizer) == bindparam("tokenizer"),
            col(TokenCountRow.renderer) == bindparam("renderer"),
        ),
    )
    .where(col(ThreadRow.id) == bindparam("thread_id"))
    .order_by(col(ChunkRow.seq))
)
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
_LIGHT_APPENDED: Final = select(*_LIGHT).where(_OF_THREAD, *_APPENDED).order_by(col(ChunkRow.seq))
_LIGHT_ALL: Final = select(*_LIGHT).where(_OF_THREAD)
_LIGHT_BY_SEQ: Final = _LIGHT_ALL.where(col(ChunkRow.seq).in_(bindparam("seqs", expanding=True)))


def batch_view(batch: BatchRow) -> list[int] | None:
    """The sequence numbers a batch made visible (``None``: every appended chunk)."""
    return parse_view(batch.view, batch.thread_id, batch.number)


def parse_view(stored: str | None, thread_id: str, number: int) -> list[int] | None:
    """:func:`batch_view` of a batch's stored ``view`` column."""
    if stored is None:
        return None
    view = load_json(stored, f"thread {thread_id!r}, batch {number}")
    if not isinstance(view, list) or not all(isinstance(s, int) for s in view):
        raise StoreError(f"thread {thread_id!r}, batch {number}: corrupt view")
    return view


# -- chunk rows ---------------------------------------------------------------------------


class RowsRead:
    """How many chunk rows with their content this process has read (for tests and tuning)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._count = 0

    @property
    def count(self) -> int:
        return self._count

    def add(self, rows: int) -> None:
        with self._lock:
            self._count += rows


ROWS_READ: Final = RowsRead()
"""Chunk rows read with their content, by every store of this process."""


def rows_of(session: Where, statement: Any, params: Mapping[str, Any]) -> Result[Any]:
    """Run a chunk-row statement on the session's connection: rows without the ORM's layer."""
    return connection_of(session).execute(statement, params)


def raw_rows(session: Where, statement: Any, params: Mapping[str, Any]) -> list[Any]:
    """The DBAPI's own rows (tuples, no type processing) of a statement of plain columns:
    a tenth of the cost per row, for reads of every row of a thread."""
    result = connection_of(session).execute(statement, params)
    try:
        return list(result.cursor.fetchall())
    finally:
        result.close()


def counted(rows: list[Row[Any]]) -> list[Row[Any]]:
    ROWS_READ.add(len(rows))
    return rows


def history_rows(session: Session, thread_id: str) -> Sequence[Row[Any]]:
    """Every chunk row of the thread, in sequence order."""
    return counted(list(rows_of(session, _HISTORY, {"thread_id": thread_id})))


def visible_seqs(session: Session, batch: BatchRow) -> list[int]:
    """The sequence numbers visible in ``batch`` now, in view order."""
    view = batch_view(batch)
    base = 0 if view is None else batch.base_seq
    params = {"thread_id": batch.thread_id, "base_seq": base}
    appended = list(rows_of(session, _APPENDED_SEQS, params).scalars())
    return appended if view is None else view + appended


def appended_seqs(session: Session, thread_id: str, after: int) -> list[int]:
    """The sequence numbers of the chunks appended after ``after``, in order."""
    params = {"thread_id": thread_id, "base_seq": after}
    return list(rows_of(session, _APPENDED_SEQS, params).scalars())


def visible_rows(session: Session, batch: BatchRow) -> list[Row[Any]]:
    """The chunk rows visible in ``batch`` now, in view order."""
    view = batch_view(batch)
    params = {"thread_id": batch.thread_id, "base_seq": 0 if view is None else batch.base_seq}
    appended = counted(list(rows_of(session, _APPENDED_ROWS, params)))
    if view is None:
        return appended
    return _in_view_order(batch, view, rows_by_seq(session, batch.thread_id, view)) + appended


def appended_since(
    session: Session,
    thread_id: str,
    seq: int,
    tokenizer: str | None,
    renderer: str,
) -> tuple[tuple[Any, int], list[Row[Any]], dict[int, int]]:
    """In one statement: the thread's ``(created_at, batch)``, the rows appended after
    sequence number ``seq`` in order, and their counts stored under ``tokenizer`` (None:
    none) and ``renderer``. :class:`ThreadNotFoundError` if there is no such thread."""
    params = {"thread_id": thread_id, "base_seq": seq, "tokenizer": tokenizer, "renderer": renderer}
    return split_appended(thread_id, list(rows_of(session, _APPENDED_SINCE, params)))


def split_appended(
    thread_id: str, found: list[Any]
) -> tuple[tuple[Any, int], list[Any], dict[int, int]]:
    """The thread's version, its appended rows and their stored counts, from the rows of a
    statement that joins the thread to them (one row with a null ``seq`` when none was
    appended); :class:`ThreadNotFoundError` when it gave none."""
    if not found:
        raise ThreadNotFoundError(thread_id)
    version = (found[0].thread_created_at, found[0].thread_batch)
    rows = counted([row for row in found if row.seq is not None])
    counts = {row.seq: row.stored_tokens for row in rows if row.stored_tokens is not None}
    return version, rows, counts


def visible_light_rows(
    session: Where, batch: BatchRow, *, view_only: bool = False
) -> list[tuple[Any, ...]]:
    """``(seq, chunk_id, type, unit_key, unit_opener, pinned, origin)`` of the rows
    visible in ``batch``, in view order (no content); ``view_only``: those of its view."""
    view = batch_view(batch)
    params = {"thread_id": batch.thread_id, "base_seq": 0 if view is None else batch.base_seq}
    appended = [] if view_only else raw_rows(session, _LIGHT_APPENDED, params)
    if view is None:
        return appended
    found: dict[int, tuple[Any, ...]] = {}
    if len(view) > 4 * IN_CHUNK:
        wanted = set(view)
        rows = raw_rows(session, _LIGHT_ALL, {"thread_id": batch.thread_id})
        found = {r[0]: r for r in rows if r[0] in wanted}
    else:
        for part in in_parts(view):
            params = {"thread_id": batch.thread_id, "seqs": part}
            found.update((r[0], r) for r in raw_rows(session, _LIGHT_BY_SEQ, params))
    return _in_view_order(batch, view, found) + appended


def _in_view_order(batch: BatchRow, view: list[int], found: Mapping[int, R]) -> list[R]:
    """The rows of ``view``'s sequence numbers in its order; a view naming a row that is
    not stored is a corrupt database."""
    missing = [s for s in view if s not in found]
    if missing:
        raise StoreError(
            f"thread {batch.thread_id!r}, batch {batch.number}: the view names chunk "
            f"#{missing[0]}, which is not stored"
        )
    return [found[s] for s in view]


def in_parts(values: Sequence[Any]) -> Iterator[Sequence[Any]]:
    for start in range(0, len(values), IN_CHUNK):
        yield values[start : start + IN_CHUNK]


def rows_by_seq(session: Session, thread_id: str, seqs: Sequence[int]) -> dict[int, Row[Any]]:
    """The thread's chunk rows with these sequence numbers."""
    if len(seqs) > 4 * IN_CHUNK:
        wanted = set(seqs)
        rows = rows_of(session, _ALL_ROWS, {"thread_id": thread_id})
        by_seq = {r.seq: r for r in rows if r.seq in wanted}
        ROWS_READ.add(len(by_seq))
        return by_seq
    found: dict[int, Row[Any]] = {}
    for part in in_parts(seqs):
        rows = rows_of(session, _ROWS_BY_SEQ, {"thread_id": thread_id, "seqs": part})
        found.update((r.seq, r) for r in counted(list(rows)))
    return found


def rows_by_chunk_id(
    session: Session, thread_id: str, chunk_ids: Sequence[str]
) -> dict[str, Row[Any]]:
    """The thread's chunk rows with these chunk ids."""
    found: dict[str, Row[Any]] = {}
    for part in in_parts(chunk_ids):
        rows = rows_of(session, _ROWS_BY_ID, {"thread_id": thread_id, "ids": part})
        found.update((r.chunk_id, r) for r in rows)
    return found
