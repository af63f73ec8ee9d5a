"""strategy="stable": a start that moves in large steps, so request prefixes repeat."""

from __future__ import annotations

import itertools
import json
import subprocess
import sys
from typing import Any

import attrs
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from histories import agent_histories
from memctx import MemctxError, MemoryState, chunks, create_builder, create_tokenizer
from memctx.statefile import dumps_state, loads_state
from strategies import examples

GPT4O = create_tokenizer("gpt-4o")


def agent_run(turns: int) -> list[chunks.Chunk]:  # type: ignore[name-defined]
    """A task, then turns of a tool call and its (varied) output."""
    made = [
        chunks.system("You are a coding agent.", id="sys"),
        chunks.user("Fix it.", id="task", pinned=True),
    ]
    for n in range(turns):
        made.append(chunks.tool_call("sh", {"cmd": f"step {n}"}, call_id=f"c{n}", id=f"call{n}"))
        output = "\n".join(f"line {k} of output {n}" for k in range(5 + (n * 7) % 40))
        made.append(chunks.tool_result("sh", output, call_id=f"c{n}", id=f"out{n}"))
    return made


def replay(budget: int, strategy: str, turns: int = 120) -> list[Any]:
    builder = create_builder(GPT4O)
    state = MemoryState()
    results = []
    for chunk in agent_run(turns):
        state = state.append(chunk)
        if chunk.id.startswith("out"):
            results.append(builder.build(state, max_tokens=budget, strategy=strategy))
    return results


class TestStable:
    def test_the_request_is_the_previous_one_plus_what_was_appended_between_jumps(self) -> None:
        results = replay(4_000, "stable")
        jumps = 0
        for before, after in itertools.pairwise(results):
            first_before = before.included_chunk_ids[2]  # after the system chunk and the task
            first_after = after.included_chunk_ids[2]
            if first_before == first_after:
                # Every chunk sent before is sent again, in the same messages.
                assert after.included_chunk_ids[: len(before.included_chunk_ids)] == (
                    before.included_chunk_ids
                )
                assert after.messages[: len(before.messages) - 1] == before.messages[:-1]
                assert after.prefix_tokens_shared >= before.token_count - 10
            else:
                jumps += 1
        assert 1 <= jumps < len(results) / 5

    def test_shares_far_more_prefix_than_recent_and_uses_most_of_the_budget(self) -> None:
        stable, recent = replay(4_000, "stable"), replay(4_000, "recent")
        steady = slice(len(stable) // 3, None)

        def share(results: list[Any]) -> float:
            return sum(r.prefix_tokens_shared for r in results) / sum(
                r.token_count for r in results
            )

        assert share(stable[steady]) > 0.75
        assert share(stable[steady]) > share(recent[steady]) + 0.3
        usage = sum(r.token_count for r in stable[steady]) / (4_000 * len(stable[steady]))
        assert usage > 0.6

    def test_a_jump_keeps_the_task_and_the_newest_turn(self) -> None:
        results = replay(4_000, "stable")
        for result in results:
            assert {"sys", "task"} <= set(result.included_chunk_ids)
            assert result.included_chunk_ids[-1].startswith("out")
            assert result.token_count <= 4_000

    def test_everything_is_sent_while_it_fits(self) -> None:
        state = MemoryState(agent_run(3))

        stable = create_builder(GPT4O).build(state, max_tokens=100_000, strategy="stable")

        assert stable.excluded_chunk_ids == ()

    def test_a_restarted_process_sends_the_same_request(self, tmp_path: Any) -> None:
        state = MemoryState(agent_run(80))
        builder = create_builder(GPT4O)
        for length in range(10, len(state) + 1, 7):  # a long-lived builder, built along the way
            builder.build(state[:length], max_tokens=1_500, strategy="stable")
        here = builder.build(state, max_tokens=1_500, strategy="stable")
        path = tmp_path / "state.json"
        path.write_text(dumps_state(state), encoding="utf-8")
        code = (
            "import json, sys\n"
            "from memctx import create_builder, create_tokenizer, load_state\n"
            "state = load_state(sys.argv[1])\n"
            "result = create_builder(create_tokenizer('gpt-4o')).build(\n"
            "    state, max_tokens=1500, strategy='stable')\n"
            "print(json.dumps([m.to_dict() for m in result.messages]))\n"
        )
        there = subprocess.run(
            [sys.executable, "-c", code, str(path)], capture_output=True, text=True, check=True
        )

        assert json.loads(there.stdout) == [m.to_dict() for m in here.messages]


@settings(max_examples=examples(60), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_a_builder_that_saw_earlier_states_chooses_what_a_fresh_one_chooses(
    data: st.DataObject,
) -> None:
    state = data.draw(agent_histories())
    budget = data.draw(st.integers(50, 1_500))
    builder = create_builder(GPT4O)
    cuts = sorted(data.draw(st.lists(st.integers(0, len(state)), max_size=5)))
    opts: dict[str, Any] = {"max_tokens": budget, "strategy": "stable", "pin_newest": False}
    for cut in [*cuts, len(state)]:
        partial = state[:cut] if cut < len(state) else state
        try:
            seen = builder.build(partial, **opts)
        except Exception as exc:  # a too-small budget fails alike either way
            with pytest.raises(type(exc)):
                create_builder(GPT4O).build(loads_state(dumps_state(partial)), **opts)
            continue
        fresh = create_builder(GPT4O).build(loads_state(dumps_state(partial)), **opts)
        assert seen.messages == fresh.messages
        assert seen.included_chunk_ids == fresh.included_chunk_ids


@settings(max_examples=examples(150), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_while_the_whole_history_fits_everything_is_sent(data: st.DataObject) -> None:
    """The pass counts what sending each chunk adds (a chunk after one of its role joins
    that message), so it never drops anything from a history that fits whole."""
    state = data.draw(agent_histories())
    provider = data.draw(st.sampled_from([None, "anthropic"]))
    prompt = data.draw(st.sampled_from([None, "Be careful."]))
    unpinned = MemoryState(
        [attrs.evolve(c, metadata=attrs.evolve(c.metadata, pinned=False)) for c in state]
    )
    opts: dict[str, Any] = {"provider": provider, "system_prompt": prompt}
    try:
        whole = create_builder(GPT4O).build(unpinned, strategy="recent", **opts)
    except MemctxError:  # a state this build refuses is not the point here
        return
    budget = whole.token_count + data.draw(st.integers(0, 40))
    try:
        recent = create_builder(GPT4O).build(unpinned, max_tokens=budget, **opts)
    except MemctxError:  # added turns the budget must leave room for
        return
    if recent.excluded_chunk_ids != whole.excluded_chunk_ids:
        return  # the budget is short of the whole history

    stable = create_builder(GPT4O).build(unpinned, max_tokens=budget, strategy="stable", **opts)

    assert stable.included_chunk_ids == whole.included_chunk_ids


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    outputs=st.lists(st.integers(1, 20), min_size=20, max_size=60),
    budget=st.integers(1_000, 3_000),
    cold=st.booleans(),
)
def test_the_start_only_moves_forward_and_stays_put_while_what_follows_fits(
    outputs: list[int], budget: int, cold: bool
) -> None:
    """Built after every turn (by one builder, or by a fresh one each time), the first chunk
    sent after the pins never moves back; while it stays, each request extends the one
    before; and it moves far less often than ``recent``'s (a turn here is at most about a
    seventh of the budget, a move passes at least a fifth of it)."""
    made = [chunks.system("You are a coding agent.", id="sys")]
    made.append(chunks.user("Fix it.", id="task", pinned=True))
    state = MemoryState(made)
    builder = create_builder(GPT4O)
    previous: Any = None
    moves = {"stable": 0, "recent": 0}
    first_recent = None
    for n, lines in enumerate(outputs):
        output = "\n".join(f"line {k} of output {n}" for k in range(lines))
        state = state.append(
            chunks.tool_call("sh", {"cmd": f"step {n}"}, call_id=f"c{n}", id=f"call{n}"),
            chunks.tool_result("sh", output, call_id=f"c{n}", id=f"out{n}"),
        )
        used = create_builder(GPT4O) if cold else builder
        result = used.build(state, max_tokens=budget, strategy="stable")
        recent = builder.build(state, max_tokens=budget)
        if previous is not None:
            before, after = previous.included_chunk_ids[2:], result.included_chunk_ids[2:]
            assert state.index_of(after[0]) >= state.index_of(before[0])
            if after[0] == before[0]:
                assert after[: len(before)] == before
            else:
                moves["stable"] += 1
            moves["recent"] += recent.included_chunk_ids[2] != first_recent
        previous, first_recent = result, recent.included_chunk_ids[2]
    assert moves["stable"] <= moves["recent"] * 3 // 4 + 1
