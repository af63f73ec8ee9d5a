"""Counting long chunks against the budget: in pieces, each character encoded once."""

from __future__ import annotations

from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from counting import CountingTokenizer
from histories import texts
from memctx import MemoryState, chunks, create_builder, create_tokenizer
from memctx._build.builder import counts_of
from memctx.statefile import dumps_state, loads_state
from strategies import examples

GPT4O = create_tokenizer("gpt-4o")


def long_output(lines: int) -> str:
    return "".join(f"line {n}: value = {n * 7919 % 1000}, ok\n" for n in range(lines))


def test_a_chunk_far_over_the_remaining_budget_is_not_encoded_whole() -> None:
    tokenizer = CountingTokenizer()
    output = long_output(20_000)  # ~200k tokens
    state = MemoryState(
        [
            chunks.user("Look at the log.", id="u0"),
            chunks.tool_result("sh", output, id="big"),
            chunks.user("What did you find?", id="u1"),
        ]
    )

    result = create_builder(tokenizer).build(state, max_tokens=2000, pin_newest=False)

    assert result.excluded_chunk_ids == ("u0", "big")
    encoded = sum(map(len, tokenizer.texts))
    assert encoded < len(output) // 20


def test_a_chunk_counted_in_pieces_is_never_encoded_twice() -> None:
    tokenizer = CountingTokenizer()
    builder = create_builder(tokenizer)
    state = MemoryState([chunks.tool_result("sh", long_output(2_000), id="big")])
    segment = builder.render(state.get("big"))[1] + "\n"
    builder.build(MemoryState())  # the chat format's overheads, counted once per builder
    tokenizer.texts.clear()

    for budget in (500, 1_000, 4_000, 100_000):  # over, over, over, fits
        builder.build(state, max_tokens=budget, pin_newest=False)

    assert "".join(tokenizer.texts) == segment
    assert counts_of(builder).cached_tokens(state.get("big"), tokenizer) == tokenizer.count(segment)


@settings(max_examples=examples(100), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    pieces=st.lists(texts, min_size=1, max_size=4),
    repeat=st.integers(1, 30),
    budgets=st.lists(st.integers(20, 1_500), min_size=1, max_size=5),
)
def test_builds_with_growing_budgets_count_exactly_what_fresh_builds_count(
    pieces: list[str], repeat: int, budgets: list[int]
) -> None:
    """The progress kept on a chunk between builds never changes what a build reports."""
    state = MemoryState(
        [chunks.tool_result("sh", text * repeat, id=f"r{n}") for n, text in enumerate(pieces)]
        + [chunks.user("next?", id="u")]
    )
    builder = create_builder(GPT4O)
    for budget in sorted(budgets):
        opts: dict[str, Any] = {"max_tokens": budget, "pin_newest": False}
        result = builder.build(state, **opts)
        fresh = create_builder(GPT4O).build(loads_state(dumps_state(state)), **opts)

        assert (result.messages, result.token_count, dict(result.chunk_tokens)) == (
            fresh.messages,
            fresh.token_count,
            dict(fresh.chunk_tokens),
        )
        assert result.token_count == GPT4O.count_messages(result.messages)
