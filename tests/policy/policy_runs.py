"""Agent runs with tool calls for the policy tests."""

from __future__ import annotations

from memctx import Chunk, MemoryState, chunks


def tool_step(n: int, size: int = 400, tool: str = "bash") -> list[Chunk]:
    """One model turn: a call and its result (``size`` words of output)."""
    return [
        chunks.tool_call(
            tool, {"command": f"pytest tests/test_{n}.py"}, call_id=f"c{n}", id=f"call{n}"
        ),
        chunks.tool_result(tool, f"out{n} " * size, call_id=f"c{n}", id=f"res{n}"),
    ]


def run_of(steps: int, size: int = 400) -> MemoryState:
    made: list[Chunk] = [
        chunks.system("You fix bugs.", id="sys"),
        chunks.user("Fix the failing test in src/app.py; do not touch the API.", id="task"),
    ]
    for n in range(steps):
        made.extend(tool_step(n, size))
    return MemoryState(made, thread_id="run")
