"""Two commits side by side: the same builds, alternating between them, case by case.

    git worktree add /tmp/before <commit>      # and `uv sync --group bench` in it
    uv run --group bench python -m benchmarks.side_by_side /tmp/before . --output ab.md

The checkouts need not contain this file: each side runs it by path, in its
own checkout and environment.

On a shared machine two suite runs one after the other see different loads;
here each commit runs in its own process (its own checkout's ``memctx``) and
every repetition asks both for the same build, in alternating order, so both
see the same conditions and ``after/before`` is steady where absolute times
are not. The states are written once, by the *before* checkout's workload
generator, as state files both load, so both build the very same chunks.
``--after-content escape`` builds the after side in the escaping content mode
when the before side predates CDATA (the same output bytes, so the same work).

Per workload: ``MemoryState(chunks)``; per budget: cold (with the floor of
its output), warm and incremental builds, as in ``python -m benchmarks``.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

WORKLOADS = (
    "traj astropy-12907",
    "traj pydicom-1256",
    "traj sqlfluff-2419",
    "gen 100",
    "gen 1k",
    "gen 10k",
    "gen 100k",
)
SIZES = {"gen 100": 100, "gen 1k": 1_000, "gen 10k": 10_000, "gen 100k": 100_000}
BUDGETS: tuple[int | None, ...] = (8_000, 32_000, 128_000, None)
INCREMENT_TEXT_CHARS = 555


def repeats(workload: str, budget: int | None) -> int:
    """Runs per side and case: at least 7 (fewer give no useful interval), but only 2 of
    the all-fits builds of 100k chunks (7 s each)."""
    if workload == "gen 100k":
        return 2 if budget is None else 7
    return 7 if workload == "gen 10k" else 15


# -- the side processes ------------------------------------------------------------------


def dump_states(directory: Path) -> None:
    """Write every workload as a state file (run in the *before* checkout)."""
    sys.path.insert(0, os.getcwd())  # that checkout's benchmarks package
    from benchmarks.workloads import generate, load_corpus, load_trajectories
    from memctx.statefile import dumps_state

    corpus = load_corpus()
    (directory / "increment.txt").write_text(corpus[5_000 : 5_000 + INCREMENT_TEXT_CHARS])
    for workload in load_trajectories():
        (directory / f"{workload.name}.json").write_text(dumps_state(workload.state))
    for name, size in SIZES.items():
        (directory / f"{name}.json").write_text(dumps_state(generate(size, corpus)))


def serve(directory: Path) -> None:
    """Answer timing requests on stdin, one JSON line each, with this checkout's memctx."""
    import attrs

    from memctx import MemoryState, chunks, create_builder, create_tokenizer
    from memctx.statefile import loads_state

    tokenizer = create_tokenizer("gpt-4o")
    encode = tokenizer.encoding.encode_ordinary  # type: ignore[union-attr]
    content: Any = os.environ.get("MEMCTX_SIDE_CONTENT")
    builder = create_builder(tokenizer, content=content) if content else create_builder(tokenizer)
    increment = (directory / "increment.txt").read_text()
    states: dict[str, Any] = {}
    last: dict[tuple[str, int | None], Any] = {}
    appended = 0

    def fresh(state: Any) -> Any:
        return MemoryState([attrs.evolve(c) for c in state.chunks], thread_id=state.thread_id)

    def timed(run: Callable[[], Any]) -> tuple[float, Any]:
        gc.collect()
        gc.disable()
        try:
            start = time.perf_counter()
            value = run()
            return time.perf_counter() - start, value
        finally:
            gc.enable()

    for line in sys.stdin:
        request = json.loads(line)
        op, name, budget = request["op"], request.get("workload", ""), request.get("budget")
        reply: dict[str, Any] = {}
        if op == "load":
            states[name] = loads_state((directory / f"{name}.json").read_text())
        elif op == "construct":
            items = [attrs.evolve(c) for c in states[name].chunks]
            reply["seconds"], _ = timed(lambda items=items: MemoryState(items))
        elif op == "cold":
            state = fresh(states[name])
            reply["seconds"], result = timed(
                lambda s=state, b=budget: builder.build(s, max_tokens=b)
            )
            contents = [m.content for m in result.messages]
            reply["floor"], _ = timed(lambda texts=contents: [encode(c) for c in texts])
            reply["output"] = [result.token_count, len(result.included_chunk_ids)]
            last[(name, budget)] = state
        elif op == "warm":
            state = last[(name, budget)]
            reply["seconds"], _ = timed(lambda s=state, b=budget: builder.build(s, max_tokens=b))
        elif op == "incr":
            appended += 1
            chunk = chunks.thinking(increment, id=f"side-by-side-{appended}")
            state = last[(name, budget)]

            def append_and_build(state: Any = state, chunk: Any = chunk, b: Any = budget) -> Any:
                grown = state.append(chunk)
                builder.build(grown, max_tokens=b)
                return grown

            reply["seconds"], last[(name, budget)] = timed(append_and_build)
        elif op == "drop":
            states.pop(name, None)
            for key in [k for k in last if k[0] == name]:
                del last[key]
        print(json.dumps(reply), flush=True)


# -- the driver ----------------------------------------------------------------------------


class Side:
    def __init__(self, checkout: Path, directory: Path, content: str | None) -> None:
        env = dict(os.environ)
        if content:
            env["MEMCTX_SIDE_CONTENT"] = content
        command = ["uv", "run", "--group", "bench", "python", __file__]
        self.process = subprocess.Popen(
            [*command, "--serve", str(directory)],
            cwd=checkout,
            env=env,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )

    def ask(self, **request: Any) -> dict[str, Any]:
        assert self.process.stdin is not None
        assert self.process.stdout is not None
        self.process.stdin.write(json.dumps(request) + "\n")
        self.process.stdin.flush()
        reply: dict[str, Any] = json.loads(self.process.stdout.readline())
        return reply

    def close(self) -> None:
        assert self.process.stdin is not None
        self.process.stdin.close()
        self.process.wait()


def budget_label(budget: int | None) -> str:
    return "all fits" if budget is None else f"{budget // 1000}k"


BOOTSTRAP_RESAMPLES = 2_000


def ratio_interval(before: Sequence[float], after: Sequence[float]) -> tuple[float, float]:
    """A 95% bootstrap interval of the median of ``after[i] / before[i]``: the repetitions
    alternate, so the i-th runs of both sides saw the same conditions and their ratio
    is one paired sample. A case is slower than noise when the interval lies above 1."""
    ratios = [a / b for a, b in zip(after, before, strict=True)]
    draw = random.Random(0).choices  # the same interval for the same timings
    medians = sorted(
        statistics.median(draw(ratios, k=len(ratios))) for _ in range(BOOTSTRAP_RESAMPLES)
    )
    return medians[int(0.025 * BOOTSTRAP_RESAMPLES)], medians[int(0.975 * BOOTSTRAP_RESAMPLES) - 1]


def compare(
    before: Side, after: Side, log: Callable[[str], None], workloads: Sequence[str] = WORKLOADS
) -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = []
    sides = {"before": before, "after": after}

    def alternate(n: int, op: str, **request: Any) -> dict[str, list[dict[str, Any]]]:
        replies: dict[str, list[dict[str, Any]]] = {"before": [], "after": []}
        for i in range(n):
            for name in ("before", "after") if i % 2 == 0 else ("after", "before"):
                replies[name].append(sides[name].ask(op=op, **request))
        return replies

    def median(replies: list[dict[str, Any]], key: str = "seconds") -> float:
        return float(statistics.median(r[key] for r in replies))

    for workload in workloads:
        for side in sides.values():
            side.ask(op="load", workload=workload)
        built = alternate(repeats(workload, 0), "construct", workload=workload)
        rows.append(
            {
                "workload": workload,
                "budget": "-",
                "figure": "MemoryState(chunks)",
                "before": median(built["before"]),
                "after": median(built["after"]),
                "interval": _interval(built),
                "runs": len(built["after"]),
            }
        )
        for budget in BUDGETS:
            log(f"{workload}, {budget_label(budget)}")
            n = repeats(workload, budget)
            cold = alternate(n, "cold", workload=workload, budget=budget)
            warm = alternate(n, "warm", workload=workload, budget=budget)
            incr = alternate(n, "incr", workload=workload, budget=budget)
            same = cold["before"][-1]["output"] == cold["after"][-1]["output"]
            cold_ms = {k: median(v) for k, v in cold.items()}
            floor = {k: median(v, "floor") for k, v in cold.items()}
            for figure, replies in (("cold", cold), ("warm", warm), ("incr", incr)):
                row = {
                    "workload": workload,
                    "budget": budget_label(budget),
                    "figure": figure,
                    "before": median(replies["before"]),
                    "after": median(replies["after"]),
                    "interval": _interval(replies),
                    "runs": len(replies["after"]),
                    "same_output": same,
                }
                base = floor if figure == "cold" else cold_ms
                row["ratio_before"] = row["before"] / base["before"]
                row["ratio_after"] = row["after"] / base["after"]
                rows.append(row)
        for side in sides.values():
            side.ask(op="drop", workload=workload)
    return rows


def _interval(replies: dict[str, list[dict[str, Any]]]) -> tuple[float, float]:
    return ratio_interval(
        [r["seconds"] for r in replies["before"]], [r["seconds"] for r in replies["after"]]
    )


def render(rows: Sequence[dict[str, Any]], before: str, after: str) -> str:
    lines = [
        f"before: `{before}`, after: `{after}`; medians of alternating runs "
        "(15 per case, gen 10k and gen 100k: 7, its all-fits: 2). The interval is a 95% "
        "bootstrap interval of the median of the paired after/before ratios; **slower** marks "
        "a case whose interval lies above 1 (slower than the run's noise); a case of fewer than "
        f"{MIN_RUNS_FOR_VERDICT} runs gets no verdict.",
        "",
        f"{sum(_slower(row) for row in rows)} of {len(rows)} cases slower than noise.",
        "",
        "| workload | budget | figure | before ms | after ms | after/before "
        "| 95% interval | before ratio | after ratio |",
        "|---|---:|---|---:|---:|---:|---|---:|---:|",
    ]
    names = {"cold": "cold/floor", "warm": "warm/cold", "incr": "incr/cold"}
    for row in rows:
        ratio = names.get(row["figure"])
        ratios = f"{row['ratio_before']:.3f} | {row['ratio_after']:.3f}" if ratio else " | "
        mark = "" if row.get("same_output", True) else " (outputs differ)"
        low, high = row["interval"]
        interval = f"{low:.2f}–{high:.2f}" + (" **slower**" if _slower(row) else "")
        if row["runs"] < MIN_RUNS_FOR_VERDICT:
            interval = f"({row['runs']} runs: no verdict)"
        lines.append(
            f"| {row['workload']} | {row['budget']} | {row['figure']}{mark} "
            f"| {row['before'] * 1e3:.3f} | {row['after'] * 1e3:.3f} "
            f"| {row['after'] / row['before']:.2f} | {interval} | {ratios} |"
        )
    return "\n".join(lines) + "\n"


MIN_RUNS_FOR_VERDICT = 5
"""Fewer paired runs than this give no interval worth a verdict (the all-fits builds of
100k chunks: 2)."""


def _slower(row: dict[str, Any]) -> bool:
    return row["runs"] >= MIN_RUNS_FOR_VERDICT and bool(row["interval"][0] > 1.0)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.side_by_side")
    parser.add_argument("before", type=Path, nargs="?", help="checkout of the earlier commit")
    parser.add_argument("after", type=Path, nargs="?", help="checkout of the later commit")
    parser.add_argument("--output", type=Path, help="write the table here too")
    parser.add_argument("--after-content", choices=("escape", "cdata"), help="after's mode")
    parser.add_argument(
        "--quick", action="store_true", help="the trajectories and gen 100 only (~1 min)"
    )
    parser.add_argument("--serve", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--dump", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.serve:
        serve(args.serve)
        return 0
    if args.dump:
        dump_states(args.dump)
        return 0
    if args.before is None or args.after is None:
        parser.error("give the two checkouts: BEFORE AFTER")

    def log(message: str) -> None:
        print(f"[{time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)

    with tempfile.TemporaryDirectory(prefix="memctx-side-by-side-") as tmp:
        directory = Path(tmp)
        log("writing the workloads with the before checkout")
        subprocess.run(
            ["uv", "run", "--group", "bench", "python", __file__, "--dump", str(directory)],
            cwd=args.before, check=True,
        )  # fmt: skip
        before = Side(args.before, directory, None)
        after = Side(args.after, directory, args.after_content)
        try:
            rows = compare(before, after, log, WORKLOADS[:4] if args.quick else WORKLOADS)
        finally:
            before.close()
            after.close()
    text = render(rows, str(args.before), str(args.after))
    if args.output:
        args.output.write_text(text, encoding="utf-8")
    print(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
