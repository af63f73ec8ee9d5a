"""What a long run costs under each context strategy, replayed with ``memctx.replay``.

    uv run --group bench python -m benchmarks.replay_cost [--size 2000] [--quick]

Runs: the three bundled trajectories concatenated into one run (133 model
calls; ``memctx.replay.load_run`` keeps their recorded times), and a generated
run of ``--size`` chunks (``--quick``: the trajectories only). Each is
replayed request by request (the request before each assistant turn) at 8k and
32k tokens, with ``none`` (the whole history), ``recent``, ``stable``,
``rolling`` (a TrimToolOutputs mask redone every request) and, when
``memctx.policy.ContextPolicy`` exists, ``policy`` (``memctx replay``'s
default: ClearToolUses() and compaction at 80% of the budget keeping 30%);
each request is billed with claude-sonnet-4-6's and gpt-4o's cache rules from
their model profiles.

Columns: the share of input tokens read from the cache; billed over the same
requests without a cache; billed over the untrimmed run with caching (``none``,
the anchor a user compares with); cache breaks; compactions and clearings;
the largest request; requests over the budget; orphaned tool calls.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable, Sequence
from typing import Any

from benchmarks.workloads import generate, load_corpus, trajectory_files
from memctx import MemoryState
from memctx.replay import ReplayReport, default_policy, load_run, replay

BUDGETS = (8_000, 32_000)
MODELS = ("claude-sonnet-4-6", "gpt-4o")
STRATEGIES = ("none", "recent", "stable", "rolling")


def _policy(model: str, budget: int) -> Any | None:
    import memctx.policy

    if getattr(memctx.policy, "ContextPolicy", None) is None:
        return None
    return default_policy(model, budget)


def runs(size: int, quick: bool) -> list[tuple[str, MemoryState]]:
    """The trajectories as one run, and a generated one."""
    out = [("3 trajectories", load_run(*trajectory_files()))]
    if not quick:
        out.append((f"gen {size:,}", generate(size, load_corpus())))
    return out


def rows(
    name: str, state: MemoryState, log: Callable[[str], None]
) -> list[tuple[str, str, int, str, ReplayReport, ReplayReport, float]]:
    """(run, model, budget, strategy, report, the untrimmed run's report, seconds) per row."""
    out = []
    for model in MODELS:
        for budget in BUDGETS:
            anchor: ReplayReport | None = None
            choices: list[Any] = [*STRATEGIES]
            policy = _policy(model, budget)
            if policy is not None:
                choices.append(policy)
            for choice in choices:
                label = choice if isinstance(choice, str) else "policy"
                log(f"{name}: {model} {budget:,} {label}")
                began = time.perf_counter()
                report = replay(state, choice, model=model, max_tokens=budget, label=label)
                seconds = time.perf_counter() - began
                anchor = anchor or report  # "none" comes first
                out.append((name, model, budget, label, report, anchor, seconds))
    return out


def table(found: Sequence[tuple[str, str, int, str, ReplayReport, ReplayReport, float]]) -> str:
    lines = [
        "| run | model | budget | strategy | requests | cache read | billed / uncached | "
        "billed / untrimmed cached | cache breaks | compactions | clearings | peak | "
        "over budget | orphaned | s |",
        "|---|---|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for name, model, budget, label, r, anchor, seconds in found:
        vs_anchor = r.cost / anchor.cost if anchor.cost else 0.0
        lines.append(
            f"| {name} | {model} | {budget // 1000}k | {label} | {len(r.requests)} | "
            f"{r.cache_read_share:.1%} | {r.cost_ratio:.3f} | {vs_anchor:.2f} | "
            f"{r.cache_breaks} | {r.compactions} | {r.clearings} | {r.peak_tokens:,} | "
            f"{r.budget_violations} | {r.orphaned_tool_calls} | {seconds:.1f} |"
        )
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.replay_cost")
    parser.add_argument("--size", type=int, default=2_000, help="chunks in the generated run")
    parser.add_argument("--quick", action="store_true", help="the trajectories only")
    args = parser.parse_args(argv)
    found = []
    for name, state in runs(args.size, args.quick):
        found.extend(rows(name, state, lambda line: print(line, file=sys.stderr)))
    print(table(found))
    return 0


if __name__ == "__main__":
    sys.exit(main())
