"""Opening a database: where the default lives, engines for SQLite and PostgreSQL, the schema.

SQLite is set up for several processes writing one file: WAL journal (readers
never block the writer), a busy timeout, and every write transaction starts
with ``BEGIN IMMEDIATE`` so it holds the write lock from its first statement
(a deferred ``BEGIN`` that upgrades later fails with "database is locked" or,
worse, works on data another writer has just changed). Read transactions use
a plain ``BEGIN``, which in WAL mode gives them one consistent snapshot.

SQLite's busy handler is not the whole story: it is not called for every
``SQLITE_BUSY`` (a commit that finds the database busy, a reader that meets
a WAL being recovered or checkpointed), and a busy ``COMMIT`` leaves a
transaction that is rolled back. So every store call runs its transaction
again (:func:`retry_busy`), from the start, when SQLite answers
``SQLITE_BUSY`` or ``SQLITE_LOCKED``, until :data:`SQLITE_BUSY_TIMEOUT_MS` of
wall-clock time have passed since the call began: "database is locked"
never reaches a caller before that.

PostgreSQL runs reads at ``REPEATABLE READ`` (one snapshot per read) and
writes at ``READ COMMITTED``, each write locking its thread's row first
(``SELECT ... FOR UPDATE``), which orders concurrent writers of one thread.
"""

from __future__ import annotations

import asyncio
import logging
import os
import random
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any, Final, TypeVar

import platformdirs
from sqlalchemy import Connection, Engine, create_engine, event, inspect, text
from sqlalchemy.engine import URL, make_url
from sqlalchemy.exc import ArgumentError, NoSuchModuleError, OperationalError, SQLAlchemyError
from sqlalchemy.ext.asyncio import AsyncEngine, create_async_engine
from sqlalchemy.pool import StaticPool
from sqlmodel import Session, select

from memctx._exceptions import SchemaVersionError, StoreArgumentError, StoreError
from memctx.store._migrate import migrate
from memctx.store._schema import SCHEMA_VERSION, SchemaInfo, StoreModel
from memctx.store._search_index import create_index

_log = logging.getLogger(__name__)
R = TypeVar("R")

DATABASE_URL_ENV: Final = "MEMCTX_DATABASE_URL"
"""The environment variable naming the database :meth:`MemoryStore.open` uses by default."""

SQLITE_BUSY_TIMEOUT_MS: Final = 30_000
"""How long a SQLite writer waits for another writer's lock before giving up."""

WRITE: Final = "memctx_write"
"""The execution option that marks a connection as one that will write."""

_SCHEMA_LOCK_KEY: Final = 0x6D656D637478  # "memctx": a PostgreSQL advisory lock for setup


def default_database_path() -> Path:
    """Where :meth:`MemoryStore.open` keeps its SQLite file when given no URL.

    ``memctx/memory.db`` in the user data directory that :mod:`platformdirs`
    names: ``$XDG_DATA_HOME/memctx`` (``~/.local/share/memctx``) on Linux and
    other Unix systems, ``~/Library/Application Support/memctx`` on macOS and
    ``%LOCALAPPDATA%\\memctx`` on Windows. A relative ``$XDG_DATA_HOME`` is
    ignored, as the XDG Base Directory specification says.
    """
    directory = platformdirs.user_data_path("memctx", appauthor=False)
    if not directory.is_absolute():  # from a relative $XDG_DATA_HOME
        directory = Path.home() / ".local" / "share" / "memctx"
    return directory / "memory.db"


def default_database_url() -> str:
    """The URL used when none is given: ``$MEMCTX_DATABASE_URL``, else the default SQLite file."""
    from_env = os.environ.get(DATABASE_URL_ENV)
    if from_env:
        return from_env
    return "sqlite:///" + default_database_path().as_posix()


def resolve_url(url: str | os.PathLike[str] | URL | None) -> URL:
    """Turn what the user gave into a URL the store supports.

    ``None`` means :func:`default_database_url` (the directory of the
    built-in default file is created; any other must exist); a string
    without ``://`` or a path is a SQLite file; ``postgresql://`` and
    ``postgres://`` use psycopg 3.
    """
    builtin_default = url is None and not os.environ.get(DATABASE_URL_ENV)
    if url is None:
        url = default_database_url()
    if isinstance(url, str) and not url.strip():
        raise StoreArgumentError("the database URL is empty")
    if isinstance(url, os.PathLike) or (isinstance(url, str) and "://" not in url):
        url = "sqlite:///" + Path(os.fspath(url)).as_posix()
    try:
        parsed = make_url(url)
    except (ArgumentError, ValueError) as exc:
        raise StoreArgumentError(f"not a database URL: {url!s} ({exc})") from None
    backend, _, driver = parsed.drivername.partition("+")
    if backend == "postgres":
        backend = "postgresql"
    if backend == "sqlite":
        if driver not in ("", "pysqlite", "aiosqlite"):
            raise StoreArgumentError(f"unsupported SQLite driver {driver!r}; use sqlite:///PATH")
        database = parsed.database or ""
        if database and database != ":memory:" and not database.startswith("file:"):
            parent = Path(database).parent
            if builtin_default:
                parent.mkdir(parents=True, exist_ok=True)
            elif not parent.is_dir():
                raise StoreError(
                    f"cannot open {database!r}: directory {str(parent)!r} does not exist"
                )
        return parsed.set(drivername="sqlite")
    if backend == "postgresql":
        if driver not in ("", "psycopg", "psycopg_async"):
            raise StoreArgumentError(
                f"unsupported PostgreSQL driver {driver!r}; memctx uses psycopg 3: "
                "postgresql+psycopg://USER@HOST/DB"
            )
        return parsed.set(drivername="postgresql+psycopg")
    raise StoreArgumentError(
        f"unsupported database {parsed.drivername!r}: memctx stores in SQLite (sqlite:///PATH) "
        "or PostgreSQL (postgresql+psycopg://USER@HOST/DB)"
    )


def describe(url: URL) -> str:
    """The URL for messages, without its password."""
    return url.render_as_string(hide_password=True)


def create_store_engine(url: URL) -> Engine:
    """An engine for ``url`` with the per-backend settings described above."""
    try:
        engine = create_engine(url, **_engine_arguments(url))
    except (ImportError, NoSuchModuleError) as exc:
        raise StoreError(_missing_driver(url, exc)) from None
    _configure(engine)
    return engine


def build_record_engine(engine: Engine) -> Engine:
    """The write engine of paged builds, whose commits do not wait for the disk.

    A build writes token counts (a cache) and its ``context.built`` event; losing
    the last of those on a power failure or a database server crash loses no
    chunk and leaves the database consistent, so its commit need not flush.

    On PostgreSQL, ``engine`` itself (its pooled connections: a newly opened
    store's first build opens none) in autocommit mode (no ``BEGIN`` and
    ``COMMIT`` round trips: a build's reads are bounded by its batch and last
    sequence number, and its record is one statement, which turns
    ``synchronous_commit`` off for itself). On SQLite, connections of its own
    with ``synchronous = NORMAL`` in WAL mode (the next durable commit, or a
    checkpoint, writes it to disk; a connection costs a fraction of a
    millisecond); an in-memory database, one connection, uses ``engine``.
    """
    if engine.dialect.name == "postgresql":
        return write_engine(engine.execution_options(isolation_level="AUTOCOMMIT"))
    if in_memory(engine.url):
        return write_engine(engine)
    relaxed = create_store_engine(engine.url)

    @event.listens_for(relaxed, "connect")
    def _on_connect(dbapi_connection: Any, connection_record: Any) -> None:
        cursor = dbapi_connection.cursor()
        try:
            cursor.execute("PRAGMA synchronous = NORMAL")
        finally:
            cursor.close()

    return write_engine(relaxed)


def create_async_store_engine(url: URL) -> AsyncEngine:
    """The asyncio engine for ``url``: aiosqlite, or psycopg 3 in async mode; same settings."""
    if url.get_backend_name() == "sqlite":
        url = url.set(drivername="sqlite+aiosqlite")
    try:
        engine = create_async_engine(url, **_engine_arguments(url))
    except (ImportError, NoSuchModuleError) as exc:
        raise StoreError(_missing_driver(url, exc)) from None
    _configure(engine.sync_engine)
    return engine


def _missing_driver(url: URL, exc: Exception) -> str:
    if url.get_backend_name() == "sqlite":
        return f"the asyncio store needs aiosqlite ({exc}): pip install aiosqlite"
    return f"PostgreSQL needs psycopg 3 ({exc}); install it with: pip install 'memctx[postgres]'"


def in_memory(url: URL) -> bool:
    """Whether ``url`` names an in-memory SQLite database (one connection, gone when closed)."""
    database = url.database or ""
    return database in ("", ":memory:") or "mode=memory" in database


def _engine_arguments(url: URL) -> dict[str, Any]:
    if url.get_backend_name() != "sqlite":
        return {}
    arguments: dict[str, Any] = {
        "connect_args": {"timeout": SQLITE_BUSY_TIMEOUT_MS / 1000, "check_same_thread": False}
    }
    if in_memory(url):
        # One connection, shared: every new connection would be a new, empty database.
        arguments["poolclass"] = StaticPool
    return arguments


PREPARE_THRESHOLD: Final = 1
"""PostgreSQL: a statement is prepared (on its connection) when it runs a second time.

A store runs the same few statements over and over (a rebuild after an append is
two), so each is parsed and planned once per connection; psycopg's default waits
for the sixth run. One that runs once (a cold build's reads) is not prepared."""


def _configure(engine: Engine) -> None:
    """SQLite's settings and ``BEGIN IMMEDIATE`` for writes (SQLAlchemy's recipe);
    PostgreSQL's :data:`PREPARE_THRESHOLD`."""
    if engine.dialect.name != "sqlite":

        @event.listens_for(engine, "connect")
        def _prepare(dbapi_connection: Any, connection_record: Any) -> None:
            connection_record.driver_connection.prepare_threshold = PREPARE_THRESHOLD

        return
    memory_only = in_memory(engine.url)

    @event.listens_for(engine, "connect")
    def _on_connect(dbapi_connection: Any, connection_record: Any) -> None:
        # Let SQLAlchemy's "begin" event below issue BEGIN, not the driver.
        dbapi_connection.isolation_level = None
        cursor = dbapi_connection.cursor()
        try:
            cursor.execute(f"PRAGMA busy_timeout = {SQLITE_BUSY_TIMEOUT_MS}")
            cursor.execute("PRAGMA foreign_keys = ON")
            if not memory_only:
                cursor.execute("PRAGMA journal_mode = WAL")
        finally:
            cursor.close()

    @event.listens_for(engine, "begin")
    def _on_begin(connection: Any) -> None:
        write = connection.get_execution_options().get(WRITE, False)
        connection.exec_driver_sql("BEGIN IMMEDIATE" if write else "BEGIN")


_BUSY_CODES: Final = frozenset({5, 6})  # SQLITE_BUSY, SQLITE_LOCKED (and their extended codes)
_BUSY_MESSAGES: Final = ("database is locked", "database table is locked", "database is busy")


def is_busy(exc: BaseException) -> bool:
    """Whether ``exc`` (a SQLAlchemy error) is SQLite saying another connection holds a lock."""
    orig = getattr(exc, "orig", None)
    code = getattr(orig, "sqlite_errorcode", None)
    if isinstance(code, int):
        return code & 0xFF in _BUSY_CODES
    message = str(orig if orig is not None else exc)
    return isinstance(exc, OperationalError) and any(m in message for m in _BUSY_MESSAGES)


class Busy:
    """When a call that met a busy SQLite database stops running its transaction again."""

    def __init__(self) -> None:
        self._deadline = time.monotonic() + SQLITE_BUSY_TIMEOUT_MS / 1000
        self._attempt = 0

    def again(self, exc: BaseException) -> float | None:
        """Seconds to wait before the next attempt, or ``None``: raise ``exc``."""
        if not is_busy(exc) or time.monotonic() >= self._deadline:
            return None
        self._attempt += 1
        pause = min(0.1, 0.002 * 2.0 ** min(self._attempt, 6)) * random.uniform(0.5, 1.0)
        return min(pause, max(self._deadline - time.monotonic(), 0.0))


def retry_busy(attempt: Callable[[], R]) -> R:
    """``attempt()`` (one whole transaction), run again while SQLite is busy (see above)."""
    busy = Busy()
    while True:
        try:
            return attempt()
        except SQLAlchemyError as exc:
            pause = busy.again(exc)
            if pause is None:
                raise
        time.sleep(pause)


async def retry_busy_async(attempt: Callable[[], Awaitable[R]]) -> R:
    """:func:`retry_busy` for a coroutine function."""
    busy = Busy()
    while True:
        try:
            return await attempt()
        except SQLAlchemyError as exc:
            pause = busy.again(exc)
            if pause is None:
                raise
        await asyncio.sleep(pause)


AnyEngine = TypeVar("AnyEngine", Engine, AsyncEngine)


def write_engine(engine: AnyEngine) -> AnyEngine:
    """The engine that write transactions use (``BEGIN IMMEDIATE`` on SQLite)."""
    return engine.execution_options(**{WRITE: True})


def read_engine(engine: AnyEngine) -> AnyEngine:
    """The engine that read transactions use (one snapshot per transaction)."""
    if engine.dialect.name == "postgresql":
        return engine.execution_options(isolation_level="REPEATABLE READ")
    return engine


def ensure_schema(engine: Engine, where: str) -> None:
    """Create the tables if needed, migrate an older database, refuse a newer one.

    The version is checked first (a read), so a database at this version
    costs two queries and a newer one is never touched. Otherwise one write
    transaction, which holds the setup lock (SQLite's write lock, a
    PostgreSQL advisory lock) so concurrent first opens take turns, checks
    again and creates the tables or migrates them in place
    (:mod:`memctx.store._migrate`).
    """

    def check() -> bool:
        with read_engine(engine).connect() as connection, connection.begin():
            return schema_version(connection, lock=False) == SCHEMA_VERSION

    def set_up() -> None:
        with write_engine(engine).connect() as connection, connection.begin():
            set_up_schema(connection)

    try:
        if retry_busy(check):
            _log.info("opened %s (schema version %d)", where, SCHEMA_VERSION)
            return
        retry_busy(set_up)
    except SQLAlchemyError as exc:
        raise StoreError(f"cannot open {where}: {database_error(exc)}") from None


def set_up_schema(connection: Connection) -> None:
    """Create or migrate the tables, in the caller's write transaction."""
    found = schema_version(connection, lock=True)
    where = describe(connection.engine.url)
    if found is None:
        StoreModel.metadata.create_all(connection)
        create_index(connection)
        with Session(connection) as session:  # joins the caller's transaction
            session.add(SchemaInfo(id=1, version=SCHEMA_VERSION))
            session.flush()
        _log.info("created the memctx tables in %s (schema version %d)", where, SCHEMA_VERSION)
    elif found < SCHEMA_VERSION:
        migrate(connection, found)
        _log.info("migrated %s from schema version %d to %d", where, found, SCHEMA_VERSION)


async def ensure_schema_async(engine: AsyncEngine, where: str) -> None:
    """:func:`ensure_schema` for an asyncio engine."""

    async def check() -> bool:
        async with read_engine(engine).connect() as connection, connection.begin():
            found = await connection.run_sync(schema_version, lock=False)
            return found == SCHEMA_VERSION

    async def set_up() -> None:
        async with write_engine(engine).connect() as connection, connection.begin():
            await connection.run_sync(set_up_schema)

    try:
        if await retry_busy_async(check):
            _log.info("opened %s (schema version %d)", where, SCHEMA_VERSION)
            return
        await retry_busy_async(set_up)
    except SQLAlchemyError as exc:
        raise StoreError(f"cannot open {where}: {database_error(exc)}") from None


def schema_version(connection: Connection, *, lock: bool) -> int | None:
    """The version recorded in the database (``None``: no tables yet); refuses a newer one."""
    if lock and connection.dialect.name == "postgresql":
        connection.execute(text(f"SELECT pg_advisory_xact_lock({_SCHEMA_LOCK_KEY})"))
    found: int | None = None
    if inspect(connection).has_table(SchemaInfo.__tablename__):
        with Session(connection) as session:
            found = session.exec(select(SchemaInfo.version)).first()
    if found is not None and not 1 <= found <= SCHEMA_VERSION:
        raise SchemaVersionError(
            f"{describe(connection.engine.url)} was written with store schema version {found}; "
            f"this memctx reads versions 1 to {SCHEMA_VERSION} (upgrade memctx to open it)"
        )
    return found


def database_error(exc: SQLAlchemyError) -> str:
    """A one-line description of a database error (the driver's message, first line)."""
    orig = getattr(exc, "orig", None)
    message = str(orig if orig is not None else exc).strip()
    return message.splitlines()[0] if message else type(exc).__name__
