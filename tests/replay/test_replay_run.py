"""replay(): the request before each assistant turn, rebuilt under a policy or a baseline."""

from __future__ import annotations

import datetime as dt
import itertools
import json
from pathlib import Path
from typing import Any

import attrs
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from replay_runs import T0, BlockPolicy, Step, agent_run

from histories import agent_histories
from memctx import (
    MemoryState,
    ReplayError,
    UnknownModelError,
    chunks,
    create_builder,
    save_state,
)
from memctx.compaction import CompactionPolicy
from memctx.policy import ClearToolUses, ContextPolicy, model_profile
from memctx.replay import ReplayReport, default_policy, load_run, replay
from memctx.replay._run import orphaned_tool_calls, request_points
from strategies import examples, recorded_runs

ROOT = Path(__file__).resolve().parents[2]
TRAJECTORIES = sorted((ROOT / "examples" / "trajectories").glob("*.traj.json"))


class TestRequestPoints:
    def test_a_model_call_precedes_each_assistant_turn(self) -> None:
        run = agent_run(3)  # sys, task, then (say, call, output) x 3

        assert request_points(run, create_builder()) == [2, 5, 8]

    def test_the_assistants_text_and_its_calls_are_one_turn(self) -> None:
        run = MemoryState(
            [
                chunks.user("go", id="u"),
                chunks.assistant("ok", id="a"),
                chunks.tool_call("sh", {}, call_id="c", id="c1"),
                chunks.thinking("hm", id="t"),
            ]
        )

        assert request_points(run, create_builder()) == [1]

    def test_the_bundled_trajectories_make_133_model_calls(self) -> None:
        run = load_run(*TRAJECTORIES)

        assert len(replay(run, "recent", model="gpt-4o", max_tokens=8_000).requests) == 133


class TestStrategies:
    def test_sending_everything_reads_all_the_previous_request_left(self) -> None:
        report = replay(agent_run(8), "none", model="claude-sonnet-4-6")
        requests = report.requests

        # Under 1,024 tokens nothing is written; then each request reads what the last left.
        assert [r.cache_write_tokens for r in requests[:3]] == [0, 0, 0]
        for before, after in itertools.pairwise(requests[3:]):
            assert after.cache_read_tokens == before.cache_read_tokens + before.cache_write_tokens
        assert report.cache_breaks == 0

    def test_openai_reads_whole_steps_of_128_tokens_from_1024(self) -> None:
        report = replay(agent_run(8), "none", model="gpt-4o")

        reads = [r.cache_read_tokens for r in report.requests]
        assert all(r == 0 or (r >= 1024 and (r - 1024) % 128 == 0) for r in reads)
        assert reads[-1] > 0

    def test_a_budgeted_strategy_stays_in_the_budget(self) -> None:
        for name in ("recent", "stable", "rolling"):
            report = replay(agent_run(10), name, model="gpt-4o", max_tokens=1_500)

            assert report.peak_tokens <= 1_500
            assert report.budget_violations == 0
            assert report.orphaned_tool_calls == 0

    def test_sending_everything_counts_the_requests_over_the_budget(self) -> None:
        report = replay(agent_run(10), "none", model="gpt-4o", max_tokens=1_500)

        assert report.budget_violations == sum(r.input_tokens > 1_500 for r in report.requests)
        assert report.budget_violations > 0

    def test_a_pause_longer_than_the_lifetime_reads_nothing_and_breaks_nothing(self) -> None:
        # Three chunks between requests, 200 s apart: 10 minutes, twice the lifetime.
        report = replay(agent_run(8, gap_seconds=200), "none", model="claude-sonnet-4-6")

        assert report.cache_read_tokens == 0
        assert report.cache_breaks == 0

    def test_a_request_happens_at_the_time_of_the_chunk_before_it(self) -> None:
        report = replay(agent_run(2, gap_seconds=7), "none", model="gpt-4o")

        assert [r.at for r in report.requests] == [
            T0 + dt.timedelta(seconds=7),
            T0 + dt.timedelta(seconds=28),
        ]

    def test_a_path_is_read_as_a_run(self, tmp_path: Path) -> None:
        save_state(agent_run(3), tmp_path / "run.json")

        assert replay(tmp_path / "run.json", "none", model="gpt-4o") == replay(
            agent_run(3), "none", model="gpt-4o"
        )


class TestPolicies:
    def test_the_replay_goes_on_from_the_state_the_policy_returned(self) -> None:
        policy = BlockPolicy()
        run = agent_run(10)

        report = replay(run, policy)

        assert len(report.requests) == 10
        # After the fifth call compacted, the states handed over are shorter than the run.
        assert policy.seen[5] < request_points(run, create_builder())[5]
        assert report.compactions == 2
        assert report.clearings == 3
        assert [r.events for r in report.requests[:6]] == [
            (),
            (),
            ("clearing",),
            (),
            ("compaction",),
            ("clearing",),
        ]

    def test_a_context_policy_is_replayed_inside_its_budget(self) -> None:
        report = replay(agent_run(30), default_policy("claude-sonnet-4-6", 3_000))

        assert (report.label, report.model, report.budget) == (
            "ContextPolicy",
            "claude-sonnet-4-6",
            3_000,
        )
        assert report.peak_tokens <= 3_000
        assert (report.budget_violations, report.orphaned_tool_calls) == (0, 0)
        assert report.compactions > 0
        assert report.cache_read_share > 0.5

    def test_clearings_and_compactions_are_counted(self) -> None:
        policy = ContextPolicy(
            "claude-sonnet-4-6",
            max_tokens=3_000,
            clear_tool_uses=ClearToolUses(keep_recent=1),
            compaction=CompactionPolicy(trigger=0.8, keep_recent=0.5),
        )
        report = replay(agent_run(30), policy)

        assert report.clearings > 0
        assert report.compactions > 0
        assert report.clearings == sum("cleared" in r.events for r in report.requests)

    def test_the_policys_model_and_budget_are_the_defaults(self) -> None:
        report = replay(agent_run(4), BlockPolicy(budget=3_000))

        assert (report.model, report.budget, report.label) == (
            "claude-sonnet-4-6",
            3_000,
            "BlockPolicy",
        )

    def test_a_policy_without_a_model_needs_one(self) -> None:
        @attrs.define
        class Nameless:
            def step(self, state: MemoryState) -> Step:
                raise AssertionError("never called")

        with pytest.raises(ReplayError, match="model"):
            replay(agent_run(2), Nameless())


class TestOrphans:
    def test_a_result_sent_without_its_call_is_an_orphan(self) -> None:
        run = agent_run(2)
        result = create_builder().build(
            run, include_only_chunk_ids=["sys", "task", "say0", "out0", "say1", "call1", "out1"]
        )

        assert orphaned_tool_calls(result, run) == 1

    def test_a_call_sent_without_the_result_the_run_has_is_an_orphan(self) -> None:
        run = agent_run(2)
        result = create_builder().build(run, include_only_chunk_ids=["task", "call0", "call1"])

        assert orphaned_tool_calls(result, run) == 2

    def test_a_call_still_waiting_for_its_result_is_no_orphan(self) -> None:
        run = agent_run(1).append(chunks.tool_call("sh", {}, call_id="late", id="pending"))

        assert orphaned_tool_calls(create_builder().build(run), run) == 0


class TestBadInput:
    def test_an_unknown_strategy_is_named(self) -> None:
        with pytest.raises(ReplayError, match="unknown strategy 'fast'") as caught:
            replay(agent_run(1), "fast", model="gpt-4o")
        assert caught.value.option == "strategy"

    def test_a_strategy_needs_a_model(self) -> None:
        with pytest.raises(ReplayError) as caught:
            replay(agent_run(1), "stable")
        assert caught.value.option == "model"

    def test_an_unknown_model_is_an_unknown_model_error(self) -> None:
        with pytest.raises(UnknownModelError):
            replay(agent_run(1), "stable", model="gpt-nine")

    @pytest.mark.parametrize("max_tokens", [0, -5, 1.5, True, "8000"])
    def test_a_budget_must_be_a_positive_int(self, max_tokens: Any) -> None:
        with pytest.raises(ReplayError) as caught:
            replay(agent_run(1), "stable", model="gpt-4o", max_tokens=max_tokens)
        assert caught.value.option == "max_tokens"

    def test_neither_a_policy_nor_a_strategy_is_refused(self) -> None:
        with pytest.raises(ReplayError, match="policy_or_strategy"):
            replay(agent_run(1), 42, model="gpt-4o")  # type: ignore[arg-type]

    def test_a_run_that_is_no_state_is_refused(self) -> None:
        with pytest.raises(ReplayError, match="run"):
            replay([chunks.user("hi")], "none", model="gpt-4o")  # type: ignore[arg-type]


class TestLoadRun:
    def test_a_trajectory_keeps_the_recorded_times_of_its_messages(self) -> None:
        path = TRAJECTORIES[0]
        messages = json.loads(path.read_text(encoding="utf-8"))["messages"]
        stamp = messages[2]["extra"]["timestamp"]

        run = load_run(path)

        assert run.chunks[2].created_at == dt.datetime.fromtimestamp(stamp, tz=dt.UTC)
        times = [c.created_at for c in run]
        assert times == sorted(times)

    def test_several_files_are_one_run_one_after_the_other(self) -> None:
        runs = [load_run(p) for p in TRAJECTORIES]

        joined = load_run(*TRAJECTORIES)

        assert len(joined) == sum(len(r) for r in runs)
        assert joined.chunks[0].id == f"{TRAJECTORIES[0].name.removesuffix('.traj.json')}:msg0"
        second = joined.chunks[len(runs[0])]
        assert second.created_at - joined.chunks[len(runs[0]) - 1].created_at == dt.timedelta(
            seconds=1
        )

    def test_a_state_file_is_read_as_it_is(self, tmp_path: Path) -> None:
        save_state(agent_run(2), tmp_path / "run.json")

        assert load_run(tmp_path / "run.json").chunks == agent_run(2).chunks

    @pytest.mark.parametrize(
        ("text", "message"),
        [
            ("{", "not JSON"),
            ('{"version": 1, "chunks": [{"id": 3}]}', "run.json"),
            ('{"hello": "world"}', "neither a memctx state file nor a chat transcript"),
        ],
    )
    def test_a_file_that_is_no_run_is_named(self, tmp_path: Path, text: str, message: str) -> None:
        path = tmp_path / "run.json"
        path.write_text(text, encoding="utf-8")

        with pytest.raises(ReplayError, match=message) as caught:
            load_run(path)
        assert caught.value.option == "run"

    def test_a_missing_file_is_named(self, tmp_path: Path) -> None:
        with pytest.raises(ReplayError, match=r"nothing\.json"):
            load_run(tmp_path / "nothing.json")


def _timed(state: MemoryState) -> MemoryState:
    """The history with its chunks a minute apart."""
    return MemoryState(
        attrs.evolve(c, created_at=T0 + dt.timedelta(minutes=n)) for n, c in enumerate(state)
    )


class TestTotals:
    @settings(
        max_examples=examples(60), deadline=None, suppress_health_check=[HealthCheck.too_slow]
    )
    @given(
        history=st.one_of(recorded_runs(), agent_histories().map(_timed)),
        strategy=st.sampled_from(["none", "recent", "stable", "rolling"]),
        model=st.sampled_from(
            ["claude-sonnet-4-6", "claude-haiku-4-5", "gpt-4o", "gemini-2.5-flash"]
        ),
        budget=st.sampled_from([None, 600, 2_000, 8_000]),
    )
    def test_every_request_adds_up_and_the_report_sums_them(
        self,
        history: MemoryState,
        strategy: str,
        model: str,
        budget: int | None,
    ) -> None:
        profile = model_profile(model)
        dearest = max(1.0, profile.cache_write_multiplier, profile.cache_write_1h_multiplier)
        cheapest = min(1.0, profile.cache_read_multiplier)

        report = replay(history, strategy, model=model, max_tokens=budget)

        for r in report.requests:
            assert r.cache_read_tokens + r.cache_write_tokens + r.uncached_tokens == r.input_tokens
            assert min(r.cache_read_tokens, r.cache_write_tokens, r.uncached_tokens) >= 0
            assert r.cost <= r.cost_without_cache * dearest + 1e-12
            assert r.cost >= r.cost_without_cache * cheapest - 1e-12
            assert r.budget_violation == (r.input_tokens > (budget or profile.context_window))
        assert [r.index for r in report.requests] == list(range(len(report.requests)))
        assert report.input_tokens == sum(r.input_tokens for r in report.requests)
        assert report.input_tokens == (
            report.cache_read_tokens + report.cache_write_tokens + report.uncached_tokens
        )
        assert report.cost == pytest.approx(sum(r.cost for r in report.requests))
        assert 0.0 <= report.cache_read_share <= 1.0
        assert report.peak_tokens == max((r.input_tokens for r in report.requests), default=0)
        assert report.cache_breaks <= len(report.requests)
        json.dumps(report.to_dict())

    def test_an_empty_run_has_no_requests(self) -> None:
        report = replay(MemoryState(), "stable", model="gpt-4o")

        assert report == ReplayReport((), model="gpt-4o", label="stable")
        assert (report.cache_read_share, report.cost_ratio, report.peak_tokens) == (0.0, 0.0, 0)


class TestOverBudget:
    def test_a_newest_output_over_the_budget_is_sent_alone_and_reported(self) -> None:
        run = agent_run(4, output_lines=30).extend(
            [
                chunks.assistant("Reading the big log.", id="say-big"),
                chunks.tool_call("sh", {"cmd": "cat log"}, call_id="big", id="call-big"),
                chunks.tool_result("sh", "log line\n" * 900, call_id="big", id="out-big"),
                chunks.assistant("Done.", id="done"),
            ]
        )

        report = replay(run, "recent", model="gpt-4o", max_tokens=1_500)

        last = report.requests[-1]
        assert last.budget_violation
        assert report.budget_violations == 1
        # What must be kept (system, task, the newest unit), not the whole history.
        assert last.input_tokens < replay(run, "none", model="gpt-4o").requests[-1].input_tokens
