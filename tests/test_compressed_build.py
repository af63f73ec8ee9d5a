"""builder.build(..., compressors=, compress_to_fit=): compression inside a build."""

from __future__ import annotations

import copy
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from memctx import (
    BudgetExceededError,
    BuildOptionError,
    Chunk,
    ContextBuilder,
    MemoryState,
    chunks,
    create_builder,
)
from memctx._render.prefix import shared_prefix_tokens
from memctx._render.tokens import TiktokenTokenizer
from memctx.compress import MaxChars, TrimToolOutputs
from strategies import agent_runs, examples


def steps(n: int, lines: int = 100) -> list[Chunk]:
    made: list[Chunk] = []
    for i in range(n):
        made.append(chunks.tool_call("bash", {"command": f"s{i}"}, call_id=f"c{i}", id=f"call{i}"))
        made.append(
            chunks.tool_result("bash", "line of output\n" * lines, call_id=f"c{i}", id=f"r{i}")
        )
    return made


@pytest.fixture
def run() -> MemoryState:
    return MemoryState(
        [chunks.system("Be terse.", id="s"), chunks.user("Go.", id="task"), *steps(10)]
    )


class TestCompressors:
    def test_they_apply_before_the_budget_and_the_report_says_what_they_did(
        self, builder: ContextBuilder, run: MemoryState, gpt4o: TiktokenTokenizer
    ) -> None:
        result = builder.build(run, max_tokens=3000, tokenizer=gpt4o, compressors=[MaxChars(300)])
        assert result.compression is not None
        assert len(result.compression.replaced_ids) == 10
        assert result.excluded_for("over_budget") == ()
        assert result.included_chunk_ids[3] == result.compression.replaced_ids["r0"]
        assert result.token_count == gpt4o.count_messages(result.messages) <= 3000
        assert "compressed first: 22 chunks -> 22; 10 replaced" in result.summary()

    def test_a_build_without_them_has_no_compression_report(
        self, builder: ContextBuilder, run: MemoryState
    ) -> None:
        assert builder.build(run).compression is None


class TestCompressToFit:
    def test_the_oldest_outputs_are_trimmed_as_few_as_needed_instead_of_left_out(
        self, builder: ContextBuilder, run: MemoryState, gpt4o: TiktokenTokenizer
    ) -> None:
        fit = TrimToolOutputs(keep_recent=1, max_chars=200)
        plain = builder.build(run, max_tokens=3000, tokenizer=gpt4o)
        assert plain.excluded_for("over_budget")
        result = builder.build(run, max_tokens=3000, tokenizer=gpt4o, compress_to_fit=fit)
        assert result.excluded_for("over_budget") == ()
        assert result.token_count == gpt4o.count_messages(result.messages) <= 3000
        assert result.compression is not None
        trimmed = list(result.compression.replaced_ids)
        assert trimmed == [f"r{i}" for i in range(len(trimmed))]  # oldest first
        assert all(
            c.by == ("TrimToolOutputs (to fit the budget)",) for c in result.compression.changes
        )
        # One fewer would not have been enough.
        rendition = {c.metadata.derived_from[0]: c for c in fit(run) if c.metadata.derived_from}
        fewer = MemoryState(rendition[c.id] if c.id in trimmed[:-1] else c for c in run)
        assert builder.build(fewer, max_tokens=3000, tokenizer=gpt4o).excluded_for("over_budget")

    def test_with_room_to_spare_nothing_is_trimmed(
        self, builder: ContextBuilder, run: MemoryState, gpt4o: TiktokenTokenizer
    ) -> None:
        result = builder.build(
            run, max_tokens=100_000, tokenizer=gpt4o, compress_to_fit=TrimToolOutputs(max_chars=10)
        )
        assert result.compression is not None
        assert not result.compression.changed
        assert result.included_chunk_ids == run.ids

    def test_when_trimming_all_is_not_enough_the_oldest_are_still_left_out(
        self, builder: ContextBuilder, run: MemoryState, gpt4o: TiktokenTokenizer
    ) -> None:
        fit = TrimToolOutputs(keep_recent=1, max_chars=200)
        result = builder.build(run, max_tokens=1200, tokenizer=gpt4o, compress_to_fit=fit)
        assert result.compression is not None
        assert len(result.compression.replaced_ids) == 9
        assert result.excluded_for("over_budget")[0] == "task"
        assert result.token_count <= 1200

    def test_a_newest_output_too_big_for_the_budget_can_fit_trimmed(
        self, builder: ContextBuilder, gpt4o: TiktokenTokenizer
    ) -> None:
        state = MemoryState(steps(1, lines=2000))
        fit = TrimToolOutputs(keep_recent=0, max_chars=300)
        result = builder.build(state, max_tokens=500, tokenizer=gpt4o, compress_to_fit=fit)
        assert result.token_count <= 500
        assert result.compression is not None
        assert list(result.compression.replaced_ids) == ["r0"]

    def test_it_must_be_a_compressor(self, builder: ContextBuilder, run: MemoryState) -> None:
        with pytest.raises(BuildOptionError, match="compress_to_fit"):
            builder.build(run, max_tokens=100, compress_to_fit=42)  # type: ignore[arg-type]
        with pytest.raises(BuildOptionError, match="compressors"):
            builder.build(run, compressors=MaxChars(3))  # type: ignore[arg-type]


class TestProperties:
    @settings(
        max_examples=examples(60), deadline=None, suppress_health_check=[HealthCheck.too_slow]
    )
    @given(
        state=agent_runs(),
        budget=st.integers(300, 5000),
        keep=st.integers(0, 3),
        chars=st.integers(1, 400),
    )
    def test_fitting_is_exact_within_budget_and_never_leaves_out_more(
        self,
        state: MemoryState,
        budget: int,
        keep: int,
        chars: int,
        gpt4o: TiktokenTokenizer,
    ) -> None:
        builder = create_builder()
        fit = TrimToolOutputs(keep_recent=keep, max_chars=chars)
        try:
            plain = builder.build(state, max_tokens=budget, tokenizer=gpt4o)
        except BudgetExceededError:
            plain = None
        try:
            result = builder.build(state, max_tokens=budget, tokenizer=gpt4o, compress_to_fit=fit)
        except BudgetExceededError:
            assert plain is None  # trimming never makes the pins need more
            return
        assert result.token_count == gpt4o.count_messages(result.messages) <= budget
        assert result.compression is not None
        replaced = result.compression.replaced_ids
        assert len(result.included_chunk_ids) + len(result.excluded_chunk_ids) == len(state)
        originals = {c.id for c in state}
        for chunk in result.included_chunks:
            if chunk.id not in originals:
                assert replaced[chunk.metadata.derived_from[0]] == chunk.id  # type: ignore[index]
        if plain is not None:
            assert len(result.excluded_for("over_budget")) <= len(plain.excluded_for("over_budget"))


class TestSharedPrefix:
    @pytest.mark.parametrize(
        "compression",
        [
            {"compressors": [MaxChars(300)]},
            {"compress_to_fit": TrimToolOutputs(keep_recent=1, max_chars=200)},
        ],
    )
    def test_is_against_the_last_compressed_build_of_the_same_history(
        self, run: MemoryState, gpt4o: TiktokenTokenizer, compression: dict[str, Any]
    ) -> None:
        builder = create_builder(gpt4o)
        options: dict[str, Any] = {"max_tokens": 2500, "strategy": "stable"}
        first = builder.build(run, **options, **compression)
        again = builder.build(run, **options, **copy.deepcopy(compression))  # equal, not same
        grown = run.append(chunks.assistant("Done.", id="done"))
        later = builder.build(grown, **options, **compression)

        assert first.prefix_tokens_shared == 0
        assert again.prefix_tokens_shared == (
            gpt4o.count_messages(again.messages) - gpt4o.count_messages([])
        )
        assert later.prefix_tokens_shared == shared_prefix_tokens(
            later.messages, again.messages, gpt4o
        )
        assert later.prefix_messages_shared >= 2
        assert builder.build(grown, max_tokens=2500).prefix_tokens_shared == 0  # other options
