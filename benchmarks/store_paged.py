"""``store.build`` on a long thread against the in-memory build of the same state.

    uv run --group bench python -m benchmarks.store_paged     # 100k chunks, SQLite + PostgreSQL
    uv run --group bench python -m benchmarks.store_paged --chunks 20000 --no-postgres

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
import contextlib
import sys
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import TypeVar

from benchmarks.timing import Timing, timed_call
from benchmarks.workloads import FreshChunks, fresh_copy, generate, load_corpus
from memctx import ContextBuildResult, MemoryState, create_builder, create_tokenizer

T = TypeVar("T")
THREAD = "paged"
MODEL = "gpt-4o"
COLD_TARGET = 5.0
APPEND_TARGET = 2.0


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
    url: str, backend: str, state: MemoryState, *, budget: int, repeats: int, appends: int
) -> PagedResult:
    """Fill a thread with ``state`` and time cold builds and rebuilds after an append."""
    from memctx.store import CONTEXT_BUILT, MemoryStore

    tokenizer = create_tokenizer(MODEL)
    result = PagedResult(backend, len(state), budget)
    with MemoryStore.open(url) as store:
        store.create_thread(THREAD)
        items = list(state.chunks)
        for start in range(0, len(items), 2_000):
            store.append(THREAD, *items[start : start + 2_000])
        store.build(THREAD, budget, tokenizer=tokenizer)  # stores the counts it measured
    fresh = FreshChunks(load_corpus(), prefix=f"paged-{backend}-")
    for _ in range(repeats):
        with MemoryStore.open(url) as store:
            elapsed, loaded = timed_call(lambda: store.get_current_state(THREAD))
            result.full_load = elapsed
            copy, builder = fresh_copy(loaded), create_builder(tokenizer)
            elapsed, memory = timed_call(partial(builder.build, copy, budget))
            result.memory_cold.runs.append(elapsed)
            elapsed, paged = timed_call(partial(store.build, THREAD, budget, tokenizer=tokenizer))
            result.store_cold.runs.append(elapsed)
            _same(paged, memory, f"{backend} cold")
            result.rows_read = store.events(THREAD, CONTEXT_BUILT)[-1].payload["chunks_read"]
            for _ in range(appends):
                chunk = fresh.next()
                store.append(THREAD, chunk)
                copy = copy.append(chunk)
                elapsed, memory = timed_call(partial(builder.build, copy, budget))
                result.memory_append.runs.append(elapsed)
                elapsed, paged = timed_call(
                    partial(store.build, THREAD, budget, tokenizer=tokenizer)
                )
                result.store_append.runs.append(elapsed)
                _same(paged, memory, f"{backend} append")
    return result


@contextlib.contextmanager
def postgres_url() -> Iterator[str | None]:
    """A throwaway PostgreSQL database, started as the store tests start one; or None."""
    tests = Path(__file__).resolve().parents[1] / "tests" / "store"
    sys.path.insert(0, str(tests))
    try:
        import conftest  # the store suite's server helpers

        bindir = conftest.find_pg_bin()
        if bindir is None:
            yield None
            return
        try:
            server = conftest._start_server(bindir)
        except BaseException as exc:  # pytest.skip is a BaseException
            print(f"PostgreSQL not started: {exc}", file=sys.stderr)
            yield None
            return
        try:
            yield server.new_database()
        finally:
            server.close()
    finally:
        sys.path.remove(str(tests))


def run_all(
    chunks: int, *, budget: int = 8_000, postgres: bool = True, repeats: int = 3, appends: int = 5
) -> list[PagedResult]:
    """SQLite, then PostgreSQL when a server can be started."""
    state = generate(chunks, load_corpus())
    found = []
    with tempfile.TemporaryDirectory(prefix="memctx-paged-") as tmp:
        url = f"sqlite:///{Path(tmp) / 'paged.db'}"
        found.append(
            run_paged(url, "SQLite", state, budget=budget, repeats=repeats, appends=appends)
        )
    if postgres:
        with postgres_url() as pg_url:
            if pg_url is not None:
                found.append(
                    run_paged(
                        pg_url, "PostgreSQL", state, budget=budget, repeats=repeats, appends=appends
                    )
                )
    return found


def section(results: list[PagedResult]) -> list[str]:
    """The markdown table of the results."""
    if not results:
        return ["Not run."]
    first = results[0]
    lines = [
        f"{first.chunks:,} generated chunks in one thread, budget {first.budget:,} "
        f"({MODEL}). cold = a newly opened store's `build` after an earlier build stored "
        "the counts it measured, against a fresh builder building a fresh copy of the same "
        "state; append = one chunk appended, then the same store builds again, against the "
        "in-memory incremental rebuild. Medians.",
        "",
        "| backend | get_current_state s | rows read | store cold ms | memory cold ms "
        f"| ratio (≤ {COLD_TARGET:g}×) | store append ms | memory append ms "
        f"| ratio (≤ {APPEND_TARGET:g}×) |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for r in results:
        cold = "met" if r.cold_ratio <= COLD_TARGET else "**NOT MET**"
        append = "met" if r.append_ratio <= APPEND_TARGET else "**NOT MET**"
        lines.append(
            f"| {r.backend} | {r.full_load:.2f} | {r.rows_read:,} "
            f"| {r.store_cold.median * 1e3:.1f} | {r.memory_cold.median * 1e3:.1f} "
            f"| {r.cold_ratio:.2f}× {cold} | {r.store_append.median * 1e3:.2f} "
            f"| {r.memory_append.median * 1e3:.2f} | {r.append_ratio:.2f}× {append} |"
        )
    if len(results) == 1:
        lines += ["", "PostgreSQL not run (`--no-postgres`, or no server binaries found)."]
    return lines


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.store_paged")
    parser.add_argument("--chunks", type=int, default=100_000)
    parser.add_argument("--budget", type=int, default=8_000)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--no-postgres", action="store_true")
    args = parser.parse_args(argv)
    results = run_all(
        args.chunks, budget=args.budget, postgres=not args.no_postgres, repeats=args.repeats
    )
    print("\n".join(section(results)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
