"""``store.build`` on a long thread against the in-memory build of the same state.

    uv run --group bench python -m benchmarks.store_paged     # 50k and 100k, SQLite + PostgreSQL
    uv run --group bench python -m benchmarks.store_paged --chunks 10000,20000 --no-postgres

The generated history is appended to a thread (untimed), built once at the
budget so that the counts of what that build measured are stored, then:

- *cold*: a newly opened store (nothing kept in the process) builds the
  thread, against a fresh builder building a fresh copy of
  ``get_current_state`` (what the store did before paging: it loaded every
  row and built that);
- *append*: one chunk is appended (untimed) and the same store builds again,
  against the in-memory incremental rebuild (``state.append`` and a build
  with the builder that built the state before).

PostgreSQL is started the way the test suite starts it (``initdb`` and
``pg_ctl`` in a temporary directory); without the binaries only SQLite runs.
Times are medians; every store result is checked against the in-memory one.
"""

from __future__ import annotations

import argparse
import tempfile
import time
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import TypeVar

from benchmarks.postgres import postgres_databases
from benchmarks.timing import Timing, timed_call
from benchmarks.workloads import FreshChunks, fresh_copy, generate, load_corpus
from memctx import ContextBuildResult, MemoryState, create_builder, create_tokenizer
from memctx.statefile import chunk_from_dict, chunk_to_dict

T = TypeVar("T")
THREAD = "paged"
MODEL = "gpt-4o"
COLD_TARGET = 5.0
APPEND_TARGET = 3.0
THROUGHPUT_TARGET = 2.0
APPEND_BATCH = 500


@dataclass
class PagedResult:
    backend: str
    chunks: int
    budget: int
    store_cold: Timing = field(default_factory=Timing)
    memory_cold: Timing = field(default_factory=Timing)
    store_append: Timing = field(default_factory=Timing)
    memory_append: Timing = field(default_factory=Timing)
    rows_read: int = 0
    full_load: float = 0.0
    """One ``get_current_state`` of the thread (s): what every build read before."""

    @property
    def cold_ratio(self) -> float:
        return self.store_cold.median / self.memory_cold.median

    @property
    def append_ratio(self) -> float:
        return self.store_append.median / self.memory_append.median


def _same(store: ContextBuildResult, memory: ContextBuildResult, what: str) -> None:
    if (
        store.messages != memory.messages
        or store.token_count != memory.token_count
        or store.excluded_chunk_ids != memory.excluded_chunk_ids
    ):
        raise AssertionError(f"{what}: the store build differs from the in-memory build")


def run_paged(
    url: str,
    backend: str,
    state: MemoryState,
    *,
    sizes: tuple[int, ...],
    budget: int,
    repeats: int,
    appends: int,
) -> tuple[list[PagedResult], list[float]]:
    """Grow one thread to each of ``sizes`` (timing every 10,000 appended chunks) and,
    at each size, time cold builds and rebuilds after an append against in-memory ones.

    Returns the results per size and the seconds each 10,000 appended chunks took.
    """
    from memctx.store import CONTEXT_BUILT, MemoryStore

    tokenizer = create_tokenizer(MODEL)
    items = list(state.chunks)
    found: list[PagedResult] = []
    per_10k: list[float] = []
    fresh = FreshChunks(load_corpus(), prefix=f"paged-{backend}-")
    order: list[str] = []  # the ids of the thread's chunks, in order
    filled = 0
    with MemoryStore.open(url) as store:
        store.create_thread(THREAD)
    for size in sizes:
        with MemoryStore.open(url) as store:
            while filled < size:
                block = items[filled : min(size, filled + 10_000)]
                began = time.perf_counter()
                for start in range(0, len(block), APPEND_BATCH):
                    store.append(THREAD, *block[start : start + APPEND_BATCH])
                per_10k.append(time.perf_counter() - began)
                order += [c.id for c in block]
                filled += len(block)
            store.build(THREAD, budget, tokenizer=tokenizer)  # stores the counts it measured
        result = PagedResult(backend, size, budget)
        with MemoryStore.open(url) as store:
            elapsed, loaded = timed_call(lambda: store.get_current_state(THREAD))
        result.full_load = elapsed
        if [c.id for c in loaded.chunks] != order:
            raise AssertionError(f"{backend}: the stored thread is not the generated one")
        for _ in range(repeats):
            with MemoryStore.open(url) as store:
                copy, builder = fresh_copy(loaded), create_builder(tokenizer)
                elapsed, memory = timed_call(partial(builder.build, copy, budget))
                result.memory_cold.runs.append(elapsed)
                elapsed, paged = timed_call(
                    partial(store.build, THREAD, budget, tokenizer=tokenizer)
                )
                result.store_cold.runs.append(elapsed)
                _same(paged, memory, f"{backend} cold")
                event = store.events(THREAD, CONTEXT_BUILT)[-1]
                result.rows_read = event.payload["chunks_read"]
                for _ in range(appends):
                    chunk = fresh.next()
                    # The store gets an equal chunk of its own: its rebuild may take the
                    # chunk it was given, and shares nothing with the in-memory build.
                    store.append(THREAD, chunk_from_dict(chunk_to_dict(chunk)))
                    order.append(chunk.id)
                    copy = copy.append(chunk)
                    elapsed, memory = timed_call(partial(builder.build, copy, budget))
                    result.memory_append.runs.append(elapsed)
                    elapsed, paged = timed_call(
                        partial(store.build, THREAD, budget, tokenizer=tokenizer)
                    )
                    result.store_append.runs.append(elapsed)
                    _same(paged, memory, f"{backend} append")
                loaded = copy
        found.append(result)
    return found, per_10k


@dataclass
class BackendRun:
    backend: str
    results: list[PagedResult]
    per_10k: list[float]
    """Seconds each 10,000 appended chunks took, in order (batches of APPEND_BATCH)."""


def run_all(
    sizes: tuple[int, ...],
    *,
    budget: int = 8_000,
    postgres: bool = True,
    repeats: int = 3,
    appends: int = 5,
) -> list[BackendRun]:
    """SQLite, then PostgreSQL when a server can be started (a fresh schema)."""
    state = generate(max(sizes), load_corpus())
    options = {"sizes": sizes, "budget": budget, "repeats": repeats, "appends": appends}
    found = []
    with tempfile.TemporaryDirectory(prefix="memctx-paged-") as tmp:
        url = f"sqlite:///{Path(tmp) / 'paged.db'}"
        found.append(BackendRun("SQLite", *run_paged(url, "SQLite", state, **options)))  # type: ignore[arg-type]
    if postgres:
        with postgres_databases() as new_database:
            if new_database is not None:
                run = run_paged(new_database(), "PostgreSQL", state, **options)  # type: ignore[arg-type]
                found.append(BackendRun("PostgreSQL", *run))
    return found


def section(runs: list[BackendRun]) -> list[str]:
    """The markdown tables of the results."""
    if not runs:
        return ["Not run."]
    first = runs[0].results[0]
    lines = [
        f"Generated chunks in one thread, budget {first.budget:,} ({MODEL}). cold = a newly "
        "opened store's `build` after an earlier build stored the counts it measured, "
        "against a fresh builder building a fresh copy of the same state; append = one "
        "chunk appended, then the same store builds again, against the in-memory "
        "incremental rebuild. Medians.",
        "",
        "| backend | chunks | get_current_state s | rows read | store cold ms | memory cold ms "
        f"| cold ratio (≤ {COLD_TARGET:g}×) | store append ms | memory append ms "
        f"| append ratio (≤ {APPEND_TARGET:g}×) |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for run in runs:
        for r in run.results:
            cold = "met" if r.cold_ratio <= COLD_TARGET else "**NOT MET**"
            append = "met" if r.append_ratio <= APPEND_TARGET else "**NOT MET**"
            lines.append(
                f"| {r.backend} | {r.chunks:,} | {r.full_load:.2f} | {r.rows_read:,} "
                f"| {r.store_cold.median * 1e3:.1f} | {r.memory_cold.median * 1e3:.1f} "
                f"| {r.cold_ratio:.2f}× {cold} | {r.store_append.median * 1e3:.2f} "
                f"| {r.memory_append.median * 1e3:.2f} | {r.append_ratio:.2f}× {append} |"
            )
    lines += [
        "",
        f"Appending, in batches of {APPEND_BATCH} chunks: seconds per 10,000 chunks as the "
        "thread grows (a fresh database), and the last 10,000 over the first "
        f"(≤ {THROUGHPUT_TARGET:g}×).",
        "",
    ]
    blocks = max(len(run.per_10k) for run in runs)
    header = " | ".join(f"{(i + 1) * 10}k" for i in range(blocks))
    lines += [
        f"| backend | {header} | last / first |",
        "|---|" + "---:|" * (blocks + 1),
    ]
    for run in runs:
        times = " | ".join(f"{t:.2f}" for t in run.per_10k)
        ratio = run.per_10k[-1] / run.per_10k[0]
        status = "met" if ratio <= THROUGHPUT_TARGET else "**NOT MET**"
        lines.append(f"| {run.backend} | {times} | {ratio:.2f}× {status} |")
    if len(runs) == 1:
        lines += ["", "PostgreSQL not run (`--no-postgres`, or no server binaries found)."]
    return lines


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.store_paged")
    parser.add_argument(
        "--chunks",
        default="50000,100000",
        help="thread sizes, comma-separated (one thread grows through them)",
    )
    parser.add_argument("--budget", type=int, default=8_000)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--no-postgres", action="store_true")
    args = parser.parse_args(argv)
    sizes = tuple(sorted(int(n) for n in args.chunks.split(",")))
    runs = run_all(sizes, budget=args.budget, postgres=not args.no_postgres, repeats=args.repeats)
    print("\n".join(section(runs)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
