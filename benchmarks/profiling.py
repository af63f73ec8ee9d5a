"""Profile memctx builds: where the time of cold, warm and incremental builds goes.

    uv run --group bench python -m benchmarks.profiling             # cProfile + stage costs
    uv run --group bench --with pyinstrument python -m benchmarks.profiling --pyinstrument

Profiles the builds of the generated 10k and 100k histories with an 8k and an
"everything fits" budget, writes each profile to
``benchmarks/results/profile/<size>-<budget>-<mode>.txt`` (top functions by own
time and by cumulative time), and prints a per-stage cost breakdown (per chunk,
per character, per token) measured without the profiler. As in the benchmark,
the cyclic garbage collector runs before each profiled call and is off during it.
"""

from __future__ import annotations

import argparse
import cProfile
import gc
import io
import pstats
import statistics
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, TypeVar

from benchmarks.cases import budget_label
from benchmarks.timing import measure, timed
from benchmarks.workloads import FreshChunks, fresh_copy, generate, load_corpus
from memctx import (
    Chunk,
    ContextBuilder,
    MemoryState,
    TiktokenTokenizer,
    create_builder,
    create_tokenizer,
)
from memctx._units import UnitsIndex

T = TypeVar("T")
OUT = Path(__file__).resolve().parent / "results" / "profile"
BUDGETS: tuple[int | None, ...] = (8_000, None)
REBUILDS = 200
"""Warm and incremental builds at an 8k budget take well under a millisecond: profile many."""


def _stats_text(profile: cProfile.Profile, title: str, limit: int = 30) -> str:
    out = io.StringIO()
    out.write(f"# {title}\n\n## by own time (tottime)\n")
    stats = pstats.Stats(profile, stream=out)
    stats.strip_dirs().sort_stats("tottime").print_stats(limit)
    out.write("\n## by cumulative time\n")
    stats.sort_stats("cumulative").print_stats(limit)
    return out.getvalue()


class Profiler:
    """Runs one build scenario under cProfile (or pyinstrument) and saves the report."""

    def __init__(self, use_pyinstrument: bool) -> None:
        self.use_pyinstrument = use_pyinstrument
        OUT.mkdir(parents=True, exist_ok=True)

    def run(
        self,
        name: str,
        title: str,
        call: Callable[[T], object],
        prepare: Callable[[], T],
        times: int = 1,
    ) -> float:
        """Profile ``call(prepare())`` ``times`` times (``prepare`` unprofiled).

        Returns the seconds spent in ``call`` (with the profiler's overhead).
        """
        if self.use_pyinstrument:
            from pyinstrument import Profiler as Instrument

            profiler: Any = Instrument(interval=0.0005)
            start, stop = profiler.start, profiler.stop
        else:
            profiler = cProfile.Profile()
            start, stop = profiler.enable, profiler.disable
        elapsed = 0.0
        for _ in range(times):
            argument = prepare()
            gc.collect()
            gc.disable()  # as in the benchmark: no collection lands in a profiled call
            try:
                began = time.perf_counter()
                start()
                call(argument)
                stop()
                elapsed += time.perf_counter() - began
            finally:
                gc.enable()
        if self.use_pyinstrument:
            text = profiler.output_text(unicode=True, color=False, show_all=False)
            (OUT / f"{name}.pyinstrument.txt").write_text(f"# {title}\n\n{text}")
        else:
            (OUT / f"{name}.txt").write_text(_stats_text(profiler, title))
        return elapsed


def scenarios(
    profiler: Profiler, builder: ContextBuilder, state: MemoryState, corpus: str, label: str
) -> None:
    for budget in BUDGETS:
        scenario(profiler, builder, state, corpus, label, budget)


def scenario(
    profiler: Profiler,
    builder: ContextBuilder,
    state: MemoryState,
    corpus: str,
    label: str,
    budget: int | None,
) -> None:
    """Profile a cold build, warm rebuilds and incremental rebuilds at one budget."""
    tag = f"{label}-{budget_label(budget).replace(' ', '')}"
    cold_state = fresh_copy(state)
    last: list[MemoryState] = [cold_state]
    kept: list[object] = []  # results are freed between runs, not inside a profiled one

    def build(target: MemoryState) -> None:
        last[0] = target
        kept.append(builder.build(target, max_tokens=budget))

    def same_state() -> MemoryState:
        kept.clear()
        return cold_state

    what = f"{label} chunks, budget {budget_label(budget)}"
    elapsed = profiler.run(f"{tag}-cold", f"cold build, {what}", build, same_state)
    print(f"{tag}-cold: {elapsed * 1e3:.1f} ms under the profiler", file=sys.stderr)

    rebuilds = REBUILDS if budget is not None else 5
    elapsed = profiler.run(
        f"{tag}-warm", f"warm rebuild x{rebuilds}, {what}", build, same_state, rebuilds
    )
    print(f"{tag}-warm: {elapsed / rebuilds * 1e3:.2f} ms per build", file=sys.stderr)

    # The agent loop: append one chunk to the last built state, build the new state.
    fresh = FreshChunks(corpus, prefix=f"prof-{tag}-")
    states: list[MemoryState] = []  # each appended state lives until the end

    def new_chunk() -> Chunk:
        kept.clear()
        return fresh.next()

    def append_and_build(chunk: Chunk) -> None:
        states.append(last[0])
        build(last[0].append(chunk))

    elapsed = profiler.run(
        f"{tag}-incremental",
        f"incremental rebuild x{rebuilds} (append one chunk, build; both profiled), {what}",
        append_and_build,
        new_chunk,
        rebuilds,
    )
    print(f"{tag}-incremental: {elapsed / rebuilds * 1e3:.2f} ms per build", file=sys.stderr)


def _median_time(run: Callable[[Any], object], argument: Any, repeats: int = 5) -> float:
    return statistics.median(timed(run, argument) for _ in range(repeats))


def breakdown(builder: ContextBuilder, tokenizer: TiktokenTokenizer, state: MemoryState) -> None:
    """Costs of each stage of a cold "everything fits" build, measured without a profiler."""
    chunks = state.chunks
    n = len(chunks)
    texts = [c.text for c in chunks]
    chars = sum(map(len, texts))
    registry = builder.registry
    segments = [registry.render(c)[1] + "\n" for c in chunks]
    seg_chars = sum(map(len, segments))
    encode = tokenizer.encoding.encode_ordinary
    tokens = sum(len(encode(s)) for s in segments)
    joined = "".join(segments)

    def index(chunks_: tuple[Any, ...]) -> None:
        UnitsIndex().extend_to(chunks_, len(chunks_))

    rows: list[tuple[str, float, str]] = []

    def add(name: str, seconds: float) -> None:
        per = (
            f"{seconds / n * 1e6:.2f} µs/chunk, {seconds / seg_chars * 1e9:.1f} ns/char, "
            f"{seconds / tokens * 1e9:.0f} ns/token"
        )
        rows.append((name, seconds, per))

    add("units index (UnitsIndex.extend_to)", _median_time(index, chunks))
    add(
        "chunk.text (JSON dumps for JSON content)",
        _median_time(lambda cs: [c.text for c in cs], chunks),
    )
    add(
        "registry.render (lxml render_element)",
        _median_time(lambda cs: [registry.render(c) for c in cs], chunks),
    )
    add(
        "encode_ordinary per segment (count)",
        _median_time(lambda ss: [len(encode(s)) for s in ss], segments),
    )
    add(
        "encode_ordinary of the joined text (floor-like)", _median_time(lambda s: encode(s), joined)
    )
    add(
        "encode_ordinary_batch, 2 threads, per segment",
        _median_time(
            lambda ss: tokenizer.encoding.encode_ordinary_batch(ss, num_threads=2), segments
        ),
    )
    cold = measure(builder.build, lambda: fresh_copy(state), repeats=3, warmup=0)
    add("memctx cold build, all fits", cold.median)
    fresh = fresh_copy(state)
    builder.build(fresh)
    add("memctx warm build, all fits", _median_time(builder.build, fresh))
    print(
        f"\nstage costs, {n:,} chunks, {chars / 1e6:.1f} M chars of text, "
        f"{seg_chars / 1e6:.1f} M chars rendered, {tokens:,} tokens:\n"
    )
    print("| stage | ms | per unit |\n|---|---:|---|")
    for name, seconds, per in rows:
        print(f"| {name} | {seconds * 1e3:,.1f} | {per} |")


def incremental_breakdown(
    tokenizer: TiktokenTokenizer, state: MemoryState, corpus: str, budget: int = 8_000
) -> None:
    """Where an incremental build's time goes: the append, the new chunk, the build.

    Times, as the benchmark does (a full garbage collection first, so CPU
    caches are cold), an append followed by a build; rendering and counting
    a new chunk alone (what the build does for it); and the append alone.
    What is left is the rest of the build. The same three again straight
    after the previous step (caches warm) for comparison.
    """
    builder = create_builder(tokenizer)
    fresh = FreshChunks(corpus, "breakdown-")
    current = fresh_copy(state)
    builder.build(current, max_tokens=budget)
    times: dict[tuple[str, bool], list[float]] = {}

    def timed_step(name: str, cold: bool, run: Callable[..., T], *args: Any) -> T:
        if cold:
            gc.collect()
        gc.disable()
        try:
            start = time.perf_counter()
            value = run(*args)
            times.setdefault((name, cold), []).append(time.perf_counter() - start)
            return value
        finally:
            gc.enable()

    def render_and_count(chunk: Chunk) -> int:
        return tokenizer.count(builder.render(chunk)[1])

    def append_and_build(previous: MemoryState, chunk: Chunk) -> MemoryState:
        grown = previous.append(chunk)
        builder.build(grown, max_tokens=budget)
        return grown

    for number in range(120):
        cold = number % 2 == 0
        mode = number // 2 % 3
        chunk = fresh.next()
        if mode == 0:
            current = timed_step("append + build", cold, append_and_build, current, chunk)
        elif mode == 1:
            timed_step("render + count the new chunk", cold, render_and_count, chunk)
            current = current.append(chunk)
            builder.build(current, max_tokens=budget)
        else:
            current = timed_step("append alone", cold, current.append, chunk)
            builder.build(current, max_tokens=budget)
    reference = measure(
        lambda s: builder.build(s, max_tokens=budget), lambda: fresh_copy(state), repeats=5
    )
    whole = {cold: statistics.median(times["append + build", cold]) for cold in (True, False)}
    new = {
        cold: statistics.median(times["render + count the new chunk", cold])
        for cold in (True, False)
    }
    append = {cold: statistics.median(times["append alone", cold]) for cold in (True, False)}
    rows = [
        ("append + build (the benchmark's incr)", whole),
        ("state.append", append),
        ("render + count the new chunk", new),
        ("the rest of the build", {c: whole[c] - new[c] - append[c] for c in whole}),
    ]
    print(f"\nincremental build, {len(state):,} chunks, {budget_label(budget)} budget ", end="")
    print(f"(cold build: {reference.median * 1e3:.2f} ms):\n")
    print("| step | caches cold ms | % of cold build | caches warm ms |\n|---|---:|---:|---:|")
    for name, values in rows:
        share = values[True] / reference.median
        print(f"| {name} | {values[True] * 1e3:.3f} | {share:.1%} | {values[False] * 1e3:.3f} |")


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.profiling")
    parser.add_argument("--pyinstrument", action="store_true", help="use pyinstrument")
    parser.add_argument("--sizes", type=int, nargs="*", default=[10_000, 100_000])
    parser.add_argument("--no-breakdown", action="store_true")
    args = parser.parse_args(argv)
    tokenizer = create_tokenizer("gpt-4o")
    assert isinstance(tokenizer, TiktokenTokenizer)
    builder = create_builder(tokenizer)
    corpus = load_corpus()
    profiler = Profiler(args.pyinstrument)
    for size in args.sizes:
        state = generate(size, corpus)
        label = f"{size // 1000}k"
        scenarios(profiler, builder, state, corpus, label)
        if size == 10_000 and not args.no_breakdown:
            breakdown(builder, tokenizer, state)
            incremental_breakdown(tokenizer, state, corpus)
    print(f"\nprofiles in {OUT}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
