"""Recall (``store.search``): hit rate on real runs, search latency, append cost of the index.

    uv run python -m benchmarks.recall                     # all three, SQLite and PostgreSQL
    uv run python -m benchmarks.recall --chunks 20000 --no-postgres   # a quick look

(a) Hit rate: the three bundled trajectories stored as one thread; every distinct
    error or failure line of their tool results (a line matching ``ERROR_LINE``)
    is a query, and a hit is the chunk holding the line among the top 3.
(b) Latency: a generated history of ``--chunks`` chunks (``workloads.generate``)
    in one thread; the queries of (a) (their text is cut from the same
    trajectories), each timed once after a warm-up pass; the median per query.
(c) Append: ``--append-chunks`` generated chunks appended 100 at a time into a
    thread of a new database, with the index written (as shipped) and without
    it (the index write replaced by nothing), alternating, ``--repeats`` each;
    medians, of wall time and of CPU time (this process's and, on PostgreSQL, the
    server's). On SQLite also FTS5 alone: the same chunks' text indexed by a bare
    table made as memctx's, no memctx code timed (:func:`fts5_alone`).

PostgreSQL runs on a throwaway server started as the store tests start one.
"""

from __future__ import annotations

import argparse
import contextlib
import itertools
import math
import re
import statistics
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

import attrs

from benchmarks.postgres import postgres_databases, server_cpu
from benchmarks.workloads import generate, load_corpus, load_trajectories
from memctx import Chunk, ChunkType
from memctx.store import MemoryStore

ERROR_LINE: Final = re.compile(
    r"error|exception|traceback|fail|fatal|denied|not found|no such|invalid|cannot|unable",
    re.IGNORECASE,
)
TOP: Final = 3
HIT_RATE_TARGET: Final = 0.95
LATENCY_TARGET_MS: Final = 20.0
APPEND_TARGET: Final = 1.3
BATCH: Final = 100


@dataclass
class BackendResult:
    backend: str
    queries: int = 0
    hits: int = 0
    misses: list[str] = field(default_factory=list)
    chunks: int = 0
    load_s: float = 0.0
    latencies_ms: list[float] = field(default_factory=list)
    with_index: list[float] = field(default_factory=list)
    without_index: list[float] = field(default_factory=list)
    # CPU seconds of the same runs: (this process, the database server or 0.0)
    with_cpu: list[tuple[float, float]] = field(default_factory=list)
    without_cpu: list[tuple[float, float]] = field(default_factory=list)
    server_cpu: bool = False
    engine_alone_s: float = 0.0
    distinct_words_s: float = 0.0

    @property
    def hit_rate(self) -> float:
        return self.hits / self.queries if self.queries else 0.0

    @property
    def median_ms(self) -> float:
        return statistics.median(self.latencies_ms) if self.latencies_ms else 0.0

    @property
    def p90_ms(self) -> float:
        ordered = sorted(self.latencies_ms)
        return ordered[int(0.9 * (len(ordered) - 1))] if ordered else 0.0

    @property
    def append_ratio(self) -> float:
        if not self.with_index or not self.without_index:
            return 0.0
        return statistics.median(self.with_index) / statistics.median(self.without_index)

    def cpu(self, enabled: bool) -> tuple[float, float]:
        """Median CPU seconds of the runs with (or without) the index: (client, server)."""
        runs = self.with_cpu if enabled else self.without_cpu
        return (
            statistics.median(c for c, _ in runs) if runs else 0.0,
            statistics.median(s for _, s in runs) if runs else 0.0,
        )

    @property
    def cpu_ratio(self) -> float:
        without = sum(self.cpu(False))
        return sum(self.cpu(True)) / without if without else 0.0


def trajectory_chunks() -> list[Chunk]:
    """The three trajectories, one after the other, ids made unique per run."""
    made: list[Chunk] = []
    for number, workload in enumerate(load_trajectories()):
        made.extend(attrs.evolve(c, id=f"r{number}-{c.id}") for c in workload.state.chunks)
    return made


def error_lines(made: Sequence[Chunk]) -> list[str]:
    """Every distinct error or failure line of the tool results, in order."""
    found: dict[str, None] = {}
    for chunk in made:
        if chunk.type is not ChunkType.ENVIRONMENT:
            continue
        for line in chunk.text.splitlines():
            line = line.strip()
            if len(line) >= 8 and ERROR_LINE.search(line):
                found.setdefault(line, None)
    return list(found)


def hit_rate(store: MemoryStore, result: BackendResult, made: list[Chunk]) -> list[str]:
    store.create_thread("runs")
    store.append("runs", *made)
    queries = error_lines(made)
    for query in queries:
        hits = store.search("runs", query, limit=TOP)
        result.queries += 1
        if any(query in hit.chunk.text for hit in hits):
            result.hits += 1
        else:
            result.misses.append(query)
    return queries


def latency(
    store: MemoryStore, result: BackendResult, history: list[Chunk], queries: list[str]
) -> None:
    store.create_thread("long")
    started = time.perf_counter()
    for start in range(0, len(history), 1000):
        store.append("long", *history[start : start + 1000])
    result.load_s = time.perf_counter() - started
    result.chunks = len(history)
    for query in queries:  # warm-up: pages in the cache, statements prepared
        store.search("long", query)
    for query in queries:
        started = time.perf_counter()
        store.search("long", query)
        result.latencies_ms.append((time.perf_counter() - started) * 1e3)


@contextlib.contextmanager
def index_writes(enabled: bool) -> Iterator[None]:
    """The index written with each append (as shipped), or not at all (the baseline)."""
    import memctx.store._queries as queries

    shipped = queries.index_rows
    if not enabled:
        queries.index_rows = lambda *args, **kwargs: None
    try:
        yield
    finally:
        queries.index_rows = shipped


def appends(
    new_url: Callable[[], str],
    result: BackendResult,
    made: list[Chunk],
    repeats: int,
    server: Callable[[], float] | None = None,
) -> None:
    """Time the appends with and without the index (wall and CPU; ``server`` reads the
    database server's CPU seconds, where it can be read)."""
    result.server_cpu = server is not None
    for run in range(2 * repeats + 2):  # alternating, the first pair a warm-up
        enabled = run % 2 == 0
        with MemoryStore.open(new_url()) as store, index_writes(enabled):
            store.create_thread("appended")
            server_started = server() if server is not None else 0.0
            cpu_started = time.process_time()
            started = time.perf_counter()
            for start in range(0, len(made), BATCH):
                store.append("appended", *made[start : start + BATCH])
            elapsed = time.perf_counter() - started
            cpu = time.process_time() - cpu_started
            server_used = server() - server_started if server is not None else 0.0
        if run >= 2:
            (result.with_index if enabled else result.without_index).append(elapsed)
            (result.with_cpu if enabled else result.without_cpu).append((cpu, server_used))


def fts5_alone(made: Sequence[Chunk], repeats: int) -> tuple[float, float]:
    """CPU seconds of SQLite's FTS5 alone indexing the chunks as memctx's table does (the
    same text, table and transactions of ``BATCH`` rows; the text computed beforehand, no
    memctx code timed): the least the index can cost an append on SQLite. Second, the
    same with each chunk's distinct words instead of its text (an ``ascii`` tokenizer:
    they are already lower-case words), their splitting by memctx timed too."""
    import sqlite3

    from memctx.store._schema import chunk_values
    from memctx.store._search_index import SQLITE_TABLE, distinct_words, indexed_text

    rows = [chunk_values(chunk) for chunk in made]
    texts = [indexed_text(row["content"], row["meta"]) for row in rows]
    best = [math.inf, math.inf]
    table = (SQLITE_TABLE, SQLITE_TABLE.replace("unicode61 remove_diacritics 0", "ascii"))
    with tempfile.TemporaryDirectory(prefix="memctx-fts5-") as tmp:
        for number in range(2 * repeats):
            distinct = number % 2
            database = sqlite3.connect(Path(tmp) / f"fts5-{number}.db", isolation_level=None)
            database.execute(table[distinct])
            started = time.process_time()
            for start in range(0, len(texts), BATCH):
                if distinct:
                    part = [
                        distinct_words(r["content"], r["meta"]) for r in rows[start : start + BATCH]
                    ]
                else:
                    part = texts[start : start + BATCH]
                database.execute("BEGIN")
                database.executemany(
                    "INSERT INTO memctx_search (rowid, body) VALUES (?, ?)",
                    enumerate(part, start + 1),
                )
                database.execute("COMMIT")
            best[distinct] = min(best[distinct], time.process_time() - started)
            database.close()
    return best[0], best[1]


def run_backend(
    backend: str,
    new_url: Callable[[], str],
    *,
    server: Callable[[], float] | None = None,
    chunks: int,
    append_chunks: int,
    repeats: int,
    corpus: str,
) -> BackendResult:
    result = BackendResult(backend)
    made = trajectory_chunks()
    with MemoryStore.open(new_url()) as store:
        queries = hit_rate(store, result, made)
        print(f"{backend}: hit rate {result.hit_rate:.1%} of {result.queries}", flush=True)
    appended = list(generate(append_chunks, corpus).chunks)
    appends(new_url, result, appended, repeats, server)
    if backend == "SQLite":
        result.engine_alone_s, result.distinct_words_s = fts5_alone(appended, repeats)
    print(
        f"{backend}: append ratio {result.append_ratio:.2f} (CPU {result.cpu_ratio:.2f})",
        flush=True,
    )
    with MemoryStore.open(new_url()) as store:
        latency(store, result, list(generate(chunks, corpus).chunks), queries)
    print(f"{backend}: median {result.median_ms:.2f} ms at {chunks:,} chunks", flush=True)
    return result


def section(results: list[BackendResult], append_chunks: int) -> list[str]:
    def verdict(ok: bool) -> str:
        return "met" if ok else "**NOT MET**"

    lines = [
        "| backend | hit rate, top 3 (≥ 95%) | queries | search median ms (≤ 20) | p90 ms "
        f"| chunks | append with / without index (≤ {APPEND_TARGET:g}×) |",
        "|---|---:|---:|---:|---:|---:|---:|",
    ]
    for r in results:
        with_s = statistics.median(r.with_index)
        without_s = statistics.median(r.without_index)
        lines.append(
            f"| {r.backend} | {r.hit_rate:.1%} {verdict(r.hit_rate >= HIT_RATE_TARGET)} "
            f"| {r.queries} | {r.median_ms:.2f} {verdict(r.median_ms <= LATENCY_TARGET_MS)} "
            f"| {r.p90_ms:.2f} | {r.chunks:,} | {with_s:.2f} s / {without_s:.2f} s = "
            f"{r.append_ratio:.2f}× {verdict(r.append_ratio <= APPEND_TARGET)} |"
        )
    lines.append("")
    lines.append(f"Append: {append_chunks:,} generated chunks, {BATCH} per append.")
    lines.append("")
    for r in results:
        lines.extend(cpu_lines(r, append_chunks))
    for r in results:
        for miss in r.misses[:10]:
            lines.append(f"- {r.backend} miss: `{miss[:120]}`")
    return lines


def cpu_lines(r: BackendResult, chunks: int) -> list[str]:
    """The CPU time of the append runs: with and without the index, and per chunk."""
    (with_c, with_s), (without_c, without_s) = r.cpu(True), r.cpu(False)
    per = 1e6 / chunks
    if r.server_cpu:
        spent = (
            f"{with_c:.2f} + {with_s:.2f} s (memctx + server) with the index, "
            f"{without_c:.2f} + {without_s:.2f} s without = {r.cpu_ratio:.2f}×; the index "
            f"costs {(with_c - without_c) * per:.0f} + {(with_s - without_s) * per:.0f} µs a "
            f"chunk against {without_c * per:.0f} + {without_s * per:.0f} µs a plain append"
        )
    else:
        spent = (
            f"{with_c:.2f} s with the index, {without_c:.2f} s without = {r.cpu_ratio:.2f}×; "
            f"the index costs {(with_c - without_c) * per:.0f} µs a chunk against "
            f"{without_c * per:.0f} µs a plain append"
        )
    lines = [f"- {r.backend}, CPU (medians): {spent}."]
    if r.engine_alone_s:
        lines.append(
            f"- {r.backend}, FTS5 alone (the same text, table and transactions, no memctx "
            f"code; best of {len(r.with_cpu)}): {r.engine_alone_s:.2f} s, "
            f"{r.engine_alone_s * per:.0f} µs a chunk = {r.engine_alone_s / without_c:.0%} "
            "of a plain append's CPU; with each chunk's distinct words, split by memctx, "
            f"instead: {r.distinct_words_s:.2f} s."
        )
    return lines


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.recall")
    parser.add_argument("--chunks", type=int, default=100_000)
    parser.add_argument("--append-chunks", type=int, default=10_000)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--no-postgres", action="store_true")
    args = parser.parse_args(argv)
    corpus = load_corpus()
    options: dict[str, Any] = {
        "chunks": args.chunks,
        "append_chunks": args.append_chunks,
        "repeats": args.repeats,
        "corpus": corpus,
    }
    results = []
    with tempfile.TemporaryDirectory(prefix="memctx-recall-") as tmp:
        files = (f"sqlite:///{Path(tmp) / f'recall-{n}.db'}" for n in itertools.count())
        results.append(run_backend("SQLite", files.__next__, **options))
    if not args.no_postgres:
        with postgres_databases() as new_database:
            if new_database is not None:
                server = server_cpu(new_database())
                results.append(run_backend("PostgreSQL", new_database, server=server, **options))
    print("\n".join(section(results, args.append_chunks)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
