"""compact() and CompactionPolicy: old history becomes one summary, the thread goes on."""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from invariants import assert_builds_within, assert_lawful
from memctx import Chunk, CompactionError, MemoryState, chunks, create_builder
from memctx._build.builder import counts_of
from memctx._render.tokens import TiktokenTokenizer
from memctx.compaction import (
    CompactionPolicy,
    ExtractiveSummarizer,
    compact,
    is_compaction_summary,
)
from strategies import agent_runs, examples

NOW = dt.datetime(2026, 11, 24, 1, 0, tzinfo=dt.UTC)
NOW_MS = 1_795_482_000_000


class Recorder:
    """A summarizer that records what it was given."""

    def __init__(self) -> None:
        self.calls: list[tuple[list[str], str | None]] = []

    def __call__(self, covered: Sequence[Chunk], previous: str | None) -> str:
        self.calls.append(([c.id for c in covered], previous))
        return f"summary of {len(covered)} chunks" + (" + previous" if previous else "")


def step(n: int, size: int = 40) -> list[Chunk]:
    """One tool call and its result (``size`` words of output)."""
    return [
        chunks.tool_call("bash", {"command": f"step {n}"}, call_id=f"c{n}", id=f"call{n}"),
        chunks.tool_result("bash", "word " * size, call_id=f"c{n}", id=f"res{n}"),
    ]


@pytest.fixture
def long_run() -> MemoryState:
    """A system chunk, a pinned task, ten calls with results, a call still waiting."""
    made = [chunks.system("Be terse.", id="sys"), chunks.user("Do it.", id="task", pinned=True)]
    for n in range(10):
        made += step(n)
    made.append(chunks.tool_call("bash", {"command": "wait"}, call_id="w", id="waiting"))
    made.append(chunks.assistant("waiting for the build", id="last"))
    return MemoryState(made)


class TestCompact:
    def test_everything_older_than_the_kept_tail_becomes_one_summary(
        self, long_run: MemoryState, gpt4o: TiktokenTokenizer
    ) -> None:
        recorder = Recorder()
        new, report = compact(long_run, recorder, keep_recent_tokens=200, tokenizer=gpt4o, now=NOW)
        summary = next(c for c in new if is_compaction_summary(c))
        covered = recorder.calls[0][0]
        assert covered == [
            f"{kind}{n}" for n in range(len(covered) // 2) for kind in ("call", "res")
        ]
        assert summary.metadata.derived_from == tuple(covered)
        assert (summary.metadata.original_count, summary.metadata.compacted_at) == (
            len(covered),
            NOW_MS,
        )
        assert summary.text == f"summary of {len(covered)} chunks"
        # The summary sits where the newest covered chunk was; nothing else moved.
        assert new.ids[:3] == ("sys", "task", summary.id)
        assert report.covered_ids == tuple(covered)
        assert report.tokens_after < report.tokens_before

    def test_system_pinned_and_waiting_chunks_are_never_covered(
        self, long_run: MemoryState, gpt4o: TiktokenTokenizer
    ) -> None:
        recorder = Recorder()
        new, _ = compact(long_run, recorder, keep_recent_tokens=0, tokenizer=gpt4o, now=NOW)
        assert not {"sys", "task", "waiting"} & set(recorder.calls[0][0])
        assert new.ids[:2] == ("sys", "task")
        assert new.ids[-2:] == ("waiting", "last")

    def test_keeping_no_tokens_still_keeps_the_newest_chunk(
        self, long_run: MemoryState, gpt4o: TiktokenTokenizer
    ) -> None:
        new, _ = compact(long_run, Recorder(), keep_recent_tokens=0, tokenizer=gpt4o, now=NOW)
        assert new.ids[-1] == "last"

    def test_a_unit_reaching_into_the_tail_is_not_covered(self, gpt4o: TiktokenTokenizer) -> None:
        state = MemoryState(
            [
                chunks.user("go", id="u"),
                chunks.spawn_subagent("r1", "researcher", "look it up", id="spawn"),
                *step(1, size=300),
                chunks.subagent_result("r1", "found it", id="found"),
            ]
        )
        recorder = Recorder()
        new, _ = compact(state, recorder, keep_recent_tokens=30, tokenizer=gpt4o, now=NOW)
        assert recorder.calls[0][0] == ["u", "call1", "res1"]
        assert (new.ids[0], is_compaction_summary(new[1]), new.ids[2]) == ("spawn", True, "found")

    def test_a_second_compaction_folds_the_previous_summary_in(
        self, long_run: MemoryState, gpt4o: TiktokenTokenizer
    ) -> None:
        recorder = Recorder()
        first, report1 = compact(
            long_run, recorder, keep_recent_tokens=300, tokenizer=gpt4o, now=NOW
        )
        grown = first.extend(step(20) + step(21))
        second, report2 = compact(grown, recorder, keep_recent_tokens=100, tokenizer=gpt4o, now=NOW)
        covered, previous = recorder.calls[1]
        assert previous == f"summary of {len(report1.covered_ids)} chunks"
        assert report1.summary_id not in covered  # handed over as ``previous``, not as a chunk
        assert report2.covered_ids[0] == report1.summary_id
        summaries = [c for c in second if is_compaction_summary(c)]
        assert len(summaries) == 1
        assert summaries[0].metadata.original_count == len(report1.covered_ids) + len(covered)

    def test_nothing_to_cover_gives_the_state_back(self, gpt4o: TiktokenTokenizer) -> None:
        state = MemoryState([chunks.system("s", id="s"), chunks.user("hi", id="u")])
        recorder = Recorder()
        new, report = compact(state, recorder, keep_recent_tokens=0, tokenizer=gpt4o)
        assert new is state
        assert (report.compacted, report.reason, recorder.calls) == (
            False,
            "nothing to compact",
            [],
        )

    def test_a_failing_summarizer_is_reported_and_nothing_changes(
        self, long_run: MemoryState
    ) -> None:
        def broken(covered: Sequence[Chunk], previous: str | None) -> str:
            raise TimeoutError("model timed out")

        with pytest.raises(CompactionError, match="summarizer failed: TimeoutError: model timed"):
            compact(long_run, broken, keep_recent_tokens=0)

    def test_an_empty_summary_is_refused(self, long_run: MemoryState) -> None:
        with pytest.raises(CompactionError, match="non-empty text"):
            compact(long_run, lambda covered, previous: "  ", keep_recent_tokens=0)

    @pytest.mark.parametrize(
        ("options", "message"),
        [({"tokenizer": "gpt-4o"}, "tokenizer: 'gpt-4o' is not a Tokenizer"),
         ({"builder": "x"}, "builder: must be a ContextBuilder")],
    )  # fmt: skip
    def test_a_tokenizer_or_builder_of_the_wrong_kind_is_refused(
        self, long_run: MemoryState, options: dict[str, Any], message: str
    ) -> None:
        with pytest.raises(CompactionError, match=message):
            compact(long_run, ExtractiveSummarizer(), keep_recent_tokens=0, **options)

    @pytest.mark.parametrize("bad", [-1, 1.5, None])
    def test_keep_recent_tokens_must_be_a_count(self, long_run: MemoryState, bad: object) -> None:
        with pytest.raises(CompactionError, match="keep_recent_tokens"):
            compact(long_run, Recorder(), keep_recent_tokens=bad)  # type: ignore[arg-type]

    def test_the_report_reads_as_one_line_and_an_event(
        self, long_run: MemoryState, gpt4o: TiktokenTokenizer
    ) -> None:
        _, report = compact(long_run, Recorder(), keep_recent_tokens=0, tokenizer=gpt4o, now=NOW)
        assert report.summary().startswith(
            f"compacted {len(report.covered_ids)} chunks into summary_"
        )
        event = report.to_event()
        assert event["covered_ids"] == list(report.covered_ids)
        assert (event["tokens_before"], event["tokens_after"]) == (
            report.tokens_before,
            report.tokens_after,
        )


class TestCompactionPolicy:
    def test_keep_must_be_below_the_trigger(self) -> None:
        with pytest.raises(CompactionError, match="must be below trigger"):
            CompactionPolicy(trigger=100, keep_recent=100)

    def test_fractions_are_of_the_budget(self) -> None:
        assert CompactionPolicy(trigger=0.8, keep_recent=0.3).tokens(10_000) == (8000, 3000)

    def test_a_fraction_and_a_count_mix(self) -> None:
        assert CompactionPolicy(trigger=0.5, keep_recent=1000).tokens(8000) == (4000, 1000)

    def test_a_fraction_without_a_budget_is_refused(
        self, long_run: MemoryState, gpt4o: TiktokenTokenizer
    ) -> None:
        with pytest.raises(CompactionError, match="needs the budget"):
            CompactionPolicy().apply(long_run, Recorder(), tokenizer=gpt4o)

    @pytest.mark.parametrize("bad", [0.0, 1.5, -3, "0.8", True, None])
    def test_a_trigger_must_be_a_fraction_or_a_count(self, bad: object) -> None:
        with pytest.raises(CompactionError, match="trigger"):
            CompactionPolicy(trigger=bad)  # type: ignore[arg-type]

    def test_with_a_budget_the_defaults_fire_at_eighty_percent(
        self, long_run: MemoryState, gpt4o: TiktokenTokenizer
    ) -> None:
        total = sum(counts_of(create_builder()).tokens(c, gpt4o) for c in long_run)
        policy = CompactionPolicy()
        _, under = policy.apply(long_run, Recorder(), budget=int(total / 0.8) + 10, tokenizer=gpt4o)
        _, over = policy.apply(long_run, Recorder(), budget=int(total / 0.8) - 10, tokenizer=gpt4o)
        assert (under.compacted, over.compacted) == (False, True)

    def test_under_the_trigger_nothing_happens(
        self, long_run: MemoryState, gpt4o: TiktokenTokenizer
    ) -> None:
        recorder = Recorder()
        policy = CompactionPolicy(trigger=100_000, keep_recent=1000)
        new, report = policy.apply(long_run, recorder, tokenizer=gpt4o)
        assert (new, report.reason, recorder.calls) == (long_run, "under trigger", [])

    def test_it_fires_in_the_middle_of_a_run_of_tool_calls(self, gpt4o: TiktokenTokenizer) -> None:
        policy = CompactionPolicy(trigger=2000, keep_recent=500)
        state = MemoryState([chunks.user("Run the migration.", id="task", pinned=True)])
        fired_after = []
        for n in range(60):  # no user turn in between: only calls and results
            for chunk in step(n):
                state = state.append(chunk)
                state, report = policy.apply(state, ExtractiveSummarizer(), tokenizer=gpt4o)
                if report.compacted:
                    fired_after.append(chunk.id)
        assert len(fired_after) >= 3
        assert all(chunk_id.startswith(("call", "res")) for chunk_id in fired_after)
        builder = create_builder()
        assert sum(counts_of(builder).tokens(c, gpt4o) for c in state) <= 2000

    def test_a_tail_over_the_trigger_is_reported_instead_of_compacted_again_and_again(
        self, gpt4o: TiktokenTokenizer
    ) -> None:
        recorder = Recorder()
        policy = CompactionPolicy(trigger=150, keep_recent=100)
        state = MemoryState([chunks.user("task", id="task", pinned=True)])
        for n in range(5):
            state = state.extend(step(n, size=10))
        state = state.append(chunks.user("word " * 400, id="huge", pinned=True))
        for n in range(5, 8):  # appending more does not start a summary per append
            new, report = policy.apply(state, recorder, tokenizer=gpt4o)
            assert new is state
            assert not report.compacted
            assert "what must stay is over it by itself" in report.reason
            state = state.extend(step(n, size=10))
        assert recorder.calls == []


class TestCompactionProperties:
    @settings(
        max_examples=examples(120), deadline=None, suppress_health_check=[HealthCheck.too_slow]
    )
    @given(state=agent_runs(), keep=st.integers(0, 3000), budget=st.integers(300, 6000))
    def test_compaction_covers_each_chunk_once_splits_nothing_and_builds_within_budget(
        self, state: MemoryState, keep: int, budget: int, gpt4o: TiktokenTokenizer
    ) -> None:
        new, report = compact(
            state, ExtractiveSummarizer(), keep_recent_tokens=keep, tokenizer=gpt4o, now=NOW
        )
        assert_lawful(state, new, dropped=set())
        summaries = [c for c in new if c.id == report.summary_id]
        if report.compacted:
            assert summaries[0].metadata.derived_from == report.covered_ids
        else:
            assert new is state
        assert_builds_within(new, gpt4o, budget)

    @settings(
        max_examples=examples(40), deadline=None, suppress_health_check=[HealthCheck.too_slow]
    )
    @given(state=agent_runs(max_steps=60), trigger=st.integers(200, 3000))
    def test_a_policy_checked_after_every_append_never_compacts_twice_in_a_row_for_nothing(
        self, state: MemoryState, trigger: int, gpt4o: TiktokenTokenizer
    ) -> None:
        policy = CompactionPolicy(trigger=trigger, keep_recent=trigger // 3)
        current = MemoryState([])
        original = state
        previous_compacted = False
        for chunk in original:
            current = current.append(chunk)
            before = current
            current, report = policy.apply(current, ExtractiveSummarizer(), tokenizer=gpt4o)
            if report.compacted:
                # A compaction right after another covers more than the previous summary.
                assert not previous_compacted or len(report.covered_ids) > 1
                assert_lawful(before, current, dropped=set())
            previous_compacted = report.compacted
