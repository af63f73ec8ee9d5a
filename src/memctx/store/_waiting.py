"""Kept on append: the openers waiting for an answer (``memctx_waiting``), and PostgreSQL's
statistics of a growing thread."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Final

from sqlalchemy import Connection, bindparam, delete, text
from sqlalchemy.dialects.postgresql import insert as pg_insert
from sqlalchemy.dialects.sqlite import insert as sqlite_insert
from sqlmodel import Session, col

from memctx.store._schema import WaitingRow

_ANSWERED: Final = delete(WaitingRow).where(
    col(WaitingRow.thread_id) == bindparam("thread_id"),
    col(WaitingRow.unit_key).in_(bindparam("keys", expanding=True)),
)
_WAITING_INSERTS: Final = {
    "postgresql": pg_insert(WaitingRow.__table__).on_conflict_do_nothing(),  # type: ignore[attr-defined]
    "sqlite": sqlite_insert(WaitingRow.__table__).on_conflict_do_nothing(),  # type: ignore[attr-defined]
}
ANALYZE_EVERY: Final = 20_000
"""PostgreSQL: the chunk tables are analysed when a thread's length crosses a multiple of
this (the planner's statistics of a fresh schema would otherwise say they are empty)."""


def track_waiting(
    connection: Connection,
    thread_id: str,
    first_seq: int,
    rows: Sequence[tuple[Mapping[str, Any], str, int]],
) -> None:
    """Keep ``memctx_waiting`` (:class:`~memctx.store._schema.WaitingRow`) current for
    appended rows: an opener is added, an answer removes its unit's openers."""
    answered: set[str] = set()
    waiting: dict[tuple[str, int], None] = {}
    for seq, (values, origin, _) in enumerate(rows, first_seq):
        key = values["unit_key"]
        if key is None or origin != "append":
            continue
        if values["unit_opener"]:
            waiting[key, seq] = None
        else:
            answered.add(key)
            waiting = {k: None for k in waiting if k[0] != key}
    if answered:
        params = {"thread_id": thread_id, "keys": sorted(answered)}
        connection.execute(_ANSWERED, params)
    if waiting:
        connection.execute(
            _WAITING_INSERTS[connection.dialect.name],
            [{"thread_id": thread_id, "unit_key": k, "seq": s} for k, s in waiting],
        )


def analyze_if_due(session: Session, before: int, after: int) -> None:
    """PostgreSQL: analyse the chunk tables when a thread's length crossed a multiple of
    :data:`ANALYZE_EVERY` (or its first thousand rows)."""
    connection = session.connection()
    if connection.dialect.name != "postgresql" or after <= before:
        return
    crossed = after // ANALYZE_EVERY > before // ANALYZE_EVERY or before < 1_000 <= after
    if crossed:
        connection.execute(text("ANALYZE memctx_chunks, memctx_waiting"))
