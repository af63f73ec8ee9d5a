"""The store's plumbing: the engine, the transactions, the default builder."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Literal, Self

from sqlalchemy import Engine
from sqlalchemy.engine import URL
from sqlalchemy.exc import IntegrityError, SQLAlchemyError
from sqlmodel import Session

from memctx._builder import ContextBuilder, create_builder
from memctx._exceptions import MemctxError, StoreError
from memctx.store._engine import (
    create_store_engine,
    database_error,
    describe,
    ensure_schema,
    read_engine,
    resolve_url,
    write_engine,
)


class StoreBase:
    """Opening and closing a database, and running one transaction on it."""

    def __init__(self, url: str | os.PathLike[str] | URL | None = None) -> None:
        self._url = resolve_url(url)
        self._engine = create_store_engine(self._url)
        self._write = write_engine(self._engine)
        self._read = read_engine(self._engine)
        self._builder: ContextBuilder | None = None
        try:
            ensure_schema(self._engine, describe(self._url))
        except BaseException:
            self._engine.dispose()
            raise

    @classmethod
    def open(cls, url: str | os.PathLike[str] | URL | None = None) -> Self:
        """Open (creating the tables if needed) the database at ``url``.

        ``url`` is a SQLAlchemy URL (``sqlite:///path.db``,
        ``postgresql+psycopg://user@host/db``) or a path to a SQLite file.
        Without one: ``$MEMCTX_DATABASE_URL``, else the SQLite file at
        :func:`default_database_path`. A database written by a newer memctx
        raises :class:`~memctx.SchemaVersionError`.
        """
        return cls(url)

    @property
    def url(self) -> str:
        """The database URL, without its password."""
        return describe(self._url)

    @property
    def backend(self) -> Literal["sqlite", "postgresql"]:
        """Which database this store uses."""
        return "postgresql" if self._engine.dialect.name == "postgresql" else "sqlite"

    @property
    def engine(self) -> Engine:
        """The SQLAlchemy engine (for inspection; write through the store's methods)."""
        return self._engine

    @property
    def builder(self) -> ContextBuilder:
        """The builder :meth:`build` and :meth:`filter` use when given none."""
        if self._builder is None:
            self._builder = create_builder()
        return self._builder

    def close(self) -> None:
        """Close every connection. The store must not be used afterwards."""
        self._engine.dispose()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.url!r})"

    @contextmanager
    def _session(
        self, *, write: bool, on_conflict: Callable[[], MemctxError] | None = None
    ) -> Iterator[Session]:
        """One transaction: committed when the block ends, rolled back if it raises.

        Database errors become :class:`~memctx.StoreError`; a constraint
        violation becomes ``on_conflict()`` when given.
        """
        engine = self._write if write else self._read
        try:
            with (
                Session(engine, expire_on_commit=False, autoflush=False) as session,
                session.begin(),
            ):
                yield session
        except MemctxError:
            raise
        except IntegrityError as exc:
            if on_conflict is not None:
                raise on_conflict() from None
            raise StoreError(f"database error ({self.url}): {database_error(exc)}") from None
        except SQLAlchemyError as exc:
            raise StoreError(f"database error ({self.url}): {database_error(exc)}") from None
