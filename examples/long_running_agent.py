"""A long agent run kept inside a 16k window by one ContextPolicy.

The bundled pydicom run (a real mini-swe-agent trajectory: 140 chunks, ~28k
tokens) is replayed as the agent lived it: before every model call the policy
takes the state, clears old tool outputs and compacts old history when due (in
blocks, so the prompt cache keeps hitting between two such events), and returns
the Anthropic request with its cache breakpoints; the agent keeps the state the
policy returned and appends the model's answer and the tool results to it.
Compaction here is extractive (no model); pass
``summarizer=LLMSummarizer(your_complete, max_tokens=...)`` for a model-written one.

Run it with ``uv run python examples/long_running_agent.py``: it prints what the
policy did and the final summaries, and rewrites ``examples/long_running_agent.json``
(the final state).
"""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path

import attrs

from memctx import MemoryState, create_builder, save_state
from memctx.compaction import CompactionPolicy, is_compaction_summary
from memctx.importers import load_openai_transcript
from memctx.policy import ClearToolUses, ContextPolicy

HERE = Path(__file__).parent
RUN = HERE / "trajectories" / "pydicom__pydicom-1256.traj.json"
START = dt.datetime(2026, 11, 2, 9, 0, tzinfo=dt.UTC)
BUDGET = 16_000


def recorded_run() -> MemoryState:
    """The trajectory as chunks, one every 20 seconds from START (fixed, for snapshots)."""
    state, _ = load_openai_transcript(json.loads(RUN.read_text(encoding="utf-8")))
    return MemoryState(
        attrs.evolve(chunk, created_at=START + dt.timedelta(seconds=20 * i))
        for i, chunk in enumerate(state)
    )


def replay(log: list[str] | None = None) -> MemoryState:
    """Live the run again under the policy, one step per model call; return the final state."""
    policy = ContextPolicy(
        "claude-sonnet-4-6",
        max_tokens=BUDGET,
        clear_tool_uses=ClearToolUses(keep_recent=3),
        compaction=CompactionPolicy(trigger=0.8, keep_recent=0.3),
    )
    roles = create_builder()
    state = MemoryState([], thread_id="pydicom-1256")
    previous_role = None
    for chunk in recorded_run():
        role = roles.render(chunk)[0]
        if role == "assistant" and previous_role not in (None, "assistant"):
            # The model is called here: this is where an agent calls policy.step.
            step = policy.step(state, now=chunk.created_at)
            assert step.token_count <= BUDGET
            if log is not None:
                log.extend(
                    f"before {chunk.id}: {r.summary()}" for r in step.reports if r.kind != "skipped"
                )
            state = step.state  # keep what the policy made, then append the answer
        state = state.append(chunk)
        previous_role = role
    return state


def main() -> None:
    log: list[str] = []
    state = replay(log)
    save_state(state, HERE / "long_running_agent.json")
    print("\n".join(log))
    summaries = [chunk for chunk in state if is_compaction_summary(chunk)]
    covered = sum(summary.metadata.original_count or 0 for summary in summaries)
    print(
        f"\n{len(state)} chunks kept; {len(summaries)} summaries (each compaction appends one "
        f"after the earlier ones) stand for {covered}:\n"
    )
    print("\n\n".join(summary.text for summary in summaries))


if __name__ == "__main__":
    main()
