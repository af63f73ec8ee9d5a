"""Migrating a database written by an older memctx, in place, in one transaction.

A database records the schema version that wrote it (``memctx_schema``).
Opening an older one runs every step from its version to
:data:`~memctx.store._schema.SCHEMA_VERSION` in the transaction that holds the
setup lock, then records the new version: a failed step leaves the database
as it was. A newer one is refused with :class:`~memctx.SchemaVersionError`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Final

from sqlalchemy import Boolean, Connection, bindparam, text

from memctx.store._schema import (
    LIGHT_INDEX_COLUMNS,
    SCHEMA_VERSION,
    ChunkRow,
    WaitingRow,
    paged_indexes,
    row_to_chunk,
    unit_columns,
)
from memctx.store._search_index import create_index, fill_index


def _v1_to_v2(connection: Connection) -> None:
    """Version 2 adds thread metadata and stores timestamps as timestamps.

    On SQLite, timestamps stay ISO 8601 text in UTC (what version 1 wrote,
    and what :class:`~memctx.store._schema.UTCDateTime` reads there); on
    PostgreSQL, their columns become ``timestamp with time zone``.
    """
    connection.execute(
        text("ALTER TABLE memctx_threads ADD COLUMN metadata TEXT NOT NULL DEFAULT '{}'")
    )
    if connection.dialect.name == "postgresql":
        for table in ("memctx_threads", "memctx_batches", "memctx_events"):
            connection.execute(
                text(
                    f"ALTER TABLE {table} ALTER COLUMN created_at TYPE timestamp with time zone "
                    "USING created_at::timestamp with time zone"
                )
            )


_V3_COLUMNS: Final = (
    "ALTER TABLE memctx_chunks ADD COLUMN unit_key VARCHAR",
    "ALTER TABLE memctx_chunks ADD COLUMN unit_opener BOOLEAN NOT NULL DEFAULT false",
    "ALTER TABLE memctx_chunks ADD COLUMN pinned BOOLEAN NOT NULL DEFAULT false",
)
_V3_FILL: Final = text(
    "UPDATE memctx_chunks SET unit_key = :unit_key, unit_opener = :unit_opener, "
    "pinned = :pinned WHERE thread_id = :t AND seq = :s"
).bindparams(bindparam("unit_opener", type_=Boolean()), bindparam("pinned", type_=Boolean()))
_V3_PAGE: Final = 5_000


def _v2_to_v3(connection: Connection) -> None:
    """Version 3 adds the light columns a paged build reads instead of content.

    Every stored chunk's unit key, opener flag and pin are filled in from its
    row (the same function fills them on insert), a page of rows at a time;
    then the covering index over them is made.
    """
    for statement in _V3_COLUMNS:
        connection.execute(text(statement))
    _fill_v3(connection)
    columns = ", ".join(LIGHT_INDEX_COLUMNS)
    connection.execute(text(f"CREATE INDEX memctx_chunks_light ON memctx_chunks ({columns})"))


def _fill_v3(connection: Connection) -> None:
    last: tuple[str, int] = ("", -1)
    while True:
        rows = connection.execute(
            text(
                "SELECT thread_id, seq, chunk_id, type, role, action, subtype, content,"
                " metadata AS meta, priority, created_at FROM memctx_chunks"
                " WHERE thread_id > :t OR (thread_id = :t AND seq > :s)"
                " ORDER BY thread_id, seq LIMIT :n"
            ),
            {"t": last[0], "s": last[1], "n": _V3_PAGE},
        ).all()
        if not rows:
            return
        filled = []
        for row in rows:
            columns = unit_columns(row_to_chunk(row))
            if columns["unit_key"] is not None or columns["pinned"]:
                filled.append({**columns, "t": row.thread_id, "s": row.seq})
        if filled:
            connection.execute(_V3_FILL, filled)
        last = (rows[-1].thread_id, rows[-1].seq)


def _v3_to_v4(connection: Connection) -> None:
    """Version 4 adds the full-text index of stored chunks (``store.search``), filled
    from every stored chunk by the function that indexes an append."""
    create_index(connection)
    fill_index(connection)


_V5_WAITING: Final = text(
    "INSERT INTO memctx_waiting (thread_id, unit_key, seq)"
    " SELECT c.thread_id, c.unit_key, c.seq FROM memctx_chunks c"
    " WHERE c.origin = 'append' AND c.unit_opener AND c.unit_key IS NOT NULL"
    " AND NOT EXISTS (SELECT 1 FROM memctx_chunks d WHERE d.thread_id = c.thread_id"
    " AND d.unit_key = c.unit_key AND d.origin = 'append' AND NOT d.unit_opener"
    " AND d.seq > c.seq)"
)


def _v4_to_v5(connection: Connection) -> None:
    """Version 5 lets a paged build read a window of a thread: the partial indexes of the
    rows every build reads and of unit members, and ``memctx_waiting`` (the appended
    openers no appended answer followed), filled from the stored chunks."""
    names = {index.name for index in paged_indexes()}
    for index in ChunkRow.__table__.indexes:  # type: ignore[attr-defined]
        if index.name in names:
            index.create(connection)
    WaitingRow.__table__.create(connection)  # type: ignore[attr-defined]
    connection.execute(_V5_WAITING)


STEPS: Final[dict[int, Callable[[Connection], None]]] = {
    1: _v1_to_v2,
    2: _v2_to_v3,
    3: _v3_to_v4,
    4: _v4_to_v5,
}
"""The step from each older version to the next one."""


def migrate(connection: Connection, found: int) -> None:
    """Bring a database of schema version ``found`` to :data:`SCHEMA_VERSION` (caller commits)."""
    for version in range(found, SCHEMA_VERSION):
        STEPS[version](connection)
    connection.execute(text("UPDATE memctx_schema SET version = :v"), {"v": SCHEMA_VERSION})
