"""Rebuilding a grown history from the last build gives exactly what a full build gives."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from histories import agent_histories, build_options
from memctx import (
    BudgetExceededError,
    Chunk,
    ChunkNotFoundError,
    ChunkType,
    ContextBuildResult,
    MemoryState,
    chunks,
    create_builder,
    create_tokenizer,
)
from memctx.statefile import dumps_state, loads_state
from strategies import examples

GPT4O = create_tokenizer("gpt-4o")


def fresh_build(state: MemoryState, **opts: Any) -> ContextBuildResult:
    """A build of new chunk objects by a new builder: nothing memoised, no earlier build."""
    return create_builder().build(loads_state(dumps_state(state)), **opts)


def report(result: ContextBuildResult) -> tuple[Any, ...]:
    return (
        result.messages,
        result.token_count,
        result.included_chunk_ids,
        result.excluded_chunk_ids,
        {i: e.reason for i, e in result.exclusions.items()},
        dict(result.chunk_tokens),
        dict(result.replaced_characters),
        result.recounted,
    )


def outcome(
    build: Callable[..., ContextBuildResult], state: MemoryState, opts: dict[str, Any]
) -> tuple[Any, ...]:
    """The report of a build, or what a too-small budget or a missing pinned id said."""
    try:
        return report(build(state, **opts))
    except BudgetExceededError as exc:
        return ("too small", exc.needed, exc.available)
    except ChunkNotFoundError as exc:
        return ("not found", exc.chunk_id)


def grow_and_compare(data: st.DataObject, full: MemoryState, opts: dict[str, Any]) -> None:
    """The agent loop: append a few chunks of ``full``, build; sometimes an older state.

    Every build by the one builder must equal a fresh full build of the same state.
    """
    builder = create_builder()
    made = [MemoryState()]
    taken = 0
    while taken < len(full):
        step = data.draw(st.integers(1, 3))
        grown = made[-1].extend(full.chunks[taken : taken + step])
        taken += step
        made.append(grown)
        if data.draw(st.integers(0, 5)) == 0:  # an older state, built again
            grown = made[data.draw(st.integers(0, len(made) - 1))]
        assert outcome(builder.build, grown, opts) == outcome(fresh_build, grown, opts)


@settings(max_examples=examples(300), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_growing_and_rebuilding_equals_a_full_build_for_any_recent_options(
    data: st.DataObject,
) -> None:
    """The agent loop: append a few chunks, build; sometimes build an older state again."""
    full = data.draw(agent_histories())
    opts = data.draw(build_options(full))
    opts["strategy"] = "recent"
    opts.pop("include_only_chunk_ids", None)
    grow_and_compare(data, full, opts)


@settings(max_examples=examples(200), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_growing_under_tight_budgets_with_filtered_kinds_equals_a_full_build(
    data: st.DataObject,
) -> None:
    """Budgets that stop the walk among the chunks, and calls or results filtered out.

    Where the fast path's seams are: a block that did not fit last time, pins that
    moved, units whose other members are left out by type.
    """
    full = data.draw(agent_histories())
    opts = data.draw(build_options(full))
    opts.update(strategy="recent", max_tokens=data.draw(st.integers(10, 400)))
    opts.pop("include_only_chunk_ids", None)
    opts.pop("reserve_tokens", None)
    filtered = [ChunkType.WORKFLOW, ChunkType.DELEGATION, ChunkType.ENVIRONMENT]
    opts["exclude_types"] = data.draw(st.lists(st.sampled_from(filtered), max_size=2))
    grow_and_compare(data, full, opts)


def _loop_state() -> MemoryState:
    steps = []
    for n in range(30):
        steps.append(
            chunks.tool_call("sh", {"cmd": f"pytest -k case{n}"}, call_id=f"c{n}", id=f"c{n}")
        )
        steps.append(chunks.tool_result("sh", "ok " * 40, call_id=f"c{n}", id=f"r{n}"))
    return MemoryState(
        [
            chunks.system("You are a careful coding agent.", id="sys"),
            chunks.user("Fix the failing test in tests/test_io.py.", id="task", pinned=True),
            *steps,
        ]
    )


def test_an_agent_loop_rebuild_reuses_the_messages_that_did_not_change() -> None:
    builder = create_builder(GPT4O)
    state = _loop_state()
    first = builder.build(state, max_tokens=2000)

    grown = state.append(chunks.thinking("The tests pass; checking the diff.", id="t1"))
    second = builder.build(grown, max_tokens=2000)

    assert report(second) == report(fresh_build(grown, max_tokens=2000, tokenizer=GPT4O))
    assert second.included_chunk_ids != first.included_chunk_ids  # the oldest step dropped
    # Messages holding the same chunks are the very same objects; only the new one is new.
    old = {message.chunk_ids: message for message in first.messages}
    assert [old.get(m.chunk_ids) is m for m in second.messages] == [True] * (
        len(second.messages) - 1
    ) + [False]
    assert second.messages[-1].chunk_ids == ("t1",)


def test_rebuilding_the_same_state_the_same_way_returns_the_same_result() -> None:
    builder = create_builder(GPT4O)
    state = _loop_state()

    first = builder.build(state, max_tokens=2000)
    again = builder.build(state, max_tokens=2000)

    assert again == first
    assert again.messages is first.messages  # nothing built anew
    assert again.prefix_tokens_shared > first.prefix_tokens_shared == 0
    assert builder.build(state, max_tokens=1999).messages is not first.messages


def test_a_rebuild_with_other_options_or_renderers_is_a_full_build() -> None:
    builder = create_builder(GPT4O)
    state = _loop_state()
    builder.build(state, max_tokens=2000)
    grown = state.append(chunks.user("Also update the changelog.", id="u1"))

    other = builder.build(grown, max_tokens=2000, pin_newest=False)

    assert report(other) == report(
        fresh_build(grown, max_tokens=2000, pin_newest=False, tokenizer=GPT4O)
    )


def _shapes() -> dict[str, tuple[list[Chunk], list[Chunk], dict[str, Any]]]:
    """Histories (before, appended, options) where the seam between the two needs care."""
    say = "word " * 20
    return {
        "a pinned chunk between the appended chunks and the rest": (
            [
                chunks.assistant(say, id="a0"),
                chunks.assistant(say, id="a1"),
                chunks.user(say, id="u1", pinned=True),
            ],
            [chunks.assistant(say, id="a2")],
            {"pin_newest": False},
        ),
        "the last build's newest chunk was a result, pinned with its call": (
            [
                chunks.user(say, id="u0"),
                chunks.tool_call("sh", {"cmd": "ls"}, call_id="c1", id="c1"),
                chunks.tool_result("sh", say, call_id="c1", id="r1"),
            ],
            [chunks.thinking(say, id="t1")],
            {},
        ),
        "a chunk between the pinned call and its result": (
            [
                chunks.user(say, id="u0"),
                chunks.tool_call("sh", {"cmd": "ls"}, call_id="c1", id="c1"),
                chunks.thinking(say, id="t0"),
                chunks.tool_result("sh", say, call_id="c1", id="r1"),
            ],
            [chunks.assistant(say, id="a1")],
            {},
        ),
        "a result appended to the call the last build ended with": (
            [
                chunks.user(say, id="u0"),
                chunks.assistant(say, id="a0"),
                chunks.tool_call("sh", {"cmd": "ls"}, call_id="c1", id="c1"),
            ],
            [chunks.tool_result("sh", say, call_id="c1", id="r1")],
            {},
        ),
        "a result appended to a call with chunks in between": (
            [
                chunks.user(say, id="u0"),
                chunks.tool_call("sh", {"cmd": "ls"}, call_id="c1", id="c1"),
                chunks.thinking(say, id="t0"),
            ],
            [chunks.tool_result("sh", say, call_id="c1", id="r1")],
            {},
        ),
        "a call and its result appended together": (
            [chunks.user(say, id="u0"), chunks.assistant(say, id="a0")],
            [
                chunks.tool_call("sh", {"cmd": "ls"}, call_id="c1", id="c1"),
                chunks.tool_result("sh", say, call_id="c1", id="r1"),
                chunks.thinking(say, id="t1"),
            ],
            {"pin_newest": False},
        ),
        "a result appended to an unpinned call": (
            [
                chunks.user(say, id="u0"),
                chunks.tool_call("sh", {"cmd": say * 2}, call_id="c1", id="c1"),
            ],
            [chunks.tool_result("sh", say, call_id="c1", id="r1")],
            {"pin_newest": False, "pin_pending_calls": False},
        ),
        "a result appended to a pinned call with unpinned chunks in between": (
            [
                chunks.user(say, id="u0"),
                chunks.tool_call("sh", {"cmd": "ls"}, call_id="c1", id="c1"),
                chunks.thinking(say * 2, id="t0"),
                chunks.thinking(say, id="t1"),
            ],
            [chunks.tool_result("sh", say, call_id="c1", id="r1")],
            {},
        ),
        "the last build's newest chunk lies inside a unit whose result is left out": (
            [
                chunks.tool_call("sh", {"cmd": "ls"}, call_id="c1", id="c1"),
                chunks.user(say, id="u0"),
                chunks.user(say, id="u1"),
                chunks.tool_result("sh", say, call_id="c1", id="r1"),
            ],
            [chunks.thinking(say, id="t1")],
            {"include_environment": False},
        ),
        "a pending call stays pinned above older steps": (
            [
                chunks.user(say, id="u0"),
                chunks.assistant(say, id="a0"),
                chunks.tool_call("sh", {"cmd": "ls"}, call_id="c1", id="c1"),
            ],
            [chunks.thinking(say, id="t1"), chunks.user(say, id="u1")],
            {"pin_pending_calls": True},
        ),
    }


@pytest.mark.parametrize("shape", sorted(_shapes()))
@pytest.mark.parametrize("max_tokens", [None, *range(100, 401, 25)])
def test_a_grown_history_builds_as_a_full_build_at_the_seam(
    shape: str, max_tokens: int | None
) -> None:
    before, appended, opts = _shapes()[shape]
    opts = dict(opts, max_tokens=max_tokens, tokenizer=GPT4O)
    builder = create_builder()
    state = MemoryState(before)
    grown = state.extend(appended)

    outcome(builder.build, state, opts)

    assert outcome(builder.build, grown, opts) == outcome(fresh_build, grown, opts)


@pytest.mark.parametrize("pin_newest", [False, True])
def test_a_pinned_chunk_skipped_at_the_top_is_remembered_for_the_next_build(
    pin_newest: bool,
) -> None:
    """A pending delegation appended (pinned, skipped by the walk), then plain chunks.

    The build that appended the delegation walked no block after skipping it;
    the next build must still see it between the new chunks and the older ones.
    """
    say = "word " * 10
    opts = {"tokenizer": GPT4O, "pin_newest": pin_newest, "pin_pending_calls": True}
    builder = create_builder()
    state = MemoryState([chunks.thinking(say, id="t0"), chunks.user(say, id="u1")])
    builder.build(state, **opts)
    state = state.append(chunks.spawn_subagent("ag1", "researcher", say, id="sp"))
    builder.build(state, **opts)
    for n in range(3):
        state = state.append(chunks.user(say, id=f"u{n + 2}"))

        assert outcome(builder.build, state, opts) == outcome(fresh_build, state, opts)
