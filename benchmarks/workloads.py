"""The workloads: the three real trajectories, and generated agent histories.

Generated histories come from a fixed seed. Their text is cut from a corpus
of real agent I/O (the contents of the three trajectories: shell output,
source code, prose), so tokenisation and XML escaping behave as on real
runs; only the *shape* of the history is synthetic:

- a system prompt (~800 tokens) and a user task (~300 tokens), then steps;
- each step: sometimes thinking (40%, median ~150 tokens), sometimes an
  assistant message (25%, median ~60), then a tool call with JSON arguments
  and its tool result (3% of them errors);
- tool outputs: 90% log-normal with a median of 250 tokens (clipped to
  10-1,000), 7.5% between 1k and 4k, and a heavy tail of 2.5% between 5k
  and 10k tokens;
- 3% of steps delegate to a sub-agent (``spawn_subagent``; its
  ``subagent_result`` arrives 1-6 steps later, so units interleave), 4% have
  a user turn or intervention, 1% a todo update, 0.3% a progress summary.

The last 10 chunks of a history never hold a heavy-tail output, so the newest
(pinned) unit always fits an 8k budget.
"""

from __future__ import annotations

import datetime as dt
import json
import math
import random
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

import attrs

from memctx import Chunk, MemoryState, chunks
from memctx.importers import load_openai_transcript

TRAJECTORY_DIR: Final = Path(__file__).resolve().parents[1] / "examples" / "trajectories"
CHARS_PER_TOKEN: Final = 3.7
"""Measured on the corpus with o200k_base; used to size generated text."""
SEED: Final = 20240605
_EPOCH: Final = dt.datetime(2025, 1, 1, tzinfo=dt.UTC)
_TOOLS: Final = ("bash", "read_file", "grep", "edit_file", "list_dir", "run_tests")
_AGENT_TYPES: Final = ("researcher", "coder", "reviewer")


@dataclass
class Workload:
    """A named state to build."""

    name: str
    kind: str
    """``trajectory`` or ``generated``."""
    state: MemoryState

    @property
    def size(self) -> int:
        return len(self.state)


def trajectory_files() -> list[Path]:
    """The real runs, sorted by name."""
    return sorted(TRAJECTORY_DIR.glob("*.traj.json"))


def load_trajectories() -> list[Workload]:
    """Import each trajectory as chunks (the non-OpenAI ``exit`` message is kept as CUSTOM)."""
    workloads = []
    for path in trajectory_files():
        state, _report = load_openai_transcript(json.loads(path.read_text(encoding="utf-8")))
        name = path.name.removesuffix(".traj.json").split("__", 1)[-1]
        workloads.append(Workload(f"traj {name}", "trajectory", state))
    return workloads


def load_corpus() -> str:
    """All message contents and tool-call arguments of the trajectories, joined."""
    parts: list[str] = []
    for path in trajectory_files():
        for message in json.loads(path.read_text(encoding="utf-8"))["messages"]:
            content = message.get("content")
            if isinstance(content, str) and content:
                parts.append(content)
            for call in message.get("tool_calls") or []:
                parts.append(str(call.get("function", {}).get("arguments", "")))
    if not parts:
        raise RuntimeError(f"no trajectories found in {TRAJECTORY_DIR}")
    return "\n".join(parts)


class HistoryGenerator:
    """Generates one agent history; the same seed and size give the same chunks."""

    def __init__(self, corpus: str, seed: int = SEED) -> None:
        self.corpus = corpus
        self.rng = random.Random(seed)
        self.calls = 0
        self.agents = 0

    def text(self, tokens: int) -> str:
        """About ``tokens`` tokens of corpus text from a random offset."""
        length = min(max(1, int(tokens * CHARS_PER_TOKEN)), len(self.corpus))
        start = self.rng.randrange(0, len(self.corpus) - length + 1)
        return self.corpus[start : start + length]

    def lognormal(self, median: float, sigma: float, low: int, high: int) -> int:
        value = self.rng.lognormvariate(math.log(median), sigma)
        return min(high, max(low, int(value)))

    def tool_output_tokens(self, allow_heavy: bool) -> int:
        draw = self.rng.random()
        if draw < 0.025 and allow_heavy:
            return self.rng.randint(5_000, 10_000)
        if draw < 0.10:
            return self.rng.randint(1_000, 4_000)
        return self.lognormal(250, 0.7, 10, 1_000)

    def arguments(self, tool: str) -> dict[str, Any]:
        if tool == "bash":
            return {"command": self.text(self.lognormal(25, 0.6, 4, 200)), "timeout": 120}
        if tool == "edit_file":
            return {
                "path": f"src/pkg/module_{self.rng.randrange(200)}.py",
                "old_str": self.text(self.lognormal(120, 0.8, 5, 1_500)),
                "new_str": self.text(self.lognormal(140, 0.8, 5, 1_500)),
            }
        if tool == "grep":
            return {"pattern": self.text(4), "path": "src/", "context": 2}
        if tool == "run_tests":
            return {"selector": f"tests/test_{self.rng.randrange(80)}.py", "verbose": True}
        return {"path": f"src/pkg/module_{self.rng.randrange(200)}.py"}

    def steps(self, heavy_until: int) -> Iterator[list[Chunk]]:
        """Yield the chunks of each step (ids and times are filled in by :func:`generate`)."""
        rng = self.rng
        yield [chunks.system(self.text(800))]
        yield [chunks.user(self.text(300))]
        pending: list[tuple[int, str]] = []  # (due step, subagent id)
        step = 0
        produced = 2
        while True:
            step += 1
            out: list[Chunk] = []
            draw = rng.random()
            if draw < 0.03:
                self.agents += 1
                agent = f"agent_{self.agents}"
                task = self.text(self.lognormal(150, 0.5, 30, 600))
                out.append(chunks.spawn_subagent(agent, rng.choice(_AGENT_TYPES), task))
                pending.append((step + rng.randint(1, 6), agent))
            elif draw < 0.05:
                out.append(chunks.user(self.text(self.lognormal(60, 0.8, 5, 400))))
            elif draw < 0.07:
                out.append(chunks.user_intervention(self.text(self.lognormal(40, 0.8, 5, 300))))
            if rng.random() < 0.4:
                out.append(chunks.thinking(self.text(self.lognormal(150, 0.8, 10, 1_200))))
            if rng.random() < 0.25:
                out.append(chunks.assistant(self.text(self.lognormal(60, 0.8, 5, 600))))
            tool = rng.choice(_TOOLS)
            self.calls += 1
            call_id = f"call_{self.calls}"
            out.append(chunks.tool_call(tool, self.arguments(tool), call_id, "completed"))
            if rng.random() < 0.03:
                out.append(chunks.tool_error(tool, self.text(rng.randint(10, 80)), call_id))
            else:
                tokens = self.tool_output_tokens(allow_heavy=produced < heavy_until)
                out.append(chunks.tool_result(tool, self.text(tokens), call_id))
            if rng.random() < 0.01:
                todos = [
                    {
                        "content": self.text(rng.randint(5, 20)),
                        "status": rng.choice(("done", "todo")),
                    }
                    for _ in range(rng.randint(2, 6))
                ]
                out.append(chunks.todo_update(todos))
            if rng.random() < 0.003:
                out.append(chunks.progress_summary(self.text(rng.randint(300, 800)), step))
            for due, agent in [p for p in pending if p[0] <= step]:
                pending.remove((due, agent))
                result = self.text(self.lognormal(500, 0.7, 50, 3_000))
                out.append(chunks.subagent_result(agent, result))
            produced += len(out)
            yield out


def generate(size: int, corpus: str, seed: int = SEED) -> MemoryState:
    """A history of exactly ``size`` chunks with ids ``g<seq>`` and increasing times."""
    generator = HistoryGenerator(corpus, seed)
    made: list[Chunk] = []
    for step in generator.steps(heavy_until=size - 10):
        for chunk in step:
            seq = len(made)
            made.append(
                attrs.evolve(chunk, id=f"g{seq:06d}", created_at=_EPOCH + dt.timedelta(seconds=seq))
            )
            if len(made) == size:
                return MemoryState(made, thread_id=f"generated-{size}")
    raise AssertionError("unreachable")  # pragma: no cover


def fresh_copy(state: MemoryState) -> MemoryState:
    """The same chunks as new objects in a new state: a new shared history no builder knows."""
    return MemoryState([attrs.evolve(chunk) for chunk in state.chunks], thread_id=state.thread_id)


def text_bytes(state: MemoryState) -> int:
    """The state's text size: UTF-8 bytes of every chunk's content text."""
    return sum(len(chunk.text.encode("utf-8")) for chunk in state.chunks)


class FreshChunks:
    """New small chunks for incremental rebuilds (a thinking step of ~150 tokens each)."""

    def __init__(self, corpus: str, prefix: str) -> None:
        self._generator = HistoryGenerator(corpus, SEED + 1)
        self._prefix = prefix
        self._count = 0

    def next(self) -> Chunk:
        self._count += 1
        return chunks.thinking(self._generator.text(150), id=f"{self._prefix}{self._count}")
