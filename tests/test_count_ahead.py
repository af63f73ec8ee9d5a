"""Counting ahead: a cold build counts the chunks it will need in one batch, on threads.

Whatever it counts ahead, a build returns, reports and remembers exactly what a
build counting each chunk one by one does.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from histories import agent_histories, build_options
from memctx import (
    BudgetExceededError,
    ContextBuilder,
    ContextBuildResult,
    MemoryState,
    TiktokenTokenizer,
    chunks,
    create_builder,
)
from memctx._build.builder import counts_of
from strategies import agent_runs, examples


class RecordingTokenizer(TiktokenTokenizer):
    """A tiktoken tokenizer keeping each batch it was asked to count."""

    def __init__(self, encoding: str = "o200k_base", *, threads: int = 2) -> None:
        super().__init__(encoding, threads=threads)
        self.batches: list[list[str]] = []

    def count_many(self, texts: Sequence[str]) -> list[int]:
        self.batches.append(list(texts))
        return super().count_many(texts)


class EagerTokenizer(RecordingTokenizer):
    """Counts every batch of two texts or more on its threads (a build's batches are
    otherwise counted there only from ``parallel_min_chars`` characters on), even on a
    busy machine."""

    parallel_min_chars = 0
    serial_after_crowded_s = 0.0


def same(got: ContextBuildResult, expected: ContextBuildResult) -> None:
    """Every field of the two results is equal (those ``==`` leaves out too)."""
    assert got == expected
    assert got.included_chunks == expected.included_chunks
    assert got.prefix_tokens_shared == expected.prefix_tokens_shared
    assert got.prefix_messages_shared == expected.prefix_messages_shared


def build(
    builder: ContextBuilder, state: MemoryState, opts: dict[str, Any]
) -> ContextBuildResult | tuple[int, int]:
    """The result, or what a build over budget needed and had."""
    try:
        return builder.build(state, **opts)
    except BudgetExceededError as exc:
        return exc.needed, exc.available


def conversation(n: int, text: str = "a line of output\n" * 20) -> MemoryState:
    made = []
    for i in range(n):
        made.append(chunks.user(f"step {i}: {text}", id=f"u{i}"))
        made.append(chunks.assistant(f"done {i}: {text}", id=f"a{i}"))
    return MemoryState(made)


@settings(max_examples=examples(150), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_a_build_counted_ahead_on_threads_equals_one_counted_one_by_one(
    data: st.DataObject,
) -> None:
    state = data.draw(st.one_of(agent_histories(), agent_runs()), label="state")
    opts = data.draw(build_options(state), label="options")
    encoding = data.draw(st.sampled_from(["o200k_base", "cl100k_base"]), label="encoding")
    budgets = data.draw(
        st.lists(st.one_of(st.none(), st.integers(1, 8000)), min_size=1, max_size=3),
        label="budgets, one build each",
    )
    serial_tokenizer = TiktokenTokenizer(encoding, threads=1)
    threaded_tokenizer = EagerTokenizer(encoding)
    serial, threaded = create_builder(), create_builder()
    for max_tokens in budgets:
        given_opts = dict(opts, max_tokens=max_tokens)
        if max_tokens is None or given_opts.get("reserve_tokens", 0) >= max_tokens:
            given_opts.pop("reserve_tokens", None)
        expected = build(serial, state, dict(given_opts, tokenizer=serial_tokenizer))
        got = build(threaded, state, dict(given_opts, tokenizer=threaded_tokenizer))
        if isinstance(expected, ContextBuildResult):
            assert isinstance(got, ContextBuildResult)
            same(got, expected)
        else:
            assert got == expected
    # The builders remember the same counts (what a store persists).
    expected_counts = counts_of(serial).token_counts(state, serial_tokenizer)
    assert counts_of(threaded).token_counts(state, threaded_tokenizer) == expected_counts


class TestCountAhead:
    def test_a_cold_build_where_everything_fits_counts_every_chunk_in_one_batch(self) -> None:
        tokenizer = EagerTokenizer()
        state = conversation(30)
        result = create_builder().build(state, tokenizer=tokenizer)
        assert len(tokenizer.batches) == 1
        assert len(tokenizer.batches[0]) == len(state) - 1  # the newest is pinned, counted first
        assert result.token_count == tokenizer.count_messages(result.messages)

    def test_a_budget_counts_ahead_about_what_fits_its_room(self) -> None:
        tokenizer = EagerTokenizer()
        state = conversation(100)  # chunks of about 100 tokens, 400 characters
        result = create_builder().build(state, max_tokens=2_000, tokenizer=tokenizer)
        counted = [text for batch in tokenizer.batches for text in batch]
        included = len(result.included_chunk_ids)
        assert included - 3 <= len(counted) <= included  # all but the newest, pinned

    def test_a_chunk_counted_ahead_but_over_its_limit_is_measured_as_without(self) -> None:
        # "dense" has about a token a character, where the guess is 3 characters a token:
        # both are counted ahead, but "dense" leaves "long" less room than guessed, so
        # the walk finds "long" over its limit; it is then counted as ever (in pieces,
        # as far as the limit needs: its count stays unknown).
        dense = chunks.tool_result("sh", "0x7f3a 9b2c " * 334, id="dense")
        long = chunks.tool_result("sh", "a line of output\n" * 600, id="long")
        newest = chunks.user("go on", id="newest")  # pinned (pin_newest), counted first
        state = MemoryState([chunks.user("start", id="first"), long, dense, newest])
        eager, one_by_one = EagerTokenizer(), TiktokenTokenizer("o200k_base", threads=1)
        threaded, serial = create_builder(), create_builder()
        first = threaded.build(state, max_tokens=5_000, tokenizer=eager)
        same(first, serial.build(state, max_tokens=5_000, tokenizer=one_by_one))
        assert any("a line of output" in text for batch in eager.batches for text in batch)
        assert "long" in first.excluded_chunk_ids
        assert first.exclusions["long"].tokens_estimated  # not counted in full
        for max_tokens in (12_000, None):  # going on from what was counted of "long"
            got = threaded.build(state, max_tokens=max_tokens, tokenizer=eager)
            same(got, serial.build(state, max_tokens=max_tokens, tokenizer=one_by_one))
        assert "long" in got.included_chunk_ids

    def test_an_incremental_build_counts_no_batch(self) -> None:
        tokenizer = EagerTokenizer()
        builder = create_builder()
        state = conversation(20)
        builder.build(state, max_tokens=100_000, tokenizer=tokenizer)
        tokenizer.batches.clear()
        longer = state.append(chunks.user("one more", id="more"))
        builder.build(longer, max_tokens=100_000, tokenizer=tokenizer)
        assert tokenizer.batches == []

    def test_one_thread_counts_one_by_one_as_the_walk_goes(self) -> None:
        tokenizer = RecordingTokenizer(threads=1)
        create_builder().build(conversation(30), tokenizer=tokenizer)
        assert tokenizer.batches == []

    def test_a_batch_too_short_to_pay_for_threads_is_left_to_the_walk(self) -> None:
        tokenizer = RecordingTokenizer(threads=2)
        state = conversation(3)  # about 2,500 characters in all
        create_builder().build(state, tokenizer=tokenizer)
        assert tokenizer.batches == []

    @pytest.mark.parametrize("strategy", ["recent", "stable", "priority", "in_order"])
    def test_every_strategy_builds_alike_counted_ahead_or_not(self, strategy: str) -> None:
        state = conversation(60)
        for max_tokens in (3_000, None):
            got = create_builder().build(
                state, max_tokens=max_tokens, strategy=strategy, tokenizer=EagerTokenizer()
            )
            one_by_one = TiktokenTokenizer("o200k_base", threads=1)
            expected = create_builder().build(
                state, max_tokens=max_tokens, strategy=strategy, tokenizer=one_by_one
            )
            same(got, expected)
