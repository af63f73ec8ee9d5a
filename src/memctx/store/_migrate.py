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

from sqlalchemy import Connection, text

from memctx.store._schema import SCHEMA_VERSION


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


STEPS: Final[dict[int, Callable[[Connection], None]]] = {1: _v1_to_v2}
"""The step from each older version to the next one."""


def migrate(connection: Connection, found: int) -> None:
    """Bring a database of schema version ``found`` to :data:`SCHEMA_VERSION` (caller commits)."""
    for version in range(found, SCHEMA_VERSION):
        STEPS[version](connection)
    connection.execute(text("UPDATE memctx_schema SET version = :v"), {"v": SCHEMA_VERSION})
