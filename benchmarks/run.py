"""Run the benchmark suite and write the report.

    uv run --group bench python -m benchmarks            # the full suite (~4-5 min)
    uv run --group bench python -m benchmarks --quick    # up to 10k chunks (~1 min)

Prints the markdown report and writes it to ``benchmarks/results/latest.md``
(and the raw timings to ``latest.json``).
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import platform
import statistics
import subprocess
import sys
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import tiktoken

from benchmarks import peers, report
from benchmarks.cases import (
    BuildCase,
    MemoryCase,
    budget_label,
    measure_memory,
    run_build_case,
    run_langchain,
)
from benchmarks.huge_chunk import HugeChunkResult, huge_chunk_section, run_huge_chunk
from benchmarks.store_bench import StoreResult, run_store_benchmark
from benchmarks.timing import measure
from benchmarks.workloads import (
    SEED,
    FreshChunks,
    Workload,
    fresh_copy,
    generate,
    load_corpus,
    load_trajectories,
    text_bytes,
)
from memctx import (
    ContextBuilder,
    MemoryState,
    TiktokenTokenizer,
    create_builder,
    create_tokenizer,
)

RESULTS = Path(__file__).resolve().parent / "results"
MODEL = "gpt-4o"
BUDGETS: tuple[int | None, ...] = (8_000, 32_000, 128_000, None)
SIZES = (100, 1_000, 10_000, 100_000)
QUICK_SIZES = (100, 1_000, 10_000)
LANGCHAIN_CAP_S = 30.0
"""LangChain runs at a size only when its run there is expected to take less than this."""


def size_name(size: int) -> str:
    return f"gen {size // 1000}k" if size >= 1000 else f"gen {size}"


@dataclass
class Plan:
    sizes: tuple[int, ...]
    quick: bool
    langchain: bool
    store: bool

    def repeats(self, size: int) -> int:
        if size >= 100_000:
            return 3
        if size >= 10_000:
            return 3 if self.quick else 5
        return 7 if self.quick else 15

    def langchain_repeats(self, size: int) -> int:
        if size >= 100_000:
            return 1
        if size >= 10_000:
            return 3
        return 5


def log(message: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)


def tool_output_percentiles(
    workload: Workload, encoding: tiktoken.Encoding, sample: int = 2_000
) -> tuple[int, int, int, int]:
    outputs = [c.text for c in workload.state.chunks if c.action == "tool_result"]
    step = max(1, len(outputs) // sample)
    counts = sorted(len(encoding.encode_ordinary(t)) for t in outputs[::step])
    quantiles = statistics.quantiles(counts, n=100, method="inclusive")
    return int(quantiles[49]), int(quantiles[89]), int(quantiles[98]), counts[-1]


class Suite:
    """Runs every measurement and keeps the results for the report."""

    def __init__(self, plan: Plan) -> None:
        self.plan = plan
        self.tokenizer = create_tokenizer(MODEL)
        assert isinstance(self.tokenizer, TiktokenTokenizer)
        self.builder: ContextBuilder = create_builder(self.tokenizer)
        self.cases: list[BuildCase] = []
        self.memory: list[MemoryCase] = []
        self.stats: list[report.WorkloadStats] = []
        self.store: StoreResult | None = None
        self.huge: HugeChunkResult | None = None
        self.langchain_missing = peers.langchain_available() if plan.langchain else "--no-langchain"
        if self.langchain_missing is not None and plan.langchain:
            log(f"LangChain not run: {self.langchain_missing}")
        self.corpus = load_corpus()

    def run(self) -> None:
        for workload in load_trajectories():
            self.workload(workload)
        log("one huge tool output in gen 100, 8k")
        self.huge = run_huge_chunk(self.builder, self.corpus, repeats=5)
        for size in self.plan.sizes:
            log(f"generating {size:,} chunks")
            workload = Workload(size_name(size), "generated", generate(size, self.corpus))
            self.workload(workload)
            if size == 10_000 and self.plan.store:
                log("store: 10,000 chunks on SQLite vs sqlite3")
                self.store = run_store_benchmark(workload.state.chunks, batch=100, repeats=3)
            del workload

    def workload(self, workload: Workload) -> None:
        size = workload.size
        fresh = FreshChunks(self.corpus, prefix=f"inc-{workload.name}-")
        messages: list[Any] | None = None
        for budget in BUDGETS:
            log(f"{workload.name}: budget {budget_label(budget)}")
            case = run_build_case(
                self.builder, self.tokenizer, workload, budget, fresh,
                repeats=self.plan.repeats(size), cold_warmup=0 if size >= 100_000 else 1,
                verify=size <= 10_000,
            )  # fmt: skip
            self.cases.append(case)
            case.langchain_note = self.langchain_skip_reason(workload, budget)
            if case.langchain_note is None:
                log(f"{workload.name}: budget {budget_label(budget)}: LangChain")
                if messages is None:
                    messages = peers.to_langchain(self.builder, fresh_copy(workload.state))
                run_langchain(
                    case, messages, self.tokenizer,
                    repeats=self.plan.langchain_repeats(size), warmup=0 if size >= 10_000 else 1,
                )  # fmt: skip
        self.stats.append(self.workload_stats(workload))
        self.memory_cases(workload)

    def langchain_skip_reason(self, workload: Workload, budget: int | None) -> str | None:
        """Why LangChain is not run here, or None.

        At 100k chunks it runs only if the 10k run, scaled linearly, stays under the cap.
        """
        if self.langchain_missing is not None:
            return "not run"
        if workload.size < 100_000:
            return None
        smaller = [
            c
            for c in self.cases
            if c.kind == "generated" and c.budget == budget and c.langchain is not None
        ]
        if not smaller:
            return "skipped"
        base = max(smaller, key=lambda c: c.chunks)
        assert base.langchain is not None
        estimate = base.langchain.median * workload.size / base.chunks
        if estimate > LANGCHAIN_CAP_S:
            return f"skipped (est. {estimate:.0f} s > {LANGCHAIN_CAP_S:.0f} s cap)"
        return None

    def workload_stats(self, workload: Workload) -> report.WorkloadStats:
        everything = next(c for c in self.cases if c.workload == workload.name and c.budget is None)
        percentiles = None
        if workload.kind == "generated":
            percentiles = tool_output_percentiles(workload, self.tokenizer.encoding)
        chunk_list = list(workload.state.chunks)
        construct = measure(
            MemoryState, lambda: chunk_list, repeats=self.plan.repeats(workload.size)
        )
        return report.WorkloadStats(
            workload.name, workload.size, text_bytes(workload.state), everything.tokens,
            percentiles, construct.median,
        )  # fmt: skip

    def memory_cases(self, workload: Workload) -> None:
        if workload.kind == "trajectory":
            budgets: tuple[int | None, ...] = (None,)
        elif workload.size >= 100_000:
            budgets = (8_000,)
        elif workload.size >= 1_000:
            budgets = (8_000, None)
        else:
            return
        size_bytes = next(s.text_bytes for s in self.stats if s.name == workload.name)
        for budget in budgets:
            log(f"{workload.name}: memory, budget {budget_label(budget)}")
            peak = measure_memory(self.builder, workload, budget)
            self.memory.append(MemoryCase(workload.name, workload.size, budget, size_bytes, peak))


def git_revision() -> str:
    try:
        rev = subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True, check=True
        ).stdout.strip()
        dirty = subprocess.run(
            ["git", "status", "--porcelain", "--", "src", "renderers"],
            capture_output=True, text=True, check=True,
        ).stdout.strip()  # fmt: skip
    except (OSError, subprocess.CalledProcessError):
        return "unknown"
    return rev + (" (src modified)" if dirty else "")


def render(suite: Suite, started: float) -> str:
    plan = suite.plan
    cases = suite.cases
    elapsed = time.perf_counter() - started
    names = [size_name(s) for s in plan.sizes]
    ten_k = size_name(10_000)
    hundred_k = size_name(100_000) if 100_000 in plan.sizes else None
    found = report.targets(cases, suite.memory, suite.store, ten_k, hundred_k, size_name(1_000))
    lines = [
        "# memctx benchmark results",
        "",
        f"- run: {dt.datetime.now(dt.UTC):%Y-%m-%d %H:%M} UTC, {elapsed:.0f} s"
        f"{' (--quick)' if plan.quick else ''}; commit {git_revision()}",
        f"- machine: {platform.machine()}, {os.cpu_count()} CPUs, Python "
        f"{platform.python_version()}, tiktoken {tiktoken.__version__}, langchain-core "
        f"{peers.langchain_version()}",
        f"- tokenizer: `create_tokenizer({MODEL!r})` ({suite.tokenizer.encoding_name}); the "
        "floor and LangChain's counter use its very `Encoding` object",
        f"- generated histories: seed {SEED}; times are medians of repeated runs "
        "(trajectories and ≤1k chunks: 15, 10k: 5, 100k: 3; LangChain: 5 / 3 / 1)",
        "",
        "## Targets",
        "",
        *report.targets_section(found),
        "",
        "## Build: memctx against the floor and LangChain",
        "",
        "floor = `encode_ordinary` of exactly the returned message contents, once. "
        "cold = fresh chunk objects and a fresh state, made untimed (nothing memoised; "
        "`MemoryState(chunks)` itself is timed under Scaling); warm = the same state built "
        "again (memctx hands back the result of that identical build); incr = one chunk "
        "appended with `state.append` and the new state built (both timed; the fast path "
        "from the last build). "
        'LC = `trim_messages(strategy="last")` with an exact cookbook counter on one '
        "message per chunk; LC/cold and LC/warm are how many times faster memctx is. "
        "`chunks/msgs` = chunks included / messages returned by memctx. ✗ marks "
        "cold/floor above 1.5×.",
        "",
        *report.build_section(cases),
        "",
        "## Scaling (generated histories)",
        "",
        *report.scaling_section(cases, suite.stats, names, BUDGETS),
        "",
        "## Peak memory of a cold build (tracemalloc)",
        "",
        "Peak of Python allocations traced during the build, including what the build keeps "
        "(memoised segments, the messages); allocations inside tiktoken's and lxml's native "
        "code are not traced. Text size = UTF-8 bytes of every chunk's content text.",
        "",
        *report.memory_section(suite.memory),
        "",
        "## Store: SQLite, memctx.store against plain sqlite3",
        "",
        *report.store_section(suite.store),
        "",
        "## One huge chunk that cannot fit",
        "",
        *huge_chunk_section(suite.huge),
        "",
        "## Workloads",
        "",
        *report.workload_section(suite.stats),
        "",
    ]
    return "\n".join(lines)


def raw(suite: Suite) -> dict[str, Any]:
    return {
        "cases": [asdict(c) for c in suite.cases],
        "memory": [asdict(m) for m in suite.memory],
        "store": None if suite.store is None else asdict(suite.store),
        "workloads": [asdict(s) for s in suite.stats],
    }


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks", description=__doc__.split("\n")[0]
    )
    parser.add_argument("--quick", action="store_true", help="up to 10k chunks, fewer repeats")
    parser.add_argument("--no-langchain", action="store_true", help="skip trim_messages")
    parser.add_argument("--no-store", action="store_true", help="skip the store benchmark")
    parser.add_argument(
        "--output", type=Path, default=RESULTS / "latest.md", help="where to write the report"
    )
    return parser.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    plan = Plan(
        sizes=QUICK_SIZES if args.quick else SIZES,
        quick=args.quick,
        langchain=not args.no_langchain,
        store=not args.no_store,
    )
    started = time.perf_counter()
    suite = Suite(plan)
    suite.run()
    text = render(suite, started)
    args.output.parent.mkdir(parents=True, exist_ok=True)
    args.output.write_text(text, encoding="utf-8")
    args.output.with_suffix(".json").write_text(json.dumps(raw(suite), indent=1) + "\n")
    print(text)
    log(f"wrote {args.output}")
    return 0
