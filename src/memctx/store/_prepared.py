"""A PostgreSQL statement run through libpq itself: prepared once per connection, no cursor.

The record of a rebuild after the store's own append (:mod:`._paged_record`) is
the rebuild's only statement. Through psycopg's cursor its parameters are
adapted by type (a list to an array, a datetime to a timestamp) and its result
wrapped, which cost about a sixth of a millisecond each time, cold, beside the
round trip. Its parameters are a few strings and integers, so it is sent as
text with libpq's ``PQexecPrepared`` (:attr:`psycopg.Connection.pgconn`), each
value cast by the statement to its type, and only the result's status and row
count are read. The connection stays as psycopg left it: the statement runs
outside any transaction (the build engine's autocommit), and its result is read
before the call returns. Its error is psycopg's, raised as SQLAlchemy raises a
driver's error (a lost connection is invalidated).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Final

from sqlalchemy import Connection
from sqlalchemy.exc import DBAPIError

_PREPARED: Final = "memctx_prepared"
"""The key, in a pooled connection's ``info``, of the names prepared on it."""
_NOT_PREPARED: Final = b"26000"
"""SQLSTATE of a prepared statement the server does not know: psycopg deallocates every
statement of a connection after a rollback (its own and this module's)."""


class Prepared:
    """One statement with ``$1``… parameters, given as text (see the module docstring)."""

    def __init__(self, name: str, sql: str) -> None:
        """``name``: the prepared statement's (unique among the store's)."""
        self.name = name.encode()
        self.sql = sql

    def run(self, connection: Connection, params: Sequence[str]) -> int:
        """Run the statement on ``connection``'s psycopg connection; how many rows it wrote."""
        from psycopg import errors, pq

        pooled = connection.connection
        driver: Any = pooled.driver_connection
        pgconn = driver.pgconn
        encoding = driver.info.encoding
        values = [p.encode(encoding) for p in params]
        prepared: set[bytes] = pooled.info.setdefault(_PREPARED, set())
        try:
            result = self._execute(pgconn, prepared, values, encoding)
            if result.error_field(pq.DiagnosticField.SQLSTATE) == _NOT_PREPARED:
                prepared.discard(self.name)  # deallocated since: prepared again
                result = self._execute(pgconn, prepared, values, encoding)
            _ok(result, encoding)
            return int(result.command_tuples or 0)
        except errors.Error as exc:
            gone = connection.dialect.is_disconnect(exc, driver, None)  # type: ignore[arg-type]
            if gone:
                connection.invalidate(exc)
            raise DBAPIError.instance(
                self.sql,
                params,
                exc,
                errors.Error,
                connection_invalidated=gone,
                dialect=connection.dialect,
            ) from exc

    def _execute(
        self, pgconn: Any, prepared: set[bytes], values: list[bytes], encoding: str
    ) -> Any:
        """The statement's result, prepared first on a connection that has not yet."""
        if self.name not in prepared:
            _ok(pgconn.prepare(self.name, self.sql.encode(encoding)), encoding)
            prepared.add(self.name)
        return pgconn.exec_prepared(self.name, values)


def _ok(result: Any, encoding: str) -> None:
    """Raise psycopg's error for a result that is not a command's success."""
    from psycopg import errors, pq

    if result.status not in (pq.ExecStatus.COMMAND_OK, pq.ExecStatus.TUPLES_OK):
        raise errors.error_from_result(result, encoding=encoding)
