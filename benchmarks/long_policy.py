"""Long runs under a budget: raw, recent, stable, rolling masking and ContextPolicy, priced.

    uv run python -m benchmarks.long_policy [--size 2000] [--quick] [--policy-only]

Two runs: the three bundled trajectories concatenated into one (each later task a new
user turn; 20 s between chunks) and a generated run of ``--size`` chunks
(``benchmarks.workloads.generate``). Each is replayed with :func:`memctx.replay.replay`
(the request before each assistant turn, priced by the model's cache rules) with
``claude-sonnet-4-6`` for Anthropic pricing and ``gpt-4.1`` for OpenAI pricing, the
budget forced to 8k and 32k. ``raw`` sends the untrimmed history (the anchor: "send
everything, let the cache work"); ``recent`` and ``stable`` are the builder's
strategies; ``rolling`` trims old tool outputs before every request (the old
long-running example); ``policy`` is :class:`memctx.policy.ContextPolicy` with the
settings of :data:`POLICIES`.

Beyond the replay's figures, each policy run is stepped again to check every request:
the task in it, and the file paths, commands and error lines of every earlier tool call
present verbatim (in kept turns or the summary). A command is its first line, whole up to
150 characters: the rest of a multi-line command is a here-document's body (the file it
writes is counted among the paths) or an inline script, data rather than the command.
Finally the longest stall of the event loop during ``astep`` on a 200k-token history is
measured with a task ticking every millisecond.
"""

from __future__ import annotations

import argparse
import asyncio
import datetime as dt
import html
import json
import statistics
import sys
import time
from collections.abc import Callable, Iterable, Mapping
from typing import Any

import attrs

from benchmarks.workloads import generate, load_corpus, load_trajectories
from memctx import Chunk, ChunkType, MemoryState, create_builder
from memctx._build.builder import counts_of
from memctx.compaction import CompactionPolicy
from memctx.compress._call_facts import call_outcome, files_of_call
from memctx.policy import ClearToolUses, ContextPolicy
from memctx.replay import replay
from memctx.replay._run import request_points

BUDGETS = (8_000, 32_000)
MODELS = {"Anthropic": "claude-sonnet-4-6", "OpenAI": "gpt-4.1"}
BASELINES = ("recent", "stable", "rolling")
COMMAND_CHARS = 150
"""A command's first line is checked whole up to this many characters (the summary keeps
up to 160)."""
CHANGES = frozenset({"cleared", "compacted", "trimmed"})
"""The step events that change the state (and may break the cache once)."""
POLICIES: dict[int, dict[str, Any]] = {
    8_000: {
        "clear_tool_uses": ClearToolUses(keep_recent=1),
        "compaction": CompactionPolicy(trigger=0.8, keep_recent=0.02),
    },
    32_000: {
        "clear_tool_uses": ClearToolUses(keep_recent=2),
        "compaction": CompactionPolicy(trigger=0.7, keep_recent=0.02),
    },
}
"""The policy's settings per budget: small kept tails, so that after each compaction
many requests fit before the next one (the low-water mark is the stable front -- system,
tasks, summaries -- plus that tail)."""


def concatenated_trajectories() -> MemoryState:
    """The three trajectories as one run: one system prompt, then each task in turn (20 s
    apart from a fixed start: the importer stamps the chunks with the time it ran, and the
    summaries' ids, which are sent, name their compaction's time)."""
    made: list[Chunk] = []
    for index, workload in enumerate(load_trajectories()):
        for chunk in workload.state:
            if index and chunk.type is ChunkType.SYSTEM:
                continue
            made.append(attrs.evolve(chunk, id=f"t{index}-{chunk.id}"))
    start = dt.datetime(2026, 1, 1, tzinfo=dt.UTC)  # a fixed time: the same run each time
    return MemoryState(
        (
            attrs.evolve(c, created_at=start + dt.timedelta(seconds=20 * i))
            for i, c in enumerate(made)
        ),
        thread_id="trajectories",
    )


def policy_for(model: str, budget: int) -> ContextPolicy:
    return ContextPolicy(model, max_tokens=budget, **POLICIES[budget])


# -- what a request must still name ------------------------------------------------------


@attrs.frozen
class Facts:
    """What the tool calls before a point named: paths, commands, error lines."""

    paths: frozenset[str]
    commands: frozenset[str]
    errors: frozenset[str]


def facts_before(run: MemoryState, point: int) -> Facts:
    chunks = run.chunks[:point]
    results: dict[str, list[Chunk]] = {}
    for chunk in chunks:
        if chunk.type is ChunkType.ENVIRONMENT and chunk.metadata.call_id:
            results.setdefault(chunk.metadata.call_id, []).append(chunk)
    paths: set[str] = set()
    commands: set[str] = set()
    errors: set[str] = set()
    for chunk in chunks:
        if chunk.action != "tool_call":
            continue
        read, changed = files_of_call(chunk)
        paths.update(normal(p) for p in read + changed)
        content = chunk.content
        command = content.get("command") if isinstance(content, Mapping) else None
        if isinstance(command, str) and command.strip():
            commands.add(normal(command.strip().splitlines()[0])[:COMMAND_CHARS])
        _, error = call_outcome(results.get(chunk.metadata.call_id or "", []))
        if error:
            errors.add(normal(error.removesuffix("…"))[:100])
    return Facts(frozenset(paths), frozenset(commands), frozenset(errors))


def request_text(request: Any) -> str:
    """Every text of a provider request, XML-unescaped."""
    parts: list[str] = []

    def walk(value: Any) -> None:
        if isinstance(value, str):
            parts.append(value)
        elif isinstance(value, dict):
            for item in value.values():
                walk(item)
        elif isinstance(value, list | tuple):
            for item in value:
                walk(item)

    walk(request)
    return normal(html.unescape("\n".join(parts)))


def normal(text: str) -> str:
    """``text`` with JSON string escapes undone and white space collapsed (a command inside
    a call's JSON arguments, an error line inside an output, match their plain forms)."""
    return " ".join(text.replace('\\"', '"').replace("\\n", " ").replace("\\\\", "\\").split())


@attrs.define
class Retention:
    present: dict[str, int] = attrs.Factory(lambda: {"paths": 0, "commands": 0, "errors": 0})
    asked: dict[str, int] = attrs.Factory(lambda: {"paths": 0, "commands": 0, "errors": 0})
    task_missing: int = 0
    requests: int = 0

    def share(self, kind: str) -> float:
        return self.present[kind] / self.asked[kind] if self.asked[kind] else 1.0


def retention(run: MemoryState, make: Callable[[], ContextPolicy]) -> Retention:
    """Step a fresh policy through ``run`` and check what each request still names."""
    policy = make()
    builder = create_builder(policy.tokenizer)
    task = next(c for c in run if c.type is ChunkType.AGENT and c.role == "user")
    task_line = task.text.strip().splitlines()[0][:60]
    out = Retention()
    state = MemoryState(thread_id=run.thread_id)
    done = 0
    for point in request_points(run, builder):
        state = state.extend(run.chunks[done:point])
        done = point
        step = policy.step(state, now=run.chunks[point - 1].created_at)
        state = step.state
        text = request_text(step.request)
        facts = facts_before(run, point)
        out.requests += 1
        out.task_missing += task_line not in text
        for kind, items in (
            ("paths", facts.paths),
            ("commands", facts.commands),
            ("errors", facts.errors),
        ):
            out.asked[kind] += len(items)
            out.present[kind] += sum(item in text for item in items)
    return out


# -- the event loop during astep ---------------------------------------------------------


async def _longest_stall(policy: ContextPolicy, state: MemoryState) -> tuple[float, float]:
    stalls: list[float] = []
    running = True

    async def tick() -> None:
        last = time.perf_counter()
        while running:
            await asyncio.sleep(0.001)
            now = time.perf_counter()
            stalls.append(now - last - 0.001)
            last = now

    ticker = asyncio.create_task(tick())
    await asyncio.sleep(0.01)
    began = time.perf_counter()
    step = await policy.astep(state)
    took = time.perf_counter() - began
    running = False
    await ticker
    assert step.token_count <= policy.budget
    return max(stalls), took


def astep_stall(tokens: int = 200_000) -> dict[str, Any]:
    """The longest stall of a ticking task while ``astep`` handles a ``tokens`` history
    (cold: a fresh policy and builder), with compaction due."""
    corpus = load_corpus()
    size = 100
    while True:
        state = generate(size, corpus)
        policy = ContextPolicy("claude-sonnet-4-6", max_tokens=150_000, **POLICIES[32_000])
        counted = sum(counts_of(policy.builder).tokens(c, policy.tokenizer) for c in state)
        if counted >= tokens:
            break
        size = int(size * tokens / max(counted, 1) * 1.05) + 10
    fresh = MemoryState([attrs.evolve(c) for c in state], thread_id=state.thread_id)
    policy = ContextPolicy("claude-sonnet-4-6", max_tokens=150_000, **POLICIES[32_000])
    stall, took = asyncio.run(_longest_stall(policy, fresh))
    return {"chunks": len(state), "tokens": counted, "stall_ms": 1000 * stall, "astep_s": took}


# -- the table ---------------------------------------------------------------------------


def run_all(
    runs: Iterable[tuple[str, MemoryState]],
    log: Callable[[str], None],
    *,
    policy_only: bool = False,
) -> list[dict[str, Any]]:
    """The table's rows; ``policy_only``: Anthropic pricing, raw and the policy only (a
    quick loop while tuning the policy)."""
    rows: list[dict[str, Any]] = []
    models = {"Anthropic": MODELS["Anthropic"]} if policy_only else MODELS
    for name, run in runs:
        for pricing, model in models.items():
            log(f"{name}: {pricing} raw")
            raw = replay(run, "raw", model=model)
            rows.append(_row(name, pricing, None, "raw", raw, raw))
            for budget in BUDGETS:
                for strategy in () if policy_only else BASELINES:
                    log(f"{name}: {pricing} {budget} {strategy}")
                    report = replay(run, strategy, model=model, max_tokens=budget)
                    rows.append(_row(name, pricing, budget, strategy, report, raw))
                log(f"{name}: {pricing} {budget} policy")
                report = replay(run, policy_for(model, budget), label="policy")
                row = _row(name, pricing, budget, "policy", report, raw)
                if pricing == "Anthropic":
                    kept = retention(run, lambda m=model, b=budget: policy_for(m, b))
                    row.update(
                        paths=kept.share("paths"),
                        commands=kept.share("commands"),
                        errors=kept.share("errors"),
                        task_missing=kept.task_missing,
                    )
                rows.append(row)
    return rows


def _row(
    name: str, pricing: str, budget: int | None, strategy: str, report: Any, raw: Any
) -> dict[str, Any]:
    events = report.compactions + report.clearings
    return {
        "run": name,
        "pricing": pricing,
        "budget": budget,
        "strategy": strategy,
        "requests": len(report.requests),
        "read_share": report.cache_read_share,
        "vs_uncached": report.cost_ratio,
        "vs_raw": report.cost / raw.cost,
        "peak": report.peak_tokens,
        "violations": report.budget_violations,
        "orphans": report.orphaned_tool_calls,
        "breaks": report.cache_breaks,
        "breaks_without_event": sum(
            r.cache_break and not set(r.events) & CHANGES for r in report.requests
        ),
        "events": events,
        "mean_tokens": statistics.fmean(r.input_tokens for r in report.requests),
    }


def table(rows: list[dict[str, Any]]) -> str:
    lines = [
        "| run | pricing | budget | strategy | cache-read share | billed / uncached | "
        "billed / raw cached | mean request | peak | over budget | orphans | cache breaks | "
        "breaks outside events | events | paths kept | commands kept | errors kept | "
        "task missing |",
        "|---|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for r in rows:
        budget = "none" if r["budget"] is None else f"{r['budget'] // 1000}k"
        kept = [f"{r[k]:.0%}" if k in r else "" for k in ("paths", "commands", "errors")] + [
            str(r.get("task_missing", ""))
        ]
        lines.append(
            f"| {r['run']} | {r['pricing']} | {budget} | {r['strategy']} | {r['read_share']:.1%} | "
            f"{r['vs_uncached']:.3f} | {r['vs_raw']:.3f} | {r['mean_tokens']:,.0f} | "
            f"{r['peak']:,} | {r['violations']} | {r['orphans']} | {r['breaks']} | "
            f"{r['breaks_without_event'] if r['strategy'] == 'policy' else ''} | "
            f"{r['events']} | " + " | ".join(kept) + " |"
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.long_policy")
    parser.add_argument("--size", type=int, default=2_000, help="chunks in the generated run")
    parser.add_argument("--quick", action="store_true", help="the trajectories only, no stall")
    parser.add_argument(
        "--policy-only",
        action="store_true",
        help="Anthropic pricing, raw and the policy only (no baselines, no OpenAI)",
    )
    parser.add_argument("--json", help="also write the rows to this file")
    args = parser.parse_args(argv)
    runs = [("trajectories", concatenated_trajectories())]
    if not args.quick:
        runs.append((f"generated {args.size:,}", generate(args.size, load_corpus())))
    began = time.perf_counter()
    rows = run_all(
        runs,
        lambda line: print(
            f"[{time.perf_counter() - began:7.1f} s] {line}", file=sys.stderr, flush=True
        ),
        policy_only=args.policy_only,
    )
    print(table(rows))
    if not args.quick:
        stall = astep_stall()
        print(
            f"\nastep on {stall['chunks']:,} chunks ({stall['tokens']:,} tokens, cold): longest "
            f"event-loop stall {stall['stall_ms']:.1f} ms; the step took {stall['astep_s']:.2f} s"
        )
        rows.append({"astep": stall})
    if args.json:
        with open(args.json, "w", encoding="utf-8") as handle:
            json.dump(rows, handle, indent=1, default=str)
    return 0


if __name__ == "__main__":
    sys.exit(main())
