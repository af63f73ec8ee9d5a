"""A cold ``strategy="stable"`` build against a cold ``recent`` build of the same state.

    uv run --group bench python -m benchmarks.stable_cold            # 10k and 100k chunks
    uv run --group bench python -m benchmarks.stable_cold --quick    # 10k only, fewer repeats

*Cold* is a fresh builder building a fresh copy of the state (new chunk
objects in a new ``MemoryState``, made outside the timed region), as in the
main suite. Each repetition builds ``recent`` then ``stable`` on two fresh
copies, one right after the other, so both see the same machine load; the
figure to read is their ratio (issue 26: at most 2). Medians.
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass, field
from functools import partial

from benchmarks.timing import Timing, timed_call
from benchmarks.workloads import fresh_copy, generate, load_corpus
from memctx import MemoryState, create_builder, create_tokenizer

MODEL = "gpt-4o"
TARGET = 2.0
BUDGETS = (8_000, 32_000)


@dataclass
class ColdPair:
    chunks: int
    budget: int
    recent: Timing = field(default_factory=Timing)
    stable: Timing = field(default_factory=Timing)
    sent: tuple[int, int] = (0, 0)
    """Tokens of the recent and the stable request."""

    @property
    def ratio(self) -> float:
        return self.stable.median / self.recent.median


def run_pair(state: MemoryState, budget: int, *, repeats: int, warmup: int = 1) -> ColdPair:
    """Cold recent and cold stable builds of ``state`` at ``budget``, interleaved."""
    tokenizer = create_tokenizer(MODEL)
    pair = ColdPair(len(state), budget)
    for iteration in range(warmup + repeats):
        timings = []
        for strategy, timing in (("recent", pair.recent), ("stable", pair.stable)):
            copy, builder = fresh_copy(state), create_builder(tokenizer)
            elapsed, result = timed_call(partial(builder.build, copy, budget, strategy=strategy))
            timings.append(result.token_count)
            if iteration >= warmup:
                timing.runs.append(elapsed)
            del copy, builder, result
        pair.sent = (timings[0], timings[1])
    return pair


def run_all(sizes: tuple[int, ...], *, quick: bool = False) -> list[ColdPair]:
    corpus = load_corpus()
    found = []
    for size in sizes:
        state = generate(size, corpus)
        repeats = 3 if size >= 100_000 or quick else 7
        warmup = 0 if size >= 100_000 else 1
        for budget in BUDGETS:
            found.append(run_pair(state, budget, repeats=repeats, warmup=warmup))
    return found


def section(pairs: list[ColdPair]) -> list[str]:
    """The markdown table of the pairs."""
    lines = [
        f"Generated histories, {MODEL}; a fresh builder and a fresh copy of the state per "
        "build; medians.",
        "",
        f"| chunks | budget | recent ms | stable ms | stable/recent (≤ {TARGET:g}×) "
        "| tokens recent | tokens stable |",
        "|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for p in pairs:
        status = "met" if p.ratio <= TARGET else "**NOT MET**"
        lines.append(
            f"| {p.chunks:,} | {p.budget // 1000}k | {p.recent.ms:.2f} | {p.stable.ms:.2f} "
            f"| {p.ratio:.2f}× {status} | {p.sent[0]:,} | {p.sent[1]:,} |"
        )
    return lines


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.stable_cold")
    parser.add_argument("--quick", action="store_true", help="10k chunks only, 3 repeats")
    args = parser.parse_args(argv)
    sizes = (10_000,) if args.quick else (10_000, 100_000)
    print("\n".join(section(run_all(sizes, quick=args.quick))))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
