"""Several writers at once, and a writer killed mid-batch, on SQLite and PostgreSQL.

Each runs with MemoryStore and with AsyncMemoryStore (the writers too).

The writers are forked processes (each opens its own store and connections);
forking spares each one the second it takes to import SQLAlchemy afresh.
"""

from __future__ import annotations

import asyncio
import multiprocessing
import sys
import threading
import time
from collections.abc import Callable
from multiprocessing.synchronize import Event
from typing import Any

import pytest
from sqlalchemy import Engine, event
from store_apis import open_with, run_writers

from memctx import chunks
from memctx.store import AsyncMemoryStore, MemoryStore

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(
        "fork" not in multiprocessing.get_all_start_methods(), reason="needs fork()"
    ),
]

Rows = Callable[[], dict[str, list[tuple[object, ...]]]]
WORKERS = 3
ROUNDS = 20
OTHERS = ("a", "b")


def planned(worker: int) -> list[tuple[str, list[str]]]:
    """The appends a worker makes: every round to ``shared``, and to ``a`` or ``b`` in turn."""
    appends = []
    for r in range(ROUNDS):
        size = 1 + (worker + r) % 3
        for thread in ("shared", OTHERS[(worker + r) % 2]):
            appends.append((thread, [f"{thread}.w{worker}.r{r}.{i}" for i in range(size)]))
    return appends


def _append_planned(store: MemoryStore, worker: int) -> None:
    for number, (thread, ids) in enumerate(planned(worker)):
        batch = [chunks.user(f"text of {i}", id=i) for i in ids]
        store.append(thread, *batch)
        if number % 5 == 0:
            assert store.append(thread, *batch) == 0, "a retried append stored chunks"


def test_concurrent_writers_lose_and_duplicate_nothing(
    store: MemoryStore, store_url: str, api: str
) -> None:
    for thread in ("shared", *OTHERS):
        store.create_thread(thread)

    run_writers(_append_planned, api, store_url, WORKERS)

    expected: dict[str, list[list[str]]] = {"shared": [], "a": [], "b": []}
    for worker in range(WORKERS):
        for thread, ids in planned(worker):
            expected[thread].append(ids)
    for thread, batches in expected.items():
        history = store.history(thread)
        seq_of = {item.chunk.id: item.seq for item in history}
        assert [item.seq for item in history] == list(range(1, len(history) + 1)), "gaps"
        assert len(seq_of) == len(history) == sum(len(b) for b in batches), "lost or duplicated"
        assert set(seq_of) == {i for b in batches for i in b}
        for ids in batches:  # each append's chunks are stored together, in order
            seqs = [seq_of[i] for i in ids]
            assert seqs == list(range(seqs[0], seqs[0] + len(ids)))
        for worker in range(WORKERS):  # each writer's appends keep their order
            mine = [seq_of[b[0]] for b in batches if f".w{worker}." in b[0]]
            assert mine == sorted(mine)
        assert store.get_current_state(thread).ids == tuple(item.chunk.id for item in history)


@pytest.mark.parametrize("api", ["sync"])
def test_threads_of_one_process_can_share_a_store(store: MemoryStore) -> None:
    store.create_thread("t1")
    failures: list[BaseException] = []

    def write(worker: int) -> None:
        try:
            for r in range(10):
                store.append("t1", chunks.user("x", id=f"t{worker}.{r}.0"),
                             chunks.user("y", id=f"t{worker}.{r}.1"))  # fmt: skip
        except BaseException as exc:  # pragma: no cover - reported below
            failures.append(exc)

    workers = [threading.Thread(target=write, args=(w,)) for w in range(4)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()

    assert failures == []
    assert [item.seq for item in store.history("t1")] == list(range(1, 81))


def test_tasks_of_one_event_loop_can_share_an_async_store(store_url: str) -> None:
    async def main() -> list[int]:
        async with await AsyncMemoryStore.open(store_url) as store:
            await store.create_thread("t1")

            async def write(worker: int) -> None:
                for r in range(10):
                    await store.append("t1", chunks.user("x", id=f"t{worker}.{r}.0"),
                                       chunks.user("y", id=f"t{worker}.{r}.1"))  # fmt: skip

            await asyncio.gather(*(write(w) for w in range(4)))
            return [item.seq for item in await store.history("t1")]

    assert asyncio.run(main()) == list(range(1, 81))


def _doomed_writer(api: str, url: str, stage: str, paused: Event) -> None:
    """Append a batch of 5 and freeze, still inside it, once its rows have been written.

    ``mid-batch``: right after the statement that wrote the batch's last
    chunk row, before the thread's counter moves; ``before-commit``: when
    the commit is about to be sent. Counting rows (not statements) means an
    append that committed chunk by chunk would be caught with 4 of 5 stored.
    """
    store = open_with(api, url)
    inserted = [0]

    def pause() -> None:
        paused.set()
        time.sleep(120)

    @event.listens_for(store.engine, "after_cursor_execute")
    def after(conn: Any, cursor: Any, statement: str, parameters: Any, context: Any,
              executemany: bool) -> None:  # fmt: skip
        if statement.startswith("INSERT INTO memctx_chunks"):
            inserted[0] += len(parameters) if executemany else 1
            if stage == "mid-batch" and inserted[0] >= 5:
                pause()

    @event.listens_for(store.engine, "commit")
    def before_commit(conn: Any) -> None:
        if stage == "before-commit" and inserted[0] >= 5:
            pause()

    store.append("t1", *(chunks.user(f"doomed {i}", id=f"doomed-{i}") for i in range(5)))
    sys.exit(3)  # the batch was committed: the test failed to kill the writer in time


@pytest.mark.parametrize("stage", ["mid-batch", "before-commit"])
def test_a_writer_killed_inside_a_batch_leaves_nothing_of_it(
    db_rows: Rows, sql: Engine, store: MemoryStore, store_url: str, api: str, stage: str
) -> None:
    store.create_thread("t1")
    store.append("t1", chunks.user("one", id="one"), chunks.user("two", id="two"))
    before = db_rows()
    context = multiprocessing.get_context("fork")
    paused = context.Event()
    process = context.Process(target=_doomed_writer, args=(api, store_url, stage, paused))
    process.start()
    try:
        assert paused.wait(60), f"the writer never reached {stage} (exit code {process.exitcode})"
    finally:
        process.kill()
        process.join(30)

    assert db_rows() == before
    assert store.append("t1", chunks.user("three", id="three")) == 1
    assert [(i.seq, i.chunk.id) for i in store.history("t1")] == [
        (1, "one"), (2, "two"), (3, "three"),
    ]  # fmt: skip
    if store.backend == "sqlite":
        with sql.connect() as connection:
            assert connection.exec_driver_sql("PRAGMA integrity_check").scalar() == "ok"


LOADED = 12
"""Processes in the SQLite load test."""


def _mixed_load(store: MemoryStore, worker: int) -> None:
    """Appends of 1-12 chunks, reads, builds, views and compression, on three shared threads."""
    from memctx.compress import MaxChars

    for n in range(40):
        thread = f"load{(worker + n) % 3}"
        step = (worker * 7 + n) % 8
        if step < 4:
            size = 1 + (worker + n) % 12
            store.append(
                thread,
                *(
                    chunks.user(f"w{worker} n{n} " * 40, id=f"{worker}.{n}.{k}")
                    for k in range(size)
                ),
            )
        elif step == 4:
            store.build(thread, max_tokens=2_000)
        elif step == 5:
            store.compress(thread, [MaxChars(80)])
        elif step == 6:
            store.truncate(thread, keep_last=200)
        else:
            store.get_current_state(thread)


@pytest.mark.parametrize("store_url", ["sqlite"], indirect=True)
def test_twelve_busy_processes_never_see_database_is_locked(
    store: MemoryStore, store_url: str, api: str
) -> None:
    for n in range(3):
        store.create_thread(f"load{n}")

    run_writers(_mixed_load, api, store_url, LOADED)  # any StoreError fails it

    appended = sum(len(store.history(f"load{n}")) for n in range(3))
    assert appended >= LOADED * 20
