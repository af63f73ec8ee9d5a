"""What ``to_anthropic(cache=True)``'s marks are worth under Anthropic's cache rules.

    uv run --group bench python -m benchmarks.cache_marks [--quick]

``benchmarks.cache_cost`` bills the prefix a request shares with the previous
one as if all of it were read from the cache. Here the cache decides: each
run is replayed with ``strategy="stable"`` (a build before every assistant
turn, at 8k and 32k tokens of gpt-4o), each request is made by
``to_anthropic`` and sent through Anthropic's documented cache as
:mod:`memctx.replay` models it (claude-sonnet-4-6's rules):
the prefix (system, then the messages' blocks) ending at each marked block
is written when it is at least 1,024 tokens long; a request reads the
longest written prefix ending at one of its marks or at one of the 20
blocks before a mark. Billed input, in full-price tokens: reads 0.1x, writes
1.25x, the rest 1x (a block's tokens are gpt-4o's count of its text plus
its message's overhead, so the figures are relative). Mark policies compared:

- ``none``: no marks;
- ``system+last``: the system and the last message (a common fixed rule);
- ``memctx``: ``cache=True``;
- ``ideal``: the prefix shared with the previous request read, the rest
  written -- what ``benchmarks.cache_cost`` assumes.

Steady state is every request after the first one over half the budget.
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Callable
from typing import Any

from benchmarks.cache_cost import model_calls
from benchmarks.workloads import generate, load_corpus, load_trajectories
from memctx import MemoryState, create_builder, create_tokenizer
from memctx.policy import model_profile
from memctx.replay._blocks import BlockCounter, anthropic_blocks
from memctx.replay._pricing import ExplicitCache, cost

# Anthropic's documented cache (breakpoints, the 20-block lookback, the 1,024-token
# minimum, 0.1x reads and 1.25x writes) is memctx.replay's; blocks are counted with gpt-4o.
BUDGETS = (8_000, 32_000)
TOKENIZER = create_tokenizer("gpt-4o")
PROFILE = model_profile("claude-sonnet-4-6")
COUNTER = BlockCounter(TOKENIZER)


class Cache:
    def __init__(self) -> None:
        self.cache = ExplicitCache(PROFILE)

    def bill(self, body: dict[str, Any]) -> tuple[float, int, int]:
        """(billed, tokens read, tokens sent) for one request; its marks are then written."""
        blocks = anthropic_blocks(body, COUNTER)
        sent = blocks[-1].end if blocks else 0
        billing = self.cache.send(blocks, sent, None)
        billed, _ = cost(billing, PROFILE)
        return billed / PROFILE.input_price * 1e6, billing.read, sent


def _system_and_last(body: dict[str, Any]) -> dict[str, Any]:
    body = json.loads(json.dumps(body))
    if isinstance(body.get("system"), str):
        body["system"] = [{"type": "text", "text": body["system"]}]
    if body.get("system"):
        body["system"][-1]["cache_control"] = {"type": "ephemeral"}
    last = body["messages"][-1]
    if isinstance(last["content"], str):
        last["content"] = [{"type": "text", "text": last["content"]}]
    last["content"][-1]["cache_control"] = {"type": "ephemeral"}
    return body


def replay(state: MemoryState, budget: int) -> dict[str, float] | None:
    builder = create_builder(TOKENIZER)
    policies: dict[str, Callable[[Any], dict[str, Any]]] = {
        "none": lambda r: r.to_anthropic(),
        "system+last": lambda r: _system_and_last(r.to_anthropic()),
        "memctx": lambda r: r.to_anthropic(cache=True),
    }
    caches = {name: Cache() for name in policies}
    billed = dict.fromkeys([*policies, "ideal"], 0.0)
    read = sent = 0
    steady = False
    previous: list[Any] | None = None
    grown, done = MemoryState(thread_id="replay"), 0
    for length in model_calls(state):
        grown, done = grown.extend(state.chunks[done:length]), length
        try:
            result = builder.build(grown, max_tokens=budget, strategy="stable")
            bodies = {name: make(result) for name, make in policies.items()}
        except Exception:  # the pinned chunks do not fit, or nothing to send
            continue
        steady = steady or result.token_count > budget / 2
        figures = {name: caches[name].bill(body) for name, body in bodies.items()}
        plain = anthropic_blocks(bodies["none"], COUNTER)
        keys, tokens = [b.key for b in plain], [b.end for b in plain]
        shared = 0
        if previous is not None:
            old = [b.key for b in previous]
            same = next(
                (i for i, (a, b) in enumerate(zip(old, keys, strict=False)) if a != b), None
            )
            same = min(len(old), len(keys)) if same is None else same
            shared = tokens[same - 1] if same else 0
        previous = plain
        if not steady:
            continue
        for name, (paid, got, total) in figures.items():
            billed[name] += paid
            if name == "memctx":
                read, sent = read + got, sent + total
        billed["ideal"] += 0.1 * shared + 1.25 * (tokens[-1] - shared)
    if not sent:
        return None
    return {"served": read / sent, **{k: v / billed["none"] for k, v in billed.items()}}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="the trajectories only")
    args = parser.parse_args()
    runs = [(w.name, w.state) for w in load_trajectories()]
    if not args.quick:
        runs.append(("gen 2000", generate(2_000, load_corpus())))
    print("| run | budget | served from cache (memctx) | billed: system+last | memctx | ideal |")
    print("|---|---:|---:|---:|---:|---:|")
    for name, state in runs:
        for budget in BUDGETS:
            row = replay(state, budget)
            if row is None:
                print(f"| {name} | {budget:,} | (never past half the budget) | | | |")
                continue
            print(
                f"| {name} | {budget:,} | {row['served']:.0%} | {row['system+last']:.2f} "
                f"| {row['memctx']:.2f} | {row['ideal']:.2f} |"
            )
    print("\nbilled: relative to no marks (1.00 = every input token at full price)")


if __name__ == "__main__":
    main()
