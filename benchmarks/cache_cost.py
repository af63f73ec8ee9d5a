"""What prompt caching saves: `recent`, `stable` and LangChain's trim_messages, turn by turn.

    uv run --group bench python -m benchmarks.cache_cost [--quick]

Each run is replayed chunk by chunk; before every model call (every
assistant-role chunk, which the model is about to write) the history so far
is built at 8k and 32k tokens of gpt-4o. For each request the tokens it
shares with the previous request's start are counted exactly
(``memctx._render.prefix.shared_prefix_tokens``). Steady state is every build after
the first time the history did not fit.

Billed input, in units of full-price input tokens, per request at steady
state (the same requests for every strategy), and per token sent:
- Anthropic with ``cache_control`` on the stable prefix: a cache read costs
  0.1x, a cache write 1.25x; the shared prefix is read, the rest written.
- OpenAI: prefixes of 1,024 tokens or more are cached automatically in steps
  of 128 tokens, at 0.5x (gpt-4o's discount); the rest is full price.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from benchmarks.peers import langchain_available, langchain_trim, to_langchain
from benchmarks.workloads import generate, load_corpus, load_trajectories
from memctx import (
    ContextMessage,
    MemoryState,
    TiktokenTokenizer,
    create_builder,
    create_tokenizer,
)
from memctx._render.prefix import shared_prefix_tokens

BUDGETS = (8_000, 32_000)
STRATEGIES = ("recent", "stable", "trim_messages")
TAIL = 300
"""Messages handed to trim_messages: the newest ones, plus the system message."""


@dataclass
class Replay:
    """Per-request figures of one strategy on one run at one budget."""

    sent: list[int] = field(default_factory=list)
    shared: list[int] = field(default_factory=list)
    seconds: list[float] = field(default_factory=list)
    failures: int = 0

    def steady(self, start: int) -> tuple[list[int], list[int]]:
        return self.sent[start:], self.shared[start:]


def anthropic_billed(sent: int, shared: int) -> float:
    return 0.1 * shared + 1.25 * (sent - shared)


def openai_billed(sent: int, shared: int) -> float:
    cached = 0 if shared < 1_024 else shared - (shared - 1_024) % 128
    return 0.5 * cached + (sent - cached)


def model_calls(state: MemoryState) -> list[int]:
    """Lengths of the history just before each assistant-role chunk."""
    builder = create_builder()
    return [n for n, chunk in enumerate(state) if n and builder.render(chunk)[0] == "assistant"]


def replay_memctx(state: MemoryState, budget: int, strategy: str) -> Replay:
    tokenizer = create_tokenizer("gpt-4o")
    builder = create_builder(tokenizer)
    out = Replay()
    grown = MemoryState(thread_id="replay")
    previous: Sequence[ContextMessage] = ()
    done = 0
    for length in model_calls(state):
        grown = grown.extend(state.chunks[done:length])
        done = length
        began = time.perf_counter()
        try:
            result = builder.build(grown, max_tokens=budget, strategy=strategy)
        except Exception:  # the pinned chunks alone do not fit this budget
            out.failures += 1
            continue
        out.seconds.append(time.perf_counter() - began)
        out.sent.append(result.token_count)
        out.shared.append(shared_prefix_tokens(previous, result.messages, tokenizer))
        previous = result.messages
    return out


def replay_langchain(state: MemoryState, budget: int) -> Replay:
    tokenizer = TiktokenTokenizer("o200k_base", model="gpt-4o")
    encoding = tokenizer.encoding
    builder = create_builder(tokenizer)
    trim = langchain_trim(encoding, budget)
    messages = to_langchain(builder, state)  # one message per chunk, the same XML
    has_head = int(bool(messages) and messages[0].type == "system")
    body_before = [0]  # body messages made of the first n chunks
    for chunk in state:
        body_before.append(body_before[-1] + (builder.render(chunk)[0] != "system"))
    out = Replay()
    previous: list[dict[str, str]] = []
    roles = {"system": "system", "human": "user", "ai": "assistant"}
    for length in model_calls(state):
        began = time.perf_counter()
        # The last TAIL messages hold far more than the budget, so trimming them gives
        # what trimming the whole list gives, in a fraction of the time.
        end = body_before[length] + has_head
        window = messages[:has_head] + messages[max(has_head, end - TAIL) : end]
        kept = trim(window)
        out.seconds.append(time.perf_counter() - began)
        request = [{"role": roles[m.type], "content": str(m.content)} for m in kept]
        out.sent.append(tokenizer.count_messages(request))
        out.shared.append(shared_prefix_tokens(previous, request, tokenizer))
        previous = request
    return out


def steady_start(replay: Replay, budget: int) -> int:
    """The first request after the history first did not fit (sent near the budget)."""
    for index, sent in enumerate(replay.sent):
        if sent > 0.5 * budget:
            return index
    return len(replay.sent)


def row(name: str, budget: int, strategy: str, replay: Replay, start: int) -> dict[str, object]:
    sent, shared = replay.steady(start)
    if not sent:
        return {"run": name, "budget": budget, "strategy": strategy, "steady": 0}
    total = sum(sent)
    anthropic = sum(map(anthropic_billed, sent, shared))
    openai = sum(map(openai_billed, sent, shared))
    return {
        "run": name,
        "budget": budget,
        "strategy": strategy,
        "steady": len(sent),
        "prefix_share": sum(shared) / total,
        "used": statistics.fmean(s / budget for s in sent),
        "anthropic": anthropic / total,
        "openai": openai / total,
        "anthropic_per_request": anthropic / len(sent),
        "openai_per_request": openai / len(sent),
        "ms": 1000 * statistics.median(replay.seconds) if replay.seconds else 0.0,
        "failures": replay.failures,
    }


def run(quick: bool, log: Callable[[str], None]) -> list[dict[str, object]]:
    runs = [(w.name, w.state) for w in load_trajectories()]
    size = 2_000 if quick else 6_000  # about a third of the chunks are model calls
    runs.append((f"gen {size}", generate(size, load_corpus())))
    rows: list[dict[str, object]] = []
    for name, state in runs:
        for budget in BUDGETS:
            replays: dict[str, Replay] = {}
            for strategy in STRATEGIES:
                log(f"{name}: {budget} {strategy}")
                if strategy == "trim_messages":
                    if langchain_available() is not None:
                        continue
                    replays[strategy] = replay_langchain(state, budget)
                else:
                    replays[strategy] = replay_memctx(state, budget, strategy)
            start = steady_start(replays["recent"], budget)
            added = [row(name, budget, s, r, start) for s, r in replays.items()]
            recent = added[0]
            for r in added:
                if r["steady"] and recent["steady"]:
                    r["anthropic_vs_recent"] = _ratio(r, recent, "anthropic_per_request")
                    r["openai_vs_recent"] = _ratio(r, recent, "openai_per_request")
            rows.extend(added)
    return rows


def _ratio(r: dict[str, object], recent: dict[str, object], key: str) -> float:
    mine, theirs = r[key], recent[key]
    assert isinstance(mine, float)
    assert isinstance(theirs, float)
    return mine / theirs


def table(rows: list[dict[str, object]]) -> str:
    lines = [
        "| run | budget | strategy | steady builds | prefix share | budget used | "
        "Anthropic billed / request | vs recent | per token sent | "
        "OpenAI billed / request | vs recent | per token sent | build ms (median) |",
        "|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for r in rows:
        if not r["steady"]:
            lines.append(
                f"| {r['run']} | {r['budget']} | {r['strategy']} | 0 (always fits) |||||||||"
            )
            continue
        lines.append(
            f"| {r['run']} | {int(str(r['budget'])) // 1000}k | {r['strategy']} | {r['steady']} | "
            f"{r['prefix_share']:.1%} | {r['used']:.1%} | "
            f"{r['anthropic_per_request']:,.0f} | {r['anthropic_vs_recent']:.3f} | "
            f"{r['anthropic']:.3f} | {r['openai_per_request']:,.0f} | "
            f"{r['openai_vs_recent']:.3f} | {r['openai']:.3f} | {r['ms']:.2f} |"
        )
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.cache_cost")
    parser.add_argument("--quick", action="store_true", help="a 2,000-chunk generated run")
    args = parser.parse_args(argv)
    rows = run(args.quick, lambda line: print(line, file=sys.stderr))
    print(table(rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
