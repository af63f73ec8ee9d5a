"""SQLite's "database is locked" before the busy timeout, and ``append_with``'s function.

SQLite waits for a lock (its busy handler, 30 s) only when a transaction
*starts*: a transaction that has read and then wants to write while another
connection holds the write lock is refused at once (``SQLITE_BUSY``; waiting
could deadlock, as the other writer may be waiting for it). The store's own
writes take the write lock when they begin (``BEGIN IMMEDIATE``), so they
never meet that refusal themselves; a function run inside a store
transaction (``append_with``'s ``make``) that uses the database through a
connection of its own does. The store then runs its whole transaction again,
until the busy timeout has passed: a caller sees "database is locked" only
after it, and nothing of the refused attempts is written.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterator
from typing import Any

import pytest
from sqlalchemy import Engine, create_engine, text
from sqlalchemy.exc import OperationalError
from sqlalchemy.ext.asyncio import create_async_engine
from sqlalchemy.pool import NullPool
from store_apis import open_with, run_writers

from memctx import StoreError, chunks
from memctx.store import MemoryStore
from memctx.store import _engine as engine_module
from memctx.store._engine import retry_busy, retry_busy_async

SQLITE_ONLY = pytest.mark.parametrize("store_url", ["sqlite"], indirect=True)


@pytest.fixture
def probe(store_url: str) -> Iterator[Engine]:
    """A plain engine on the store's file, with a table ``probe`` for writes of its own.

    Its connections leave transactions to the test (``BEGIN`` is deferred:
    a read first, the write lock only at the first write).
    """
    engine = create_engine(store_url, connect_args={"isolation_level": None}, poolclass=NullPool)
    with engine.connect() as connection:
        connection.exec_driver_sql("PRAGMA journal_mode = WAL")
        connection.exec_driver_sql("CREATE TABLE IF NOT EXISTS probe (v INTEGER)")
    yield engine
    engine.dispose()


def read_then_write(engine: Engine, value: int) -> None:
    """One deferred transaction that reads ``probe`` and then writes to it."""
    with engine.connect() as connection:
        connection.exec_driver_sql("BEGIN")
        try:
            connection.exec_driver_sql("SELECT count(*) FROM probe").all()
            connection.exec_driver_sql(f"INSERT INTO probe VALUES ({value})")
            connection.exec_driver_sql("COMMIT")
        except BaseException:
            connection.exec_driver_sql("ROLLBACK")
            raise


def probe_values(engine: Engine) -> list[int]:
    with engine.connect() as connection:
        return [v for (v,) in connection.exec_driver_sql("SELECT v FROM probe ORDER BY v")]


@SQLITE_ONLY
class TestEarlyBusy:
    def test_sqlite_refuses_a_read_that_turns_into_a_write_at_once(
        self, store: MemoryStore, probe: Engine
    ) -> None:
        store.create_thread("t")
        refused: list[tuple[BaseException, float]] = []

        def make(length: int, metadata: dict[str, Any]) -> tuple[list[Any], None]:
            start = time.monotonic()
            try:
                read_then_write(probe, 1)  # the store's transaction holds the write lock
            except OperationalError as exc:
                refused.append((exc, time.monotonic() - start))
                return [], None
            return [], None

        store.append_with("t", make)

        [(error, waited)] = refused
        assert "database is locked" in str(error)
        assert waited < engine_module.SQLITE_BUSY_TIMEOUT_MS / 1000 / 2  # no busy wait

    def test_a_store_call_that_meets_an_early_busy_is_run_again_and_succeeds(
        self, store: MemoryStore, probe: Engine
    ) -> None:
        store.create_thread("t")
        calls: list[int] = []

        def make(length: int, metadata: dict[str, Any]) -> tuple[list[Any], dict[str, Any]]:
            calls.append(length)
            if len(calls) == 1:
                read_then_write(probe, 1)  # refused at once: the store holds the write lock
            return [chunks.user("made", id=f"m{length}")], {"made": length}

        added = store.append_with("t", make)

        assert added == 1
        assert calls == [0, 0]  # run again from the start, the thread unchanged
        assert store.get_current_state("t").ids == ("m0",)
        assert store.thread_metadata("t") == {"made": 0}
        assert probe_values(probe) == []

    def test_a_call_still_busy_at_the_timeout_fails_only_then_and_writes_nothing(
        self, store_url: str, api: str, probe: Engine, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        monkeypatch.setattr(engine_module, "SQLITE_BUSY_TIMEOUT_MS", 600)
        with open_with(api, store_url) as store:
            store.create_thread("t")
            calls = 0

            def make(length: int, metadata: dict[str, Any]) -> tuple[list[Any], None]:
                nonlocal calls
                calls += 1
                read_then_write(probe, calls)
                return [chunks.user("never")], None

            start = time.monotonic()
            with pytest.raises(StoreError, match="database is locked"):
                store.append_with("t", make)
            waited = time.monotonic() - start

            assert waited >= 0.6
            assert calls > 1
            assert store.history("t") == ()
            assert probe_values(probe) == []

    def test_a_writer_holding_the_lock_past_the_timeout_is_a_store_error_after_it(
        self, store_url: str, api: str, probe: Engine, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        monkeypatch.setattr(engine_module, "SQLITE_BUSY_TIMEOUT_MS", 600)
        with open_with(api, store_url) as store, probe.connect() as holder:
            store.create_thread("t")
            holder.exec_driver_sql("BEGIN IMMEDIATE")
            start = time.monotonic()
            with pytest.raises(StoreError, match="database is locked"):
                store.append("t", chunks.user("late"))
            waited = time.monotonic() - start
            holder.exec_driver_sql("ROLLBACK")

            assert waited >= 0.6
            assert store.history("t") == ()


@SQLITE_ONLY
class TestRetryBusy:
    """The retry itself, on a transaction refused at once by a commit made meanwhile."""

    def test_a_transaction_refused_at_once_is_run_again_from_the_start(self, probe: Engine) -> None:
        attempts = 0

        def attempt() -> int:
            nonlocal attempts
            attempts += 1
            with probe.connect() as connection:
                connection.exec_driver_sql("BEGIN")
                try:
                    seen = connection.exec_driver_sql("SELECT count(*) FROM probe").scalar_one()
                    if attempts == 1:  # another writer commits after this one read
                        read_then_write(probe, 100)
                    connection.exec_driver_sql(f"INSERT INTO probe VALUES ({seen})")
                    connection.exec_driver_sql("COMMIT")
                except BaseException:
                    connection.exec_driver_sql("ROLLBACK")
                    raise
            return int(seen)

        assert retry_busy(attempt) == 1  # the second attempt saw the other commit
        assert attempts == 2
        assert probe_values(probe) == [1, 100]

    def test_the_async_retry_runs_a_refused_transaction_again(
        self, store_url: str, probe: Engine
    ) -> None:
        async def run() -> int:
            engine = create_async_engine(
                store_url.replace("sqlite://", "sqlite+aiosqlite://"),
                connect_args={"isolation_level": None},
                poolclass=NullPool,
            )
            attempts = 0

            async def attempt() -> int:
                nonlocal attempts
                attempts += 1
                async with engine.connect() as connection:
                    await connection.exec_driver_sql("BEGIN")
                    try:
                        result = await connection.execute(text("SELECT count(*) FROM probe"))
                        seen = int(result.scalar_one())
                        if attempts == 1:
                            await asyncio.to_thread(read_then_write, probe, 100)
                        await connection.exec_driver_sql(f"INSERT INTO probe VALUES ({seen})")
                        await connection.exec_driver_sql("COMMIT")
                    except BaseException:
                        await connection.exec_driver_sql("ROLLBACK")
                        raise
                return seen

            try:
                assert await retry_busy_async(attempt) == 1
                return attempts
            finally:
                await engine.dispose()

        assert asyncio.run(run()) == 2
        assert probe_values(probe) == [1, 100]


APPENDERS = 4
CALLS = 25  # append_with calls per appender


def _append_with_counted(store: Any, worker: int) -> None:
    calls = 0

    def make(length: int, metadata: dict[str, Any]) -> tuple[list[Any], dict[str, Any]]:
        nonlocal calls
        calls += 1
        return [chunks.user(f"{worker} says", id=f"m{length + 1}")], {"last": length + 1}

    for _ in range(CALLS):
        store.append_with("t", make)
    assert calls == CALLS, f"make was called {calls} times for {CALLS} calls"


@pytest.mark.slow
def test_append_with_calls_make_once_per_call_under_contention(
    store: MemoryStore, store_url: str, api: str
) -> None:
    store.create_thread("t")

    run_writers(_append_with_counted, api, store_url, APPENDERS)

    ids = store.get_current_state("t").ids
    assert ids == tuple(f"m{n}" for n in range(1, APPENDERS * CALLS + 1))
    assert store.thread_metadata("t") == {"last": APPENDERS * CALLS}
