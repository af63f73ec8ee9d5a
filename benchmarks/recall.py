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
    medians.

PostgreSQL runs on a throwaway server started as the store tests start one.
"""

from __future__ import annotations

import argparse
import contextlib
import itertools
import re
import statistics
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

import attrs

from benchmarks.postgres import postgres_databases
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
    new_url: Callable[[], str], result: BackendResult, made: list[Chunk], repeats: int
) -> None:
    for run in range(2 * repeats + 2):  # alternating, the first pair a warm-up
        enabled = run % 2 == 0
        with MemoryStore.open(new_url()) as store, index_writes(enabled):
            store.create_thread("appended")
            started = time.perf_counter()
            for start in range(0, len(made), BATCH):
                store.append("appended", *made[start : start + BATCH])
            elapsed = time.perf_counter() - started
        if run >= 2:
            (result.with_index if enabled else result.without_index).append(elapsed)


def run_backend(
    backend: str,
    new_url: Callable[[], str],
    *,
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
    appends(new_url, result, list(generate(append_chunks, corpus).chunks), repeats)
    print(f"{backend}: append ratio {result.append_ratio:.2f}", flush=True)
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
    for r in results:
        for miss in r.misses[:10]:
            lines.append(f"- {r.backend} miss: `{miss[:120]}`")
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
                results.append(run_backend("PostgreSQL", new_database, **options))
    print("\n".join(section(results, args.append_chunks)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
