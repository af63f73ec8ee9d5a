"""Opening databases: the default location, URLs, the schema version, SQLite's settings."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import Engine, event, text
from store_apis import open_with

import memctx.store
from memctx import SchemaVersionError, StoreError, chunks
from memctx._exceptions import StoreArgumentError
from memctx.store import (
    DATABASE_URL_ENV,
    SCHEMA_VERSION,
    MemoryStore,
    default_database_path,
    default_database_url,
)

Rows = Callable[[], dict[str, list[tuple[object, ...]]]]


class TestSchemaVersion:
    @pytest.mark.parametrize("version", [SCHEMA_VERSION + 1, 0])
    def test_a_database_of_another_schema_version_is_refused_untouched(
        self, db_rows: Rows, sql: Engine, store_url: str, api: str, version: int
    ) -> None:
        with sql.begin() as connection:
            connection.execute(text("UPDATE memctx_schema SET version = :v"), {"v": version})
        before = db_rows()

        with pytest.raises(SchemaVersionError, match=f"schema version {version}; this memctx"):
            open_with(api, store_url)
        assert db_rows() == before

    def test_a_newer_database_says_to_upgrade(
        self, store: MemoryStore, sql: Engine, store_url: str, api: str
    ) -> None:
        with sql.begin() as connection:
            connection.execute(text("UPDATE memctx_schema SET version = 99"))

        with pytest.raises(SchemaVersionError, match="upgrade memctx"):
            open_with(api, store_url)

    @pytest.mark.new_database
    def test_a_new_database_records_the_current_version(
        self, store: MemoryStore, sql: Engine
    ) -> None:
        with sql.connect() as connection:
            rows = connection.execute(text("SELECT id, version FROM memctx_schema")).all()

        assert [tuple(r) for r in rows] == [(1, SCHEMA_VERSION)]


class TestLocation:
    def test_the_environment_variable_names_the_default_database(
        self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        url = f"sqlite:///{tmp_path / 'from-env.db'}"
        monkeypatch.setenv(DATABASE_URL_ENV, url)

        with MemoryStore.open() as store:
            store.create_thread("t1")
            assert store.url == url
        assert (tmp_path / "from-env.db").is_file()

    @pytest.mark.skipif(sys.platform in ("win32", "darwin"), reason="the XDG location")
    def test_without_a_url_the_store_lives_in_the_user_data_directory(
        self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        monkeypatch.delenv(DATABASE_URL_ENV, raising=False)
        monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))

        with MemoryStore.open() as store:
            store.create_thread("t1")

        assert default_database_path() == tmp_path / "data" / "memctx" / "memory.db"
        assert default_database_url() == f"sqlite:///{tmp_path}/data/memctx/memory.db"
        assert default_database_path().is_file()

    @pytest.mark.skipif(sys.platform in ("win32", "darwin"), reason="the XDG location")
    def test_a_relative_xdg_data_home_is_ignored(
        self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """The XDG Base Directory specification: relative paths are invalid and ignored."""
        monkeypatch.setenv("HOME", str(tmp_path / "home"))
        monkeypatch.chdir(tmp_path)
        monkeypatch.setenv("XDG_DATA_HOME", "relative/data")

        assert default_database_path() == tmp_path / "home" / ".local/share/memctx/memory.db"

    def test_an_argument_wins_over_the_environment(
        self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        monkeypatch.setenv(DATABASE_URL_ENV, "mysql://nowhere/db")

        with MemoryStore.open(tmp_path / "arg.db") as store:
            assert store.url == f"sqlite:///{tmp_path / 'arg.db'}"

    @pytest.mark.parametrize("as_path", [str, Path])
    def test_a_plain_path_is_a_sqlite_file(
        self, tmp_path: Path, as_path: Callable[[str], Any]
    ) -> None:
        with MemoryStore.open(as_path(str(tmp_path / "plain.db"))) as store:
            store.create_thread("t1")
            assert store.backend == "sqlite"
        assert (tmp_path / "plain.db").is_file()

    @pytest.mark.parametrize(
        ("url", "message"),
        [
            ("mysql://u@h/db", "unsupported database 'mysql'"),
            ("postgresql+psycopg2://u@h/db", "psycopg 3"),
            ("sqlite+pysqlcipher:///x.db", "unsupported SQLite driver"),
            ("://nothing", "not a database URL"),
            ("  ", "the database URL is empty"),
        ],
    )
    def test_an_unsupported_url_is_a_clear_error(self, url: str, message: str) -> None:
        with pytest.raises(StoreArgumentError, match=message):
            MemoryStore.open(url)

    def test_a_sqlite_file_in_a_missing_directory_is_not_created(self, tmp_path: Path) -> None:
        with pytest.raises(StoreError, match="does not exist"):
            MemoryStore.open(tmp_path / "missing" / "x.db")
        assert not (tmp_path / "missing").exists()

    def test_an_unreachable_server_is_a_store_error(self) -> None:
        import socket

        with socket.socket() as sock:
            sock.bind(("127.0.0.1", 0))
            port = sock.getsockname()[1]
        with pytest.raises(StoreError, match="cannot open postgresql"):
            MemoryStore.open(f"postgresql://nobody@127.0.0.1:{port}/db?connect_timeout=2")

    def test_the_password_is_never_shown(self) -> None:
        with pytest.raises(StoreError) as info:
            MemoryStore.open("postgresql://user:s3cret@127.0.0.1:1/db?connect_timeout=2")
        assert "s3cret" not in str(info.value)

    def test_an_in_memory_sqlite_store_works_for_throwaway_use(self) -> None:
        with MemoryStore.open("sqlite://") as store:
            store.create_thread("t1")
            store.append("t1", chunks.user("hi", id="u"))
            assert store.get_current_state("t1").ids == ("u",)


class TestSqliteSettings:
    def test_sqlite_runs_in_wal_mode_with_a_busy_timeout(self, tmp_path: Path, api: str) -> None:
        pragmas: list[tuple[str, object]] = []
        with open_with(api, f"sqlite:///{tmp_path / 'x.db'}") as store:

            @event.listens_for(store.engine, "commit")
            def settings(connection: Any) -> None:
                for name in ("journal_mode", "busy_timeout", "foreign_keys"):
                    value = connection.exec_driver_sql(f"PRAGMA {name}").scalar()
                    pragmas.append((name, value))

            store.create_thread("t1")

        assert pragmas == [("journal_mode", "wal"), ("busy_timeout", 30_000), ("foreign_keys", 1)]

    def test_writes_take_the_write_lock_at_begin_and_reads_do_not(
        self, tmp_path: Path, api: str
    ) -> None:
        with open_with(api, f"sqlite:///{tmp_path / 'x.db'}") as store:
            statements: list[str] = []
            event.listen(
                store.engine,
                "before_cursor_execute",
                lambda conn, cursor, statement, *rest: statements.append(statement),
            )
            store.create_thread("t1")
            writes = list(statements)
            statements.clear()
            store.get_current_state("t1")

        assert writes[0] == "BEGIN IMMEDIATE"
        assert statements[0] == "BEGIN"
        assert "BEGIN IMMEDIATE" not in statements


class TestPublicNames:
    def test_all_has_no_duplicates_and_every_name_resolves(self) -> None:
        assert len(memctx.store.__all__) == len(set(memctx.store.__all__))
        assert [n for n in memctx.store.__all__ if getattr(memctx.store, n, None) is None] == []

    def test_an_unknown_name_is_an_attribute_error(self) -> None:
        with pytest.raises(AttributeError, match="no attribute 'Nope'"):
            memctx.store.Nope  # noqa: B018

    def test_the_cli_does_not_load_sqlalchemy_until_a_thread_command_runs(self) -> None:
        code = (
            "import sys, click, memctx.cli; "
            "assert memctx.cli.main.get_command(click.Context(memctx.cli.main), 'thread'); "
            "assert 'sqlalchemy' not in sys.modules, 'sqlalchemy imported'"
        )
        done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
        assert done.returncode == 0, done.stderr
