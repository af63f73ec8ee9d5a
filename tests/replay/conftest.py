"""Fixtures of the replay tests: the bundled model profiles, and requests cut into blocks."""

from __future__ import annotations

import datetime as dt

import attrs
import pytest

from memctx import MemoryState, chunks
from memctx.policy import ModelProfile, model_profile
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


@pytest.fixture(scope="session")
def sonnet() -> ModelProfile:
    """claude-sonnet-4-6: 1,024-token minimum, 4 marks, 20-block lookback, $3 / M input."""
    return model_profile("claude-sonnet-4-6")


@pytest.fixture(scope="session")
def gpt4o_profile() -> ModelProfile:
    """gpt-4o: automatic from 1,024 tokens in 128-token steps, cached input at 0.5x, $2.5 / M."""
    return model_profile("gpt-4o")


@pytest.fixture(scope="session")
def gemini_pro() -> ModelProfile:
    """gemini-2.5-pro: implicit from 4,096 tokens, cached input at 0.25x, $1.25 / M."""
    return model_profile("gemini-2.5-pro")


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
