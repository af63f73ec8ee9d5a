"""Property tests of the build guarantees over random states, budgets and options.

Whatever the state and options: the token count is a fresh, exact count of
the returned messages; it never exceeds the budget; calls and their results
stay together; every chunk is reported exactly once; order is the state's;
and the ``recent`` strategy leaves no holes.
"""

from __future__ import annotations

import itertools
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from histories import TOKENIZERS, agent_histories, build_options, texts
from memctx import (
    BudgetExceededError,
    ChunkType,
    ExclusionReason,
    MemoryState,
    chunks,
    create_builder,
)
from strategies import examples


def _units(state: MemoryState) -> list[set[str]]:
    groups: dict[tuple[str, str], set[str]] = {}
    for chunk in state:
        meta = chunk.metadata
        if chunk.action in ("tool_call", "tool_result") and meta.call_id:
            groups.setdefault(("call", meta.call_id), set()).add(chunk.id)
        if chunk.action in ("spawn_subagent", "subagent_result") and meta.subagent_id:
            groups.setdefault(("agent", meta.subagent_id), set()).add(chunk.id)
    return list(groups.values())


@settings(max_examples=examples(250), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_build_guarantees_hold_for_any_state_and_options(data: st.DataObject) -> None:
    state = data.draw(agent_histories())
    opts = data.draw(build_options(state))
    tokenizer = opts["tokenizer"]
    builder = create_builder()
    try:
        result = builder.build(state, **opts)
    except BudgetExceededError as exc:
        needed, available = exc.needed, exc.available
        assert needed > available
        bigger = dict(opts, max_tokens=needed + opts.get("reserve_tokens", 0))
        builder.build(state, **bigger)  # exactly enough for what must be kept
        return

    # 1. The count is a fresh count of exactly these messages.
    assert result.token_count == tokenizer.count_messages(result.messages)
    # 2. Within the budget.
    if opts["max_tokens"] is not None:
        assert result.token_count <= opts["max_tokens"] - opts.get("reserve_tokens", 0)
    # 3. Every chunk reported exactly once, both lists in state order.
    position = {chunk_id: i for i, chunk_id in enumerate(state.ids)}
    included, excluded = result.included_chunk_ids, result.excluded_chunk_ids
    assert set(included).isdisjoint(excluded)
    assert set(included) | set(excluded) == set(state.ids)
    assert list(included) == sorted(included, key=position.__getitem__)
    assert list(excluded) == sorted(excluded, key=position.__getitem__)
    assert set(result.exclusions) == set(excluded)
    # 4. Messages hold exactly the included chunks, body in state order, roles alternate.
    body_ids = [i for m in result.messages if m.role != "system" for i in m.chunk_ids]
    system_ids = [i for m in result.messages if m.role == "system" for i in m.chunk_ids]
    assert sorted(body_ids + system_ids, key=position.__getitem__) == list(included)
    assert body_ids == sorted(body_ids, key=position.__getitem__)
    roles = [m.role for m in result.messages]
    assert all(a != b for a, b in itertools.pairwise(roles))
    assert "system" not in roles[1:]
    # 5. Atomic units: among chunks no option filtered, all members in or all out.
    filtered = {
        i for i in excluded if result.exclusions[i].reason is not ExclusionReason.OVER_BUDGET
    }
    for unit in _units(state):
        considered = unit - filtered
        kept = considered & set(included)
        assert not kept or kept == considered, (unit, kept)
    # 6. "recent" and "stable" leave no holes: everything dropped for the budget is
    #    older than every non-pinned chunk that was kept.
    if opts["strategy"] in ("recent", "stable"):
        over = [position[i] for i in result.excluded_for(ExclusionReason.OVER_BUDGET)]
        pinned = _pinned(state, opts, filtered)
        kept_free = [position[i] for i in included if i not in pinned]
        if over and kept_free:
            assert max(over) < min(kept_free)


def _pinned(state: MemoryState, opts: dict[str, Any], filtered: set[str]) -> set[str]:
    candidates = [c for c in state if c.id not in filtered]
    seeds = {c.id for c in candidates if c.type is ChunkType.SYSTEM or c.pinned}
    seeds |= set(opts.get("pinned_chunk_ids", ())) - filtered
    if opts["pin_newest"] and candidates:
        seeds.add(candidates[-1].id)
    units = _units(state)
    if opts["pin_pending_calls"]:
        for unit in units:
            if len(unit) == 1:
                seeds |= unit - filtered
    for unit in units:
        if unit & seeds:
            seeds |= unit - filtered
    return seeds


ADDITIVE_TOKENIZERS = sorted(n for n, t in TOKENIZERS.items() if t.counts_add_up)


def test_every_tiktoken_tokenizer_says_its_counts_add_up_and_the_estimate_does_not() -> None:
    assert sorted(n for n in TOKENIZERS if n != "estimate") == ADDITIVE_TOKENIZERS
    assert TOKENIZERS["estimate"].counts_add_up is False


@pytest.mark.parametrize("name", ADDITIVE_TOKENIZERS)
@settings(max_examples=examples(60), deadline=None)
@given(segments=st.lists(texts, min_size=1, max_size=8))
def test_segment_counts_add_up_to_the_count_of_the_whole(name: str, segments: list[str]) -> None:
    """The method behind exact counts: rendered chunks joined by newlines.

    A segment is XML plus a newline; the next starts with ``<``. Then the
    tokens of the joined text are the sum of the segments' tokens, for every
    tokenizer that says its counts add up.
    """
    tokenizer = TOKENIZERS[name]
    builder = create_builder()
    rendered = [
        builder.render(chunks.user(text, id=f"u{i}"))[1] + "\n" for i, text in enumerate(segments)
    ]
    assert tokenizer.count("".join(rendered)) == sum(tokenizer.count(s) for s in rendered)


@settings(max_examples=examples(60), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_incremental_builds_equal_fresh_uncached_builds(data: st.DataObject) -> None:
    """Appending and rebuilding reuses memoised work; the result must not change."""
    from memctx.statefile import dumps_state, loads_state

    full = data.draw(agent_histories())
    budget = data.draw(st.one_of(st.none(), st.integers(60, 2000)))
    tokenizer = TOKENIZERS[data.draw(st.sampled_from(sorted(TOKENIZERS)))]
    builder = create_builder()
    grown = MemoryState()
    for chunk in full:
        grown = grown.append(chunk)
        try:
            incremental = builder.build(grown, max_tokens=budget, tokenizer=tokenizer)
        except BudgetExceededError:
            continue
        fresh_state = loads_state(dumps_state(grown))  # new chunk objects: nothing memoised
        fresh = create_builder().build(fresh_state, max_tokens=budget, tokenizer=tokenizer)
        assert incremental.messages == fresh.messages
        assert incremental.token_count == fresh.token_count
        assert incremental.excluded_chunk_ids == fresh.excluded_chunk_ids
