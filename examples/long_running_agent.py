"""A long agent run kept inside a 16k window by compression and compaction.

The bundled pydicom run (a real mini-swe-agent trajectory: 140 chunks, ~28k
tokens) is replayed chunk by chunk, as an agent appends. After every append
old tool outputs are trimmed, the compaction policy is checked, and the
context for the next model call is built within 16,000 tokens of gpt-4o.
Compaction here is extractive (no model); swap in
``LLMSummarizer(your_complete, max_tokens=...)`` for a model-written summary.

Run it with ``uv run python examples/long_running_agent.py``: it prints each
compaction and the final summary, and rewrites
``examples/long_running_agent.json`` (the final state).
"""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path

import attrs

from memctx import MemoryState, create_builder, create_tokenizer, save_state
from memctx.compaction import CompactionPolicy, ExtractiveSummarizer, is_compaction_summary
from memctx.compress import TrimToolOutputs, compress
from memctx.importers import load_openai_transcript

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
    """Append the run chunk by chunk under the policy; return the final state."""
    tokenizer = create_tokenizer("gpt-4o")
    builder = create_builder()
    trim = [TrimToolOutputs(keep_recent=2, max_chars=2_000)]
    policy = CompactionPolicy(trigger_tokens=12_000, keep_recent_tokens=6_000)
    summarizer = ExtractiveSummarizer()
    state = MemoryState([], thread_id="pydicom-1256")
    for chunk in recorded_run():
        state = state.append(chunk)
        state, _ = compress(state, trim, tokenizer=tokenizer, builder=builder)
        state, report = policy.apply(
            state, summarizer, tokenizer=tokenizer, builder=builder, now=chunk.created_at
        )
        if report.compacted and log is not None:
            log.append(f"after {chunk.id}: {report.summary()}")
        result = builder.build(state, max_tokens=BUDGET, tokenizer=tokenizer)
        assert result.token_count <= BUDGET
    return state


def main() -> None:
    log: list[str] = []
    state = replay(log)
    save_state(state, HERE / "long_running_agent.json")
    print("\n".join(log))
    summary = next(chunk for chunk in state if is_compaction_summary(chunk))
    print(
        f"\n{len(state)} chunks kept; the summary stands for {summary.metadata.original_count}:\n"
    )
    print(summary.text)


if __name__ == "__main__":
    main()
