"""Fixtures of the store suite: every store test runs on SQLite and on a real PostgreSQL.

The PostgreSQL server is a throwaway one, started once per session: ``initdb``
and ``pg_ctl`` in a temporary directory, listening on 127.0.0.1 on a free
port, trust authentication, stopped and deleted at the end. Each worker process
has one schema with the store's tables, made once: before each test every row
is deleted (and the sequences restarted), which takes milliseconds where making
the tables takes a few hundred. A test that changed the tables themselves (its
schema no longer matches the one made) gets a new schema; a test marked
``new_database`` gets one made for it, for the path that creates the tables.
On SQLite each test gets a copy of a file the store created once. The
binaries are looked for in ``$MEMCTX_PG_BIN``, then
on ``PATH``, then in ``/usr/lib/postgresql/*/bin``. PostgreSQL refuses to run
as root, so as root the server runs as the ``postgres`` user.

Set ``MEMCTX_TEST_POSTGRES_URL`` (e.g. ``postgresql://postgres@localhost/postgres``)
to use a server of your own instead; the tests use (and drop at the end) a
database ``memctx_tests`` there.

Without PostgreSQL the PostgreSQL half of the suite is skipped, with the
reason in the summary, except when ``CI`` is set: there it fails.
"""

from __future__ import annotations

import itertools
import os
import shutil
import socket
import subprocess
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import Engine, create_engine, text
from store_apis import APIS, BACKENDS, open_with

from memctx import chunks
from memctx.store import MemoryStore

PG_BIN_ENV = "MEMCTX_PG_BIN"
PG_URL_ENV = "MEMCTX_TEST_POSTGRES_URL"


def find_pg_bin() -> Path | None:
    """The directory holding ``initdb`` and ``pg_ctl``, or None."""
    candidates: list[Path] = []
    if os.environ.get(PG_BIN_ENV):
        candidates.append(Path(os.environ[PG_BIN_ENV]))
    on_path = shutil.which("pg_ctl")
    if on_path:
        candidates.append(Path(on_path).parent)

    def version(path: Path) -> float:
        try:
            return float(path.parent.name)
        except ValueError:
            return 0.0

    candidates.extend(sorted(Path("/usr/lib/postgresql").glob("*/bin"), key=version, reverse=True))
    for directory in candidates:
        if (directory / "initdb").is_file() and (directory / "pg_ctl").is_file():
            return directory
    return None


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


class PostgresServer:
    """A PostgreSQL server for the tests, and its databases: schemas of one database.

    A test's database is a schema named by the URL's ``search_path`` (creating
    a schema takes a millisecond, a database a hundred): the store sees only
    its own tables. :meth:`empty_database` hands out one shared schema,
    emptied; :meth:`new_database` a schema without tables.
    """

    database = "memctx_tests"

    def __init__(self, admin_url: str, stop: Callable[[], None] | None = None) -> None:
        self.admin_url = admin_url  # a libpq URL to an existing database
        self._stop = stop
        self._names = (f"test_{os.getpid()}_{n}" for n in itertools.count())
        self._created: list[str] = []
        base, _, _ = admin_url.partition("?")[0].rpartition("/")
        self.database_url = f"{base}/{self.database}"
        self._run(admin_url, f'DROP DATABASE IF EXISTS "{self.database}" WITH (FORCE)')
        self._run(admin_url, f'CREATE DATABASE "{self.database}"')
        self._shared: _SharedSchema | None = None

    @staticmethod
    def _run(url: str, sql: str) -> None:
        import psycopg

        with psycopg.connect(url, autocommit=True) as connection:
            connection.execute(sql)

    def new_database(self) -> str:
        """Create an empty schema; return the SQLAlchemy URL of a database showing only it."""
        name = next(self._names)
        self._run(self.database_url, f'CREATE SCHEMA "{name}"')
        self._created.append(name)
        url = self.database_url.replace("postgresql://", "postgresql+psycopg://", 1)
        return f"{url}?options=-csearch_path%3D{name}"

    def empty_database(self) -> str:
        """The SQLAlchemy URL of this process's shared schema: the store's tables, no rows.

        Made on first use; made again when the last test changed its tables
        (or left a lock that keeps its rows from being deleted).
        """
        if self._shared is not None and not self._shared.empty():
            self._shared.close()
            self._shared = None
        if self._shared is None:
            self._shared = _SharedSchema(self.new_database())
        return self._shared.url

    def close(self) -> None:
        try:
            if self._shared is not None:
                self._shared.close()
        finally:
            if self._stop is not None:
                self._stop()
            else:
                self._run(self.admin_url, f'DROP DATABASE IF EXISTS "{self.database}" WITH (FORCE)')


class _SharedSchema:
    """A schema the store made its tables in, emptied between tests.

    What it should look like (its tables, columns, constraints, indexes,
    triggers and functions, and the ``memctx_schema`` row) is read once, after
    the store made it; :meth:`empty` checks that, then deletes every other
    table's rows, children first, and restarts its sequences.
    """

    def __init__(self, url: str) -> None:
        import psycopg

        self.url = url
        self.name = url.rpartition("%3D")[2]
        MemoryStore.open(url).close()  # the tables, as a new store makes them
        base = url.partition("?")[0].replace("postgresql+psycopg://", "postgresql://", 1)
        self._connection = psycopg.connect(base, autocommit=True)
        try:
            # A lock left by a test's store makes the next test's setup fail, not hang.
            self._connection.execute("SET lock_timeout = '5s'")
            self._shape_query = self._SHAPE.replace(
                "FROM memctx_schema", f'FROM "{self.name}".memctx_schema'
            )
            self._shape = self._read_shape()
            self._empty_it = self._delete_statements()
        except BaseException:
            self._connection.close()
            raise

    _SHAPE = """
        SELECT md5(string_agg(x, ',' ORDER BY x))
          || coalesce((SELECT json_agg(s ORDER BY s.id)::text FROM memctx_schema AS s), '')
        FROM (
          SELECT 'c:' || relname || ':' || relkind::text AS x FROM pg_class
          WHERE relnamespace = %(ns)s::regnamespace
          UNION ALL SELECT 'a:' || c.relname || '.' || attname || ':'
            || format_type(atttypid, atttypmod) || ':' || attnotnull::text
            || ':' || coalesce(pg_get_expr(d.adbin, d.adrelid), '')
          FROM pg_attribute AS a JOIN pg_class AS c ON c.oid = a.attrelid
          LEFT JOIN pg_attrdef AS d ON d.adrelid = a.attrelid AND d.adnum = a.attnum
          WHERE c.relnamespace = %(ns)s::regnamespace AND attnum > 0 AND NOT attisdropped
          UNION ALL SELECT 'i:' || pg_get_indexdef(indexrelid) FROM pg_index AS i
          JOIN pg_class AS c ON c.oid = i.indrelid WHERE c.relnamespace = %(ns)s::regnamespace
          UNION ALL SELECT 't:' || tgname || ':' || tgenabled::text FROM pg_trigger AS t
          JOIN pg_class AS c ON c.oid = t.tgrelid WHERE c.relnamespace = %(ns)s::regnamespace
          UNION ALL SELECT 'p:' || proname || ':' || md5(prosrc) FROM pg_proc
          WHERE pronamespace = %(ns)s::regnamespace
          UNION ALL SELECT 'k:' || conname || ':' || pg_get_constraintdef(oid) FROM pg_constraint
          WHERE connamespace = %(ns)s::regnamespace
        ) AS shape"""

    def _read_shape(self) -> str:
        row = self._connection.execute(self._shape_query, {"ns": self.name}).fetchone()
        assert row is not None
        return str(row[0])

    def _delete_statements(self) -> str:
        ns = {"ns": self.name}
        tables = [r[0] for r in self._connection.execute(
            "SELECT relname FROM pg_class WHERE relnamespace = %(ns)s::regnamespace "
            "AND relkind = 'r' AND relname <> 'memctx_schema' ORDER BY relname", ns)]  # fmt: skip
        parents = {t: set[str]() for t in tables}
        for child, parent in self._connection.execute(
            "SELECT c.relname, p.relname FROM pg_constraint AS k "
            "JOIN pg_class AS c ON c.oid = k.conrelid JOIN pg_class AS p ON p.oid = k.confrelid "
            "WHERE k.contype = 'f' AND k.connamespace = %(ns)s::regnamespace", ns):  # fmt: skip
            if child != parent and child in parents:
                parents[child].add(parent)
        order: list[str] = []  # children before the tables they reference
        while parents:
            leaves = sorted(t for t in parents if not any(t in p for p in parents.values()))
            assert leaves, f"a cycle of foreign keys among {sorted(parents)}"
            order.extend(leaves)
            for t in leaves:
                del parents[t]
        statements = [f'DELETE FROM "{self.name}"."{t}"' for t in order]
        statements.append(
            "SELECT setval(oid, 1, false) FROM pg_class "
            f"WHERE relkind = 'S' AND relnamespace = '\"{self.name}\"'::regnamespace"
        )
        return "; ".join(statements)

    def empty(self) -> bool:
        """Delete every row; False if the schema is not as made (a new one is needed)."""
        import psycopg

        try:
            if self._read_shape() != self._shape:
                return False
            self._connection.execute(self._empty_it)
        except psycopg.Error:
            return False
        return True

    def close(self) -> None:
        self._connection.close()


def _unavailable(reason: str) -> None:
    if os.environ.get("CI"):
        pytest.fail(f"{reason}; CI must run the PostgreSQL store tests", pytrace=False)
    pytest.skip(reason)


def _start_server(bindir: Path) -> PostgresServer:
    as_user: dict[str, Any] = {}
    if hasattr(os, "geteuid") and os.geteuid() == 0:
        import pwd

        try:
            account = pwd.getpwnam("postgres")
        except KeyError:
            _unavailable("running as root and there is no 'postgres' user to run PostgreSQL")
            raise
        as_user = {"user": account.pw_uid, "group": account.pw_gid, "extra_groups": []}
    root = Path(tempfile.mkdtemp(prefix="memctx-pg-"))
    if as_user:
        os.chown(root, as_user["user"], as_user["group"])
    data, log = root / "data", root / "server.log"

    def run(*args: str) -> None:
        done = subprocess.run(
            args, cwd=root, capture_output=True, text=True, timeout=120, check=False, **as_user
        )
        if done.returncode != 0:
            tail = log.read_text()[-2000:] if log.exists() else ""
            raise RuntimeError(f"{' '.join(args)} failed:\n{done.stdout}{done.stderr}{tail}")

    def start(port: int) -> None:
        settings = (
            f"-c listen_addresses=127.0.0.1 -p {port} -k '{root}' -c fsync=off "
            "-c full_page_writes=off -c synchronous_commit=off -c max_connections=60"
        )
        run(str(bindir / "pg_ctl"), "-D", str(data), "-l", str(log), "-w", "-t", "60",
            "-o", settings, "start")  # fmt: skip

    def stop() -> None:
        try:
            run(str(bindir / "pg_ctl"), "-D", str(data), "-m", "immediate", "-w", "stop")
        finally:
            shutil.rmtree(root, ignore_errors=True)

    try:
        run(str(bindir / "initdb"), "-D", str(data), "-U", "postgres", "-A", "trust",
            "--no-sync", "-E", "UTF8", "--locale=C")  # fmt: skip
    except BaseException:
        shutil.rmtree(root, ignore_errors=True)
        raise
    for attempt in range(3):  # the free port may be taken between finding and binding it
        port = _free_port()
        try:
            start(port)
            break
        except RuntimeError:
            if attempt == 2:
                shutil.rmtree(root, ignore_errors=True)
                raise
    try:
        return PostgresServer(f"postgresql://postgres@127.0.0.1:{port}/postgres", stop)
    except BaseException:
        stop()
        raise


@pytest.fixture(scope="session")
def postgres_server() -> Iterator[PostgresServer]:
    """A running PostgreSQL server (skipped, or failed in CI, when there is none)."""
    try:
        import psycopg  # noqa: F401
    except ImportError:
        _unavailable("psycopg is not installed (pip install 'memctx[postgres]')")
    external = os.environ.get(PG_URL_ENV)
    if external:
        server = PostgresServer(external.replace("+psycopg", ""))
    else:
        bindir = find_pg_bin()
        if bindir is None:
            _unavailable(
                f"PostgreSQL binaries not found in /usr/lib/postgresql/*/bin (set {PG_BIN_ENV}, "
                f"put pg_ctl on PATH, or "
                f"set {PG_URL_ENV})"
            )
        assert bindir is not None
        server = _start_server(bindir)
    yield server
    server.close()


@pytest.fixture(scope="session")
def sqlite_template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A SQLite file with the store's tables and no rows, made once per process."""
    path = tmp_path_factory.mktemp("template") / "memory.db"
    MemoryStore.open(f"sqlite:///{path}").close()
    # Closing the last connection wrote the journal (WAL) into the file: the file is all of it.
    assert sorted(p.name for p in path.parent.iterdir()) == ["memory.db"]
    return path


@pytest.fixture(params=BACKENDS)
def store_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """An empty database (the store's tables, no rows): a SQLite file, or a PostgreSQL schema.

    Marked ``new_database``, the test gets a database without tables instead.
    """
    new = request.node.get_closest_marker("new_database") is not None
    if request.param == "sqlite":
        path = tmp_path / "memory.db"
        if not new:
            shutil.copyfile(request.getfixturevalue("sqlite_template"), path)
        return f"sqlite:///{path}"
    server: PostgresServer = request.getfixturevalue("postgres_server")
    return server.new_database() if new else server.empty_database()


@pytest.fixture(params=APIS)
def api(request: pytest.FixtureRequest) -> str:
    """Which store class the test runs: ``MemoryStore`` or ``AsyncMemoryStore``."""
    return str(request.param)


@pytest.fixture
def open_store(store_url: str, api: str) -> Iterator[Callable[[], MemoryStore]]:
    """Open more stores on the test's database (each closed at the end)."""
    opened: list[Any] = []

    def factory() -> MemoryStore:
        store = open_with(api, store_url)
        opened.append(store)
        return store  # type: ignore[no-any-return]

    yield factory
    for store in opened:
        store.close()


@pytest.fixture
def store(open_store: Callable[[], MemoryStore]) -> MemoryStore:
    """A store on an empty database."""
    return open_store()


@pytest.fixture
def sql(store_url: str) -> Iterator[Engine]:
    """A plain engine on the test's database, to read its tables directly."""
    engine = create_engine(store_url)
    yield engine
    engine.dispose()


@pytest.fixture
def thread(store: MemoryStore) -> str:
    """A thread ``t1`` holding a system chunk and three turns (ids s, u1, a1, u2)."""
    store.create_thread("t1")
    store.append(
        "t1",
        chunks.system("You are terse.", id="s"),
        chunks.user("What is 2+2?", id="u1"),
        chunks.assistant("4", id="a1"),
        chunks.user("And 3+3?", id="u2"),
    )
    return "t1"


def db_contents(engine: Engine) -> dict[str, list[tuple[Any, ...]]]:
    """Every row of the store's tables, to show that a failed call changed nothing."""
    tables = ["memctx_schema", "memctx_threads", "memctx_chunks", "memctx_batches",
              "memctx_events", "memctx_token_counts"]  # fmt: skip
    with engine.connect() as connection:
        return {
            table: sorted(tuple(row) for row in connection.execute(text(f"SELECT * FROM {table}")))
            for table in tables
        }


@pytest.fixture
def db_rows(store: MemoryStore, sql: Engine) -> Callable[[], dict[str, list[tuple[Any, ...]]]]:
    """Read every row of the test's database (compare before and after a failing call)."""
    return lambda: db_contents(sql)
