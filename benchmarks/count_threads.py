"""Cold builds counted on threads against cold builds counted one by one, in one process.

    uv run --group bench python -m benchmarks.count_threads
    uv run --group bench python -m benchmarks.count_threads --sizes 1000,10000 --repeats 5

Two builders, one with ``create_tokenizer("gpt-4o", threads=1)`` and one with
``threads=2``, build fresh copies of the same state (new chunk objects in a new
``MemoryState``, made untimed, as in the main suite), alternating which goes
first, so both see the same machine load. Prints the medians, the median of
the paired ratios (threads / one thread) with its quartiles, and the share of
the machine that was idle before the run (the threads gain only where a core
is free: on a busy machine the tokenizer counts on one thread).
"""

from __future__ import annotations

import argparse
import gc
import statistics
import time
from pathlib import Path

from benchmarks.workloads import fresh_copy, generate, load_corpus, load_trajectories
from memctx import ContextBuilder, MemoryState, create_builder, create_tokenizer

MODEL = "gpt-4o"


def idle_share(seconds: float = 1.0) -> float | None:
    """The share of CPU time the whole machine spent idle over ``seconds`` (Linux only)."""
    stat = Path("/proc/stat")
    if not stat.exists():
        return None

    def sample() -> tuple[int, int]:
        values = [int(v) for v in stat.read_text().split("\n", 1)[0].split()[1:]]
        return values[3], sum(values)

    idle0, total0 = sample()
    time.sleep(seconds)
    idle1, total1 = sample()
    return (idle1 - idle0) / max(1, total1 - total0)


def cold(builder: ContextBuilder, state: MemoryState, budget: int | None) -> float:
    fresh = fresh_copy(state)
    gc.collect()
    gc.disable()
    try:
        started = time.perf_counter()
        builder.build(fresh, max_tokens=budget)
        return time.perf_counter() - started
    finally:
        gc.enable()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sizes", default="traj,1000,10000,100000")
    parser.add_argument("--budgets", default="8000,32000,128000,none")
    parser.add_argument("--repeats", type=int, default=7)
    args = parser.parse_args()
    corpus = load_corpus()
    builders = {
        threads: create_builder(create_tokenizer(MODEL, threads=threads)) for threads in (1, 2)
    }
    idle = idle_share()
    print(f"idle before the run: {'unknown' if idle is None else f'{idle:.0%}'}")
    for size in args.sizes.split(","):
        if size == "traj":
            states = [(w.name, w.state) for w in load_trajectories()]
        else:
            states = [(f"gen {int(size):,}", generate(int(size), corpus))]
        for name, state in states:
            for label in args.budgets.split(","):
                budget = None if label == "none" else int(label)
                repeats = args.repeats if len(state) < 100_000 or budget else 2
                times: dict[int, list[float]] = {1: [], 2: []}
                for run in range(repeats + 1):
                    order = (1, 2) if run % 2 else (2, 1)
                    for threads in order:
                        took = cold(builders[threads], state, budget)
                        if run:  # the first is a warm-up
                            times[threads].append(took)
                ratios = sorted(t / o for o, t in zip(times[1], times[2], strict=True))
                quartiles = statistics.quantiles(ratios, n=4) if len(ratios) > 1 else ratios * 3
                print(
                    f"{name:22} {label:>7}  one thread {statistics.median(times[1]) * 1e3:9.2f} ms"
                    f"  threads {statistics.median(times[2]) * 1e3:9.2f} ms"
                    f"  ratio {statistics.median(ratios):.2f}"
                    f" ({quartiles[0]:.2f}-{quartiles[-1]:.2f})",
                    flush=True,
                )


if __name__ == "__main__":
    main()
