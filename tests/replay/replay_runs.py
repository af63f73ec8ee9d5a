"""What the replay tests build on: requests cut into blocks, recorded agent runs, and
small policies (imported by the tests; the fixtures are in ``conftest.py``)."""

from __future__ import annotations

import datetime as dt
from typing import Any

import attrs

from memctx import (
    ContextBuildResult,
    MemoryState,
    chunks,
    create_builder,
    create_tokenizer,
)
from memctx.compaction import ExtractiveSummarizer, compact
from memctx.compress import TrimToolOutputs, compress
from memctx.replay._blocks import Block

T0 = dt.datetime(2026, 3, 1, 9, 0, tzinfo=dt.UTC)


def request(*parts: tuple[str, int] | tuple[str, int, str]) -> list[Block]:
    """A request as the cache sees it, from ``(label, tokens[, mark])`` per block: the key
    of a prefix is its labels joined, its end the tokens summed."""
    out: list[Block] = []
    labels: list[str] = []
    end = 0
    for part in parts:
        label, tokens = part[0], part[1]
        labels.append(label)
        end += tokens
        out.append(Block("|".join(labels), end, part[2] if len(part) == 3 else None))
    return out


def minutes(n: float) -> dt.datetime:
    return T0 + dt.timedelta(minutes=n)


def agent_run(turns: int, *, output_lines: int = 30, gap_seconds: float = 10.0) -> MemoryState:
    """A system prompt and a task, then ``turns`` of a remark, a call and its output,
    one chunk every ``gap_seconds``."""
    made = [
        chunks.system("You are a careful coding agent. " * 40, id="sys"),
        chunks.user("Fix the failing retry test in the scheduler.", id="task", pinned=True),
    ]
    for n in range(turns):
        made.append(chunks.assistant(f"Step {n}: looking further.", id=f"say{n}"))
        made.append(chunks.tool_call("sh", {"cmd": f"run {n}"}, call_id=f"c{n}", id=f"call{n}"))
        output = "\n".join(f"line {k} of output {n}" for k in range(output_lines))
        made.append(chunks.tool_result("sh", output, call_id=f"c{n}", id=f"out{n}"))
    return MemoryState(
        [
            attrs.evolve(c, created_at=T0 + dt.timedelta(seconds=gap_seconds * i))
            for i, c in enumerate(made)
        ],
        thread_id="run",
    )


CLEAR = TrimToolOutputs(keep_recent=1, max_chars=40)


@attrs.frozen
class Step:
    request: Any
    result: ContextBuildResult
    state: MemoryState
    events: tuple[str, ...] = ()


@attrs.define
class BlockPolicy:
    """A small cache-aware policy: a stable build; every ``clear_every`` requests the old
    tool outputs are cleared, every ``compact_every`` the history is compacted."""

    model: str = "claude-sonnet-4-6"
    budget: int = 4_000
    clear_every: int = 3
    compact_every: int = 5
    calls: int = 0
    seen: list[int] = attrs.Factory(list)

    def step(self, state: MemoryState) -> Step:
        self.calls += 1
        self.seen.append(len(state))
        tokenizer = create_tokenizer(self.model)
        builder = create_builder(tokenizer)
        events: list[str] = []
        if self.calls % self.clear_every == 0:
            state, _ = compress(state, [CLEAR], tokenizer=tokenizer)
            events.append("clearing")
        if self.calls % self.compact_every == 0:
            state, _ = compact(state, ExtractiveSummarizer(), keep_recent_tokens=300)
            events.append("compaction")
        result = builder.build(
            state, max_tokens=self.budget, strategy="stable", provider="anthropic"
        )
        return Step(result.to_anthropic(cache=True), result, state, tuple(events))
