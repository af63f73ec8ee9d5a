"""A long agent run under a 16k budget, with compression and a compaction policy.

Each history is replayed chunk by chunk, as an agent appends: after every
append the state is compressed, the policy is checked (so compaction can
fire in the middle of a run of tool calls, not only after a user turn) and
the context is built for the next model call. The run fails loudly if a build
fails or goes over the budget.

    uv run python -m benchmarks.long_run   # the three trajectories and 5,000 generated chunks
    uv run python -m benchmarks.long_run --size 1000 --model estimate
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Iterable

import attrs

from memctx import Chunk, ChunkType, MemoryState, create_builder, create_tokenizer
from memctx._build.builder import counts_of
from memctx.compaction import CompactionPolicy, ExtractiveSummarizer, is_compaction_summary
from memctx.compress import MaxChars, TrimToolOutputs, compress
from memctx.typing import Tokenizer

BUDGET = 16_000
POLICY = CompactionPolicy(trigger=12_000, keep_recent=6_000)
COMPRESSORS = (TrimToolOutputs(keep_recent=2, max_chars=2_000), MaxChars(24_000))
_TOOL_TYPES = (ChunkType.WORKFLOW, ChunkType.ENVIRONMENT)


@attrs.define
class LongRun:
    """What happened over one replay."""

    name: str
    chunks: int = 0
    compactions: int = 0
    mid_tool_run: int = 0  # compactions right after a tool call or result that followed one
    declined: int = 0  # checks where what must stay was over the trigger by itself
    compressed_chunks: int = 0
    kept_after_compaction: list[int] = attrs.Factory(list)
    build_tokens: list[int] = attrs.Factory(list)
    final_summary_tokens: int = 0
    seconds: float = 0.0

    def line(self) -> str:
        kept = self.kept_after_compaction
        return (
            f"{self.name:<22} {self.chunks:>6} chunks  {self.compactions:>4} compactions "
            f"({self.mid_tool_run} mid tool-run, {self.declined} declined)  "
            f"tokens kept after compaction: mean {statistics.mean(kept) if kept else 0:,.0f}, "
            f"max {max(kept, default=0):,}  build: max {max(self.build_tokens):,} / {BUDGET:,}, "
            f"mean {statistics.mean(self.build_tokens):,.0f}  summary {self.final_summary_tokens:,}"
            f"  {self.compressed_chunks} chunks compressed  {self.seconds:.1f}s"
        )


def replay(name: str, history: Iterable[Chunk], tokenizer: Tokenizer) -> LongRun:
    """Append ``history`` chunk by chunk under the policy; every build must fit :data:`BUDGET`."""
    builder = create_builder()
    summarizer = ExtractiveSummarizer()
    stats = LongRun(name)
    state = MemoryState([])
    previous: Chunk | None = None
    started = time.perf_counter()
    for chunk in history:
        state = state.append(chunk)
        state, compression = compress(state, COMPRESSORS, tokenizer=tokenizer, builder=builder)
        stats.compressed_chunks += len(compression.replaced_ids)
        state, report = POLICY.apply(state, summarizer, tokenizer=tokenizer, builder=builder)
        if report.compacted:
            stats.compactions += 1
            stats.kept_after_compaction.append(report.tokens_after)
            if chunk.type in _TOOL_TYPES and previous is not None and previous.type in _TOOL_TYPES:
                stats.mid_tool_run += 1
        elif report.reason.startswith("over the trigger"):
            stats.declined += 1
        result = builder.build(state, max_tokens=BUDGET, tokenizer=tokenizer)
        if result.token_count > BUDGET:
            raise AssertionError(f"{name}: {result.token_count} tokens over the {BUDGET} budget")
        stats.build_tokens.append(result.token_count)
        stats.chunks += 1
        previous = chunk
    stats.seconds = time.perf_counter() - started
    summaries = [c for c in state if is_compaction_summary(c)]
    if summaries:
        stats.final_summary_tokens = counts_of(builder).tokens(summaries[-1], tokenizer)
    return stats


def main() -> None:
    from benchmarks.workloads import generate, load_corpus, load_trajectories

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", type=int, default=5_000, help="chunks in the generated run")
    parser.add_argument("--model", default="gpt-4o", help="tokenizer to count with")
    args = parser.parse_args()
    tokenizer = create_tokenizer(args.model)
    print(
        f"budget {BUDGET:,}; policy trigger {POLICY.trigger:,}, keep "
        f"{POLICY.keep_recent:,}; compressors {[type(c).__name__ for c in COMPRESSORS]}; "
        f"{tokenizer.name}"
    )
    for workload in load_trajectories():
        print(replay(workload.name, workload.state, tokenizer).line(), flush=True)
    generated = generate(args.size, load_corpus())
    print(replay(f"generated {args.size:,}", generated, tokenizer).line(), flush=True)


if __name__ == "__main__":
    main()
