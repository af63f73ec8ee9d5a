"""A coding agent's memory, end to end: build a state, save it, fit it to a budget.

The agent is asked to fix a failing test. It reads a file, delegates a
question to a researcher sub-agent, compacts its early progress into a
summary, writes the fix, runs the tests and completes.

Run it with ``uv run python examples/coding_agent.py``; it rewrites
``examples/coding_agent.json`` (the state the README's first command builds)
and prints the messages of an 1,500-token build for gpt-4o.
"""

from __future__ import annotations

import datetime as dt
from pathlib import Path

from memctx import MemoryState, chunks, create_builder, create_tokenizer, save_state

HERE = Path(__file__).parent
START = dt.datetime(2026, 11, 2, 9, 0, tzinfo=dt.UTC)

MAIN_TS = """\
import { parseConfig } from "./config";

export function retryDelay(attempt: number): number {
  // Exponential backoff, capped at 30 seconds.
  return Math.min(30_000, 2 ** attempt * 100);
}

export function main(argv: string[]): number {
  const config = parseConfig(argv);
  return config.retries > 0 ? retryDelay(config.retries) : 0;
}
"""

TEST_OUTPUT = """\
FAIL src/main.test.ts
  retryDelay
    x caps the delay at 30 seconds (4 ms)
      Expected: 30000
      Received: 51200
Tests: 1 failed, 11 passed, 12 total
"""


def build_state() -> MemoryState:
    """The agent's memory after it finished the task (fixed ids and times)."""
    times = (START + dt.timedelta(seconds=20 * i) for i in range(100))

    def at() -> dict[str, dt.datetime]:
        return {"created_at": next(times)}

    return MemoryState(
        [
            chunks.system(
                "You are a coding agent working in a TypeScript repository. Use the tools; "
                "keep changes minimal; run the tests before you finish.",
                id="sys_rules",
                **at(),
            ),
            chunks.user(
                "The retry test fails on CI: retryDelay should never exceed 30 seconds. "
                "Please fix it.",
                id="task",
                pinned=True,
                **at(),
            ),
            chunks.thinking(
                "Read src/main.ts first, then check what the spec says about the cap.",
                id="think_plan",
                **at(),
            ),
            chunks.todo_update(
                [
                    {"task": "read src/main.ts", "done": False},
                    {"task": "confirm the cap in the spec", "done": False},
                    {"task": "fix and run tests", "done": False},
                ],
                id="todo_1",
                **at(),
            ),
            chunks.tool_call(
                "read_file",
                {"path": "src/main.ts"},
                call_id="call_read",
                status="completed",
                id="read_call",
                **at(),
            ),
            chunks.tool_result("read_file", MAIN_TS, call_id="call_read", id="read_result", **at()),
            chunks.tool_call(
                "run_tests",
                {"pattern": "retryDelay"},
                call_id="call_test1",
                status="completed",
                id="test_call_1",
                **at(),
            ),
            chunks.tool_result(
                "run_tests",
                TEST_OUTPUT,
                call_id="call_test1",
                success=False,
                id="test_result_1",
                **at(),
            ),
            chunks.spawn_subagent(
                "researcher_1",
                "researcher",
                "Find what docs/retry.md says about the maximum retry delay and whether "
                "the cap applies before or after jitter.",
                id="delegate",
                **at(),
            ),
            chunks.subagent_result(
                "researcher_1",
                {
                    "answer": "The cap is 30 s and applies after jitter.",
                    "source": "docs/retry.md#limits",
                },
                id="research_done",
                **at(),
            ),
            chunks.progress_summary(
                "## Progress Summary\n### Completed Actions\n- Read src/main.ts: the cap is "
                "applied with Math.min, but the test sees 51200.\n- Researcher: cap is 30 s, "
                "after jitter (docs/retry.md#limits).\n### Next\n- Check how jitter is added.",
                original_count=8,
                compacted_at=1793610240000,
                id="summary_1",
                **at(),
            ),
            chunks.tool_call(
                "grep",
                {"pattern": "jitter", "path": "src/"},
                call_id="call_grep",
                status="completed",
                id="grep_call",
                **at(),
            ),
            chunks.tool_error(
                "grep",
                "grep: src/jitter.ts: Permission denied",
                call_id="call_grep",
                id="grep_error",
                **at(),
            ),
            chunks.user_intervention(
                "jitter.ts is generated; the jitter is added in withJitter() in src/retry.ts.",
                id="hint",
                **at(),
            ),
            chunks.tool_call(
                "edit_file",
                {
                    "path": "src/retry.ts",
                    "replace": "return delay + jitter;",
                    "with": "return Math.min(30_000, delay + jitter);",
                },
                call_id="call_edit",
                status="completed",
                id="edit_call",
                **at(),
            ),
            chunks.tool_result(
                "edit_file",
                {"ok": True, "changed_lines": [14]},
                call_id="call_edit",
                id="edit_result",
                **at(),
            ),
            chunks.tool_call(
                "run_tests",
                {"pattern": "retryDelay"},
                call_id="call_test2",
                status="completed",
                id="test_call_2",
                **at(),
            ),
            chunks.tool_result(
                "run_tests",
                "Tests: 12 passed, 12 total\n",
                call_id="call_test2",
                id="test_result_2",
                **at(),
            ),
            chunks.assistant(
                "The cap was applied before jitter was added in withJitter(); it is now applied "
                "after it, as docs/retry.md requires. All 12 tests pass.",
                id="answer",
                **at(),
            ),
            chunks.task_completed(
                "Capped the retry delay after jitter in src/retry.ts.",
                summary="1 file changed; tests pass.",
                id="done",
                **at(),
            ),
        ],
        thread_id="fix-retry-cap",
    )


def main() -> None:
    state = build_state()
    save_state(state, HERE / "coding_agent.json")
    result = create_builder().build(
        state,
        max_tokens=1500,
        tokenizer=create_tokenizer("gpt-4o"),
        system_prompt="You are an expert TypeScript developer.",
    )
    print(result.to_text())
    print(result.summary())


if __name__ == "__main__":
    main()
