"""The store on SQLite against plain ``sqlite3`` doing the same inserts and selects.

Both sides store the same chunks as JSON rows (``memctx.statefile``'s chunk
dicts) in a file in a fresh temporary directory (WAL journal, as the store
sets it), append them in batches, one transaction per batch, idempotent on
the chunk id, and load them back in order as a :class:`~memctx.MemoryState`.
Loading uses a freshly opened connection / store, so no in-process cache
answers it. The memctx side runs only once ``memctx.store`` imports; until
then it is reported as skipped.
"""

from __future__ import annotations

import contextlib
import gc
import json
import sqlite3
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

from benchmarks.timing import Timing
from memctx import Chunk, MemoryState
from memctx.statefile import chunk_from_dict, chunk_to_dict

THREAD = "bench"
T = TypeVar("T")


@dataclass
class StoreResult:
    chunks: int
    batch: int
    sqlite_append: Timing
    sqlite_load: Timing
    store_append: Timing | None = None
    store_load: Timing | None = None
    skipped: str | None = None


def _batches(items: Sequence[Chunk], size: int) -> Iterator[Sequence[Chunk]]:
    for start in range(0, len(items), size):
        yield items[start : start + size]


def sqlite_open(path: Path) -> sqlite3.Connection:
    """Connect and create the table (not timed, like opening the store)."""
    connection = sqlite3.connect(path)
    # The store's SQLite settings: WAL journal, default (FULL) synchronous.
    connection.execute("PRAGMA journal_mode = WAL")
    connection.execute(
        "CREATE TABLE IF NOT EXISTS chunks (thread_id TEXT NOT NULL, seq INTEGER NOT NULL,"
        " id TEXT NOT NULL, data TEXT NOT NULL, PRIMARY KEY (thread_id, id))"
    )
    connection.execute("CREATE INDEX IF NOT EXISTS chunks_seq ON chunks (thread_id, seq)")
    connection.commit()
    return connection


def sqlite_append(connection: sqlite3.Connection, items: Sequence[Chunk], batch: int) -> None:
    """One transaction per batch; ``INSERT OR IGNORE`` makes it idempotent on the id."""
    seq = 0
    for group in _batches(items, batch):
        rows = []
        for chunk in group:
            rows.append((THREAD, seq, chunk.id, json.dumps(chunk_to_dict(chunk))))
            seq += 1
        with connection:
            connection.executemany("INSERT OR IGNORE INTO chunks VALUES (?, ?, ?, ?)", rows)


def sqlite_load(connection: sqlite3.Connection) -> MemoryState:
    rows = connection.execute(
        "SELECT data FROM chunks WHERE thread_id = ? ORDER BY seq", (THREAD,)
    ).fetchall()
    return MemoryState([chunk_from_dict(json.loads(data)) for (data,) in rows], thread_id=THREAD)


def _close(store: Any) -> None:
    for name in ("close", "dispose"):
        method = getattr(store, name, None)
        if callable(method):
            method()
            return


def _timed(function: Callable[..., T], *args: Any) -> tuple[float, T]:
    gc.collect()
    gc.disable()
    try:
        start = time.perf_counter()
        value = function(*args)
        return time.perf_counter() - start, value
    finally:
        gc.enable()


def run_store_benchmark(items: Sequence[Chunk], *, batch: int, repeats: int) -> StoreResult:
    """Append ``items`` in batches and load them back, ``repeats`` times each side."""
    result = StoreResult(len(items), batch, Timing(), Timing())
    try:
        from memctx.store import MemoryStore
    except ImportError as exc:
        result.skipped = f"memctx.store does not import yet ({exc})"
        MemoryStore = None  # noqa: N806
    if MemoryStore is not None:
        result.store_append, result.store_load = Timing(), Timing()
    for _ in range(repeats):
        with tempfile.TemporaryDirectory(prefix="memctx-bench-") as tmp:
            path = Path(tmp) / "plain.db"
            connection = sqlite_open(path)
            elapsed, _ = _timed(sqlite_append, connection, items, batch)
            connection.close()
            result.sqlite_append.runs.append(elapsed)
            connection = sqlite_open(path)
            elapsed, state = _timed(sqlite_load, connection)
            connection.close()
            assert len(state) == len(items)
            result.sqlite_load.runs.append(elapsed)
            if MemoryStore is None:
                continue
            assert result.store_append is not None
            assert result.store_load is not None
            url = f"sqlite:///{Path(tmp) / 'memctx.db'}"
            try:
                append_s, load_s = _store_once(MemoryStore, url, items, batch)
            except Exception as exc:  # the store is new: report, do not abort the suite
                result.skipped = f"memctx.store failed: {type(exc).__name__}: {exc}"
                result.store_append = result.store_load = None
                MemoryStore = None  # noqa: N806
                continue
            result.store_append.runs.append(append_s)
            result.store_load.runs.append(load_s)
    return result


def _store_once(
    memory_store: Any, url: str, items: Sequence[Chunk], batch: int
) -> tuple[float, float]:
    def append_all(store: Any) -> None:
        for group in _batches(items, batch):
            store.append(THREAD, *group)

    store = memory_store.open(url)
    try:
        store.create_thread(THREAD)
        append_s, _ = _timed(append_all, store)
    finally:
        with contextlib.suppress(Exception):
            _close(store)
    store = memory_store.open(url)
    try:
        load_s, state = _timed(store.get_current_state, THREAD)
    finally:
        with contextlib.suppress(Exception):
            _close(store)
    if len(state) != len(items):
        raise AssertionError(f"loaded {len(state)} chunks, appended {len(items)}")
    return append_s, load_s
