"""The three real trajectories replayed chunk by chunk under a 16k budget and a policy.

``python -m benchmarks.long_run`` runs the same loop (plus a generated 5,000-chunk run)
and prints the numbers.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from memctx import ChunkType, MemoryState, create_builder
from memctx._render.tokens import TiktokenTokenizer
from memctx.compaction import CompactionPolicy, ExtractiveSummarizer
from memctx.compress import MaxChars, TrimToolOutputs, compress
from memctx.importers import load_openai_transcript

TRAJECTORIES = sorted((Path(__file__).parent.parent / "examples" / "trajectories").glob("*.json"))
BUDGET = 16_000


@pytest.mark.parametrize("path", TRAJECTORIES, ids=lambda p: p.name.split("__")[0])
def test_a_real_run_never_fails_never_exceeds_the_budget_and_compacts_mid_tool_run(
    path: Path, gpt4o: TiktokenTokenizer
) -> None:
    history, _ = load_openai_transcript(json.loads(path.read_text()))
    policy = CompactionPolicy(trigger=12_000, keep_recent=6_000)
    compressors = [TrimToolOutputs(keep_recent=2, max_chars=2_000), MaxChars(24_000)]
    builder = create_builder()
    state = MemoryState([])
    fired_after: list[ChunkType] = []
    for chunk in history:
        state = state.append(chunk)
        state, _ = compress(state, compressors, tokenizer=gpt4o, builder=builder)
        state, report = policy.apply(
            state, ExtractiveSummarizer(), tokenizer=gpt4o, builder=builder
        )
        if report.compacted:
            fired_after.append(chunk.type)
        result = builder.build(state, max_tokens=BUDGET, tokenizer=gpt4o)
        assert result.token_count <= BUDGET
        assert result.token_count == gpt4o.count_messages(result.messages)
    assert len(fired_after) >= 2
    assert {ChunkType.WORKFLOW, ChunkType.ENVIRONMENT} & set(fired_after)
