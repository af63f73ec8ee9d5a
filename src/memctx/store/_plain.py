"""Plain statements: the SQL of a paged build's reads and writes, run on the driver.

SQLAlchemy compiles a statement once per engine, so the first build of a newly
opened store compiled every statement it ran (a select of a table's columns
takes about a millisecond). A :class:`Plain` statement is written once for
both backends, with ``:name`` parameters and ``IN :name`` for a list, and runs
through ``exec_driver_sql`` (SQLAlchemy's errors, events and transactions,
without its compiler): SQLite's driver takes ``:name`` as is, with a
placeholder per value of a list; psycopg's takes ``%(name)s``, and a list as one
array (``= ANY``: one statement text however long the list, which psycopg
prepares on the server once it has run a few times on a connection).
"""

from __future__ import annotations

import re
import threading
from collections import namedtuple
from collections.abc import Mapping, Sequence
from typing import Any, Final

from sqlalchemy import Connection
from sqlalchemy.exc import DBAPIError
from sqlmodel import Session

Where = Session | Connection
"""What the reads of a paged build run in: a session, or a connection, in a transaction."""


def connection_of(where: Where) -> Connection:
    """The connection of ``where``."""
    return where.connection() if isinstance(where, Session) else where


_PARAMETER: Final = re.compile(r"(?<![:\w]):(\w+)")
_LIST: Final = re.compile(r"\bIN :(\w+)")


class Plain:
    """One statement as plain SQL for SQLite and PostgreSQL (see the module docstring)."""

    def __init__(self, sql: str, *, sqlite: str | None = None) -> None:
        """``sqlite``: the statement's text on SQLite when it differs (an index named)."""
        assert "%" not in sql, "psycopg would read a '%' as a placeholder"
        self.sql = sql if sqlite is None else sqlite
        self.lists = frozenset(_LIST.findall(sql))
        self.postgresql = _PARAMETER.sub(r"%(\1)s", _LIST.sub(r"= ANY(:\1)", sql))
        assert self.lists == frozenset(_LIST.findall(self.sql)), "the same lists on both"
        self._sqlite: dict[tuple[int, ...], str] = {}
        self._row: Any = None  # the rows' named tuple (made on first use)
        self._lock = threading.Lock()

    def for_sqlite(self, params: Mapping[str, Any]) -> tuple[str, dict[str, Any]]:
        """The SQLite text for these parameters (a placeholder per value of each list)."""
        if not self.lists:
            return self.sql, dict(params)
        names = sorted(self.lists)
        sizes = tuple(len(params[name]) for name in names)
        flat = {k: v for k, v in params.items() if k not in self.lists}
        for name in names:
            flat.update((f"{name}_{i}", value) for i, value in enumerate(params[name]))
        with self._lock:
            sql = self._sqlite.get(sizes)
            if sql is None:
                sql = self.sql
                for name, size in zip(names, sizes, strict=True):
                    expanded = ", ".join(f":{name}_{i}" for i in range(size))
                    sql = re.sub(rf"\bIN :{name}\b", f"IN ({expanded})", sql)
                if len(self._sqlite) < 64:
                    self._sqlite[sizes] = sql
        return sql, flat

    def execute(self, where: Where, params: Mapping[str, Any] | Sequence[Mapping[str, Any]]) -> Any:
        """Run the statement (a sequence of parameter sets: once per set, as one batch) on
        a cursor of the connection's driver; its error as SQLAlchemy raises it."""
        connection = connection_of(where)
        if connection.dialect.name == "postgresql":
            sql = self.postgresql
            flat: Any = dict(params) if isinstance(params, Mapping) else [dict(p) for p in params]
        elif isinstance(params, Mapping):
            sql, flat = self.for_sqlite(params)
        else:
            assert not self.lists, "a batch of parameter sets holds no list"
            sql, flat = self.sql, [dict(p) for p in params]
        driver = connection.connection.dbapi_connection
        assert driver is not None
        cursor = driver.cursor()
        try:
            if isinstance(flat, dict):
                cursor.execute(sql, flat)
            else:
                cursor.executemany(sql, flat)
        except connection.dialect.loaded_dbapi.Error as exc:
            cursor.close()
            gone = connection.dialect.is_disconnect(exc, driver, cursor)
            if gone:
                connection.invalidate(exc)
            raise DBAPIError.instance(
                sql,
                flat,
                exc,
                connection.dialect.loaded_dbapi.Error,
                connection_invalidated=gone,
                dialect=connection.dialect,
            ) from exc
        return cursor

    def run(self, where: Where, params: Mapping[str, Any] | Sequence[Mapping[str, Any]]) -> None:
        """Run a statement that returns no rows."""
        self.execute(where, params).close()

    def tuples(self, where: Where, params: Mapping[str, Any]) -> list[Any]:
        """The driver's own rows (tuples, no processing)."""
        cursor = self.execute(where, params)
        try:
            return list(cursor.fetchall())
        finally:
            cursor.close()

    def rows(self, where: Where, params: Mapping[str, Any]) -> list[Any]:
        """Rows with their columns by name (``row.seq``)."""
        cursor = self.execute(where, params)
        try:
            found = cursor.fetchall()
            if self._row is None:
                self._row = namedtuple("Row", [d[0] for d in cursor.description])  # type: ignore[misc]
            make = self._row._make
            return [make(r) for r in found]
        finally:
            cursor.close()
