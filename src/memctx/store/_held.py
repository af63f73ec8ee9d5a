"""The connection a PostgreSQL store keeps for its paged builds.

A paged build after the store's own append is one statement (its record,
:mod:`._paged_record`); checking a connection out of the pool for it, and
returning it, cost about as much Python as the build's own work beside the
builder (SQLAlchemy sets autocommit on the way out and resets it on the way
back). So a store keeps one connection of its build engine (autocommit) for
paged builds, while it is open. One build at a time uses it; a build on
another thread meanwhile checks one out of the pool, as before. A connection
that failed is returned to the pool (which throws a broken one away) and the
next build takes a new one.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator

from sqlalchemy import Connection, Engine

from memctx._exceptions import MemctxError


class HeldConnection:
    """One connection of ``engine`` kept between uses (see the module docstring)."""

    def __init__(self, engine: Engine) -> None:
        self._engine = engine
        self._lock = threading.Lock()
        self._connection: Connection | None = None
        self._closed = False

    @contextlib.contextmanager
    def use(self) -> Iterator[Connection]:
        """The kept connection (opened on first use), or, while another thread uses it or
        after :meth:`close`, one checked out of the pool for this use only."""
        if self._closed or not self._lock.acquire(blocking=False):
            with self._engine.connect() as checked_out:
                yield checked_out
            return
        try:
            kept = self._connection
            if kept is None or kept.invalidated:
                self._drop()
                kept = self._connection = self._engine.connect()
            try:
                yield kept
            except MemctxError:  # raised between statements: the connection is as it was
                raise
            except BaseException:
                self._drop()  # its state is not known: the pool resets or discards it
                raise
        finally:
            self._lock.release()

    def close(self) -> None:
        """Return the kept connection to the pool; later uses check one out each time."""
        with self._lock:
            self._closed = True
            self._drop()

    def _drop(self) -> None:
        connection, self._connection = self._connection, None
        if connection is not None:
            connection.close()
