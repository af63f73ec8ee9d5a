"""ContextPolicy: every request fits, keeps its task and units, and changes only in blocks."""

from __future__ import annotations

import asyncio
import datetime as dt
import itertools
import json
from collections.abc import Sequence

import attrs
import pytest
from policy_runs import run_of, tool_step

from memctx import Chunk, ChunkMetadata, MemoryState, PolicyError, UnknownModelError, chunks
from memctx.compaction import CompactionPolicy, ExtractiveSummarizer, is_compaction_summary
from memctx.policy import ClearToolUses, ContextPolicy, PolicyStep, is_cleared, model_profile
from memctx.replay import replay


def policy(**options: object) -> ContextPolicy:
    settings: dict[str, object] = {
        "max_tokens": 4000,
        "clear_tool_uses": ClearToolUses(keep_recent=2),
        "compaction": CompactionPolicy(trigger=0.8, keep_recent=0.2),
    }
    settings.update(options)
    model = settings.pop("model", "claude-sonnet-4-6")
    return ContextPolicy(model, **settings)  # type: ignore[arg-type]


def agent_loop(p: ContextPolicy, steps: int, size: int = 100) -> list[PolicyStep]:
    """Append one call and its result per model call; keep each step's state."""
    state = run_of(0)
    done = []
    for n in range(steps):
        state = state.extend(tool_step(n, size))
        step = p.step(state)
        done.append(step)
        state = step.state
    return done


def unmarked(request: dict[str, object]) -> list[tuple[str, str]]:
    """The request's message blocks as the prompt cache keys them: role and text, no marks."""
    blocks = []
    for message in request["messages"]:  # type: ignore[attr-defined]
        content = message["content"]
        for block in [{"text": content}] if isinstance(content, str) else content:
            blocks.append((message["role"], block["text"]))
    return blocks


def orphans(chunks_: Sequence[Chunk]) -> int:
    calls = {c.metadata.call_id for c in chunks_ if c.action == "tool_call"}
    results = {c.metadata.call_id for c in chunks_ if c.action == "tool_result"}
    return len(calls ^ results)


class TestBudget:
    def test_the_budget_is_the_window_minus_the_reserve(self) -> None:
        assert ContextPolicy("gpt-4o", reserve_tokens=8000).budget == 120_000

    def test_max_tokens_sets_it(self) -> None:
        assert ContextPolicy("gpt-4o", max_tokens=8000).budget == 8000

    def test_every_request_of_a_long_run_fits(self) -> None:
        steps = agent_loop(policy(), 60)
        assert max(s.token_count for s in steps) <= 4000
        assert all(s.result.token_count <= s.budget for s in steps)


class TestStructure:
    def test_the_task_is_in_every_request(self) -> None:
        for step in agent_loop(policy(), 60):
            assert "task" in step.result.included_chunk_ids
            assert "do not touch the API" in str(step.request)

    def test_no_call_is_ever_separated_from_its_result(self) -> None:
        for step in agent_loop(policy(), 60):
            assert orphans(step.result.included_chunks) == 0

    def test_between_events_a_request_only_grows_at_its_end(self) -> None:
        steps = agent_loop(policy(), 60)
        for before, after in itertools.pairwise(steps):
            if not after.changed:
                old, new = before.result.messages, after.result.messages
                assert new[: len(old) - 1] == old[:-1]

    def test_events_come_in_blocks(self) -> None:
        steps = agent_loop(policy(), 60)
        changed = sum(s.changed for s in steps)
        assert 1 <= changed <= len(steps) // 4

    def test_compaction_keeps_the_system_prompt_and_the_task_in_front(self) -> None:
        steps = agent_loop(policy(clear_tool_uses=None), 60)
        final = steps[-1].state
        assert [c.id for c in final][:2] == ["sys", "task"]
        assert is_compaction_summary(final[2])

    def test_a_clearing_that_makes_room_for_many_requests_is_done_alone(self) -> None:
        step = policy().step(run_of(10, size=200))
        assert step.token_count < 0.5 * policy().budget
        assert [r.kind for r in step.reports] == ["cleared"]

    def test_a_compaction_clears_the_old_outputs_it_keeps_in_the_same_step(self) -> None:
        p = policy(compaction=CompactionPolicy(trigger=0.8, keep_recent=0.5))
        step = next(s for s in agent_loop(p, 60) if s.compacted)
        assert [r.kind for r in step.reports if r.kind != "skipped"] == ["compacted", "cleared"]
        outputs = [c for c in step.state if c.action == "tool_result"]
        assert [is_cleared(c) for c in outputs][-2:] == [False, False]  # keep_recent=2
        assert any(is_cleared(c) for c in outputs)

    def test_a_pending_call_is_never_cleared_or_compacted(self) -> None:
        state = run_of(30).append(
            chunks.tool_call("bash", {"command": "make"}, call_id="w", id="w")
        )
        step = policy(max_tokens=3000).step(state)
        assert step.changed
        assert step.state.get("w") == state.get("w")


class TestAnchoredSummaries:
    @staticmethod
    def summaries(step: PolicyStep) -> list[Chunk]:
        return [c for c in step.state if is_compaction_summary(c)]

    def test_a_compaction_appends_its_summary_after_the_earlier_ones(self) -> None:
        compacted = [s for s in agent_loop(policy(clear_tool_uses=None), 40) if s.compacted]
        first, second = self.summaries(compacted[0]), self.summaries(compacted[1])
        assert len(first) == 1
        assert second[0] == first[0]  # the same chunk: the same text, still in the cache
        assert len(second) == 2
        assert [c.id for c in compacted[1].state][:3] == ["sys", "task", first[0].id]

    def test_past_their_share_of_the_budget_the_summaries_are_folded_into_one(self) -> None:
        p = policy(clear_tool_uses=None)
        steps = agent_loop(p, 160)
        folded = [
            (before, after)
            for before, after in itertools.pairwise(s for s in steps if s.compacted)
            if "folded" in after.reports[-1].reason
        ]
        assert folded
        before, after = folded[0]
        earlier = self.summaries(before)
        assert sum(before.result.chunk_tokens[c.id] for c in earlier) > p.summary_cap
        (summary,) = self.summaries(after)
        covered = summary.metadata.original_count or 0
        assert covered > sum(c.metadata.original_count or 0 for c in earlier)

    @pytest.mark.parametrize(
        ("model", "share"),
        [("claude-sonnet-4-6", 0.5), ("gpt-5", 0.5), ("gpt-4.1", 0.25), ("gemini-2.5-flash", 0.25)],
    )
    def test_where_cache_writes_cost_little_the_summaries_are_folded_sooner(
        self, model: str, share: float
    ) -> None:
        """Unfolded summaries are read on every request; folding them is one write."""
        p = ContextPolicy(model, max_tokens=8000, compaction=CompactionPolicy())
        assert p.summary_cap == int(share * 8000)

    def test_the_first_compaction_folds_nothing(self) -> None:
        compacted = next(s for s in agent_loop(policy(clear_tool_uses=None), 40) if s.compacted)
        assert "folded" not in compacted.reports[-1].reason

    def test_a_later_compaction_reads_the_earlier_summaries_from_the_cache(self) -> None:
        # A system prompt long enough to be cached (Claude Sonnet: from 1,024 tokens).
        run = MemoryState(
            [chunks.system("You fix bugs. " * 300, id="sys"), *run_of(0)[1:]], thread_id="run"
        ).extend(c for n in range(80) for c in tool_step(n, 100))
        report = replay(run, policy(clear_tool_uses=None, max_tokens=6000))
        reads = [r.cache_read_tokens for r in report.requests if "compacted" in r.events]
        # The first reads the system prompt and the task; the next ones also the summaries.
        assert len(reads) >= 3
        assert reads[0] > 0
        assert reads[1] > reads[0]
        assert report.cache_breaks <= sum(bool(r.events) for r in report.requests)

    def test_summaries_too_large_for_the_budget_are_folded_not_sent_over_it(self) -> None:
        big = [
            attrs.evolve(
                chunks.progress_summary(f"## Done\n- step {n} " + "word " * 500, id=f"s{n}"),
                metadata=ChunkMetadata(derived_from=(f"x{n}",), original_count=3),
            )
            for n in range(3)
        ]
        state = MemoryState([*run_of(0), *big], thread_id="run").extend(tool_step(0, 300))
        p = policy(max_tokens=2000, compaction=CompactionPolicy(trigger=0.8, keep_recent=0.1))
        step = p.step(state)
        assert step.token_count <= 2000
        assert len([c for c in step.state if is_compaction_summary(c)]) == 1


class TestWhatTheSummaryKeeps:
    def test_a_fold_keeps_every_command_when_the_room_allows_dropping_prose_first(
        self,
    ) -> None:
        """The summaries are folded into one as large as the room before the trigger
        allows, not into one of the size each summary had: their remarks go, the commands
        stay."""
        p = policy(
            max_tokens=8000,
            clear_tool_uses=ClearToolUses(keep_recent=1),
            compaction=CompactionPolicy(trigger=0.8, keep_recent=0.02),
        )
        state = run_of(0)
        folded = None
        for n in range(120):
            state = state.extend(
                [
                    chunks.assistant(
                        f"Step {n}: " + "I will look at the next module and think. " * 8
                    ),
                    chunks.tool_call(
                        "bash", {"command": f"pytest tests/test_m{n}.py -k c{n}"}, call_id=f"c{n}"
                    ),
                    chunks.tool_result(
                        "bash", "<returncode>0</returncode>\n" + f"out{n} " * 150, call_id=f"c{n}"
                    ),
                ]
            )
            step = p.step(state)
            state = step.state
            if any("folded" in r.reason for r in step.reports):
                folded = (n, step)
                break
        assert folded is not None
        n, step = folded
        (summary,) = [c for c in step.state if is_compaction_summary(c)]
        assert len(summary.text) > p.summarizer.max_chars  # type: ignore[union-attr]
        kept = json.dumps([c.content for c in step.state if c.action == "tool_call"])
        for k in range(n + 1):
            command = f"pytest tests/test_m{k}.py -k c{k}"
            assert f"{command}` → exit 0" in summary.text or command in kept

    def test_a_stacked_summary_does_not_repeat_the_files_an_earlier_one_lists(self) -> None:
        p = policy(clear_tool_uses=None)
        state = run_of(0)
        for n in range(20):
            state = state.extend(tool_step(n, 100))
            state = state.extend(
                [
                    chunks.tool_call("bash", {"command": "cat src/util.py"}, call_id=f"r{n}"),
                    chunks.tool_result("bash", "x = 1\n" * 50, call_id=f"r{n}"),
                ]
            )
            state = p.step(state).state
        summaries = [c for c in state if is_compaction_summary(c)]
        assert len(summaries) >= 2
        files = [line for c in summaries for line in c.text.splitlines() if "- read:" in line]
        assert sum("src/util.py" in line for line in files) == 1

    def test_the_commands_run_stay_in_the_request_with_their_exit_status(self) -> None:
        p = policy(max_tokens=8000, clear_tool_uses=ClearToolUses(keep_recent=1))
        state = run_of(0)
        for n in range(100):
            command = f"pytest tests/unit/test_module_{n}.py -k case_{n} -x"
            output = f"<returncode>{n % 3}</returncode>\n" + f"out{n} " * 300
            state = state.extend(
                [
                    chunks.tool_call("bash", {"command": command}, call_id=f"c{n}"),
                    chunks.tool_result("bash", output, call_id=f"c{n}"),
                ]
            )
            step = p.step(state)
            state = step.state
        text = json.dumps(step.request, ensure_ascii=False)
        kept = {c.metadata.call_id for c in step.state if c.action == "tool_call"}
        summarised = [n for n in range(70, 100) if f"c{n}" not in kept]
        assert len(summarised) >= 20
        for n in summarised:  # verbatim in the summary, with their exit status
            assert f"pytest tests/unit/test_module_{n}.py -k case_{n} -x` → exit {n % 3}" in text


class TestRequest:
    def test_anthropic_marks_at_most_four_breakpoints_one_ending_the_stable_prefix(
        self,
    ) -> None:
        step = agent_loop(policy(), 40)[-1]
        request = step.request
        marks = [b for m in request["messages"] if isinstance(m["content"], list)
                 for b in m["content"] if "cache_control" in b]  # fmt: skip
        system_marks = [b for b in request["system"] if "cache_control" in b]
        assert 1 <= len(marks) + len(system_marks) <= 4
        first = request["messages"][0]["content"]
        # The task is a block of its own, each summary after it another; the mark ends them.
        assert "do not touch the API" in first[0]["text"]
        assert "progress_summary" not in first[0]["text"]
        summaries = [c for c in step.state if is_compaction_summary(c)]
        assert summaries
        stable_end = first[len(summaries)]
        assert stable_end["text"].startswith("<progress_summary")
        assert stable_end["cache_control"] == {"type": "ephemeral", "ttl": "1h"}
        assert all(b["cache_control"]["ttl"] == "1h" for b in system_marks)

    def test_the_block_before_the_first_summary_is_marked_too(self) -> None:
        step = agent_loop(policy(), 40)[-1]
        first = step.request["messages"][0]["content"]
        assert "do not touch the API" in first[0]["text"]
        assert first[0]["cache_control"] == {"type": "ephemeral", "ttl": "1h"}
        marks = [b for m in step.request["messages"] for b in m["content"] if "cache_control" in b]
        system_marks = [b for b in step.request["system"] if "cache_control" in b]
        assert len(marks) + len(system_marks) <= 4

    def test_a_call_answered_between_events_leaves_the_blocks_as_they_were(self) -> None:
        p = policy(clear_tool_uses=None)
        compacted = p.step(run_of(0).extend(c for n in range(30) for c in tool_step(n, 100)))
        assert compacted.compacted
        waiting = chunks.tool_call("bash", {"command": "make"}, call_id="w", id="w")
        state = compacted.state.extend([waiting, chunks.thinking("meanwhile", id="t")])
        first = p.step(state.extend(tool_step(30, 20)))
        answer = chunks.tool_result("bash", "done", call_id="w", id="w-out")
        second = p.step(first.state.extend([*tool_step(31, 20), answer]))
        assert not first.changed
        assert not second.changed
        before, after = unmarked(first.request), unmarked(second.request)
        assert after[: len(before) - 1] == before[: len(before) - 1]

    def test_without_a_long_lifetime_the_stable_marks_take_the_default(self) -> None:
        sonnet = model_profile("claude-sonnet-4-6")
        short = attrs.evolve(
            sonnet, name="sonnet-5m", cache=attrs.evolve(sonnet.cache, lifetimes=(300.0,))
        )
        step = agent_loop(policy(model=short), 40)[-1]
        marks = [b for m in step.request["messages"] for b in m["content"] if "cache_control" in b]
        assert marks
        assert all(b["cache_control"] == {"type": "ephemeral"} for b in marks)

    def test_openai_gets_messages(self) -> None:
        step = ContextPolicy("gpt-4o", max_tokens=4000).step(run_of(3))
        assert step.request["messages"][0]["role"] == "system"

    def test_gemini_gets_contents_and_config(self) -> None:
        step = ContextPolicy("gemini-2.5-flash", max_tokens=4000).step(run_of(3))
        assert set(step.request) == {"contents", "config"}


class TestEconomy:
    def test_a_clearing_that_saves_little_is_skipped(self) -> None:
        p = policy(compaction=None, clear_tool_uses=ClearToolUses(keep_recent=0, trigger=10))
        step = p.step(run_of(3, size=20))
        assert (step.changed, step.events) == (False, ("skipped",))
        assert "not worth it" in step.reports[0].reason

    def test_clear_at_least_is_honoured(self) -> None:
        p = policy(
            compaction=None, clear_tool_uses=ClearToolUses(keep_recent=0, clear_at_least=10**6)
        )
        step = p.step(run_of(30))
        assert not step.changed
        assert "clear_at_least" in step.reports[0].reason


class TestCalibration:
    def test_a_provider_counting_twice_as_many_halves_the_budget(self) -> None:
        p = policy()
        first = p.step(run_of(2))
        second = p.step(run_of(3), usage={"input_tokens": 2 * first.token_count})
        assert second.budget == 2000
        assert "calibrated" in second.events

    def test_sdk_usage_objects_are_read(self) -> None:
        class Usage:
            input_tokens = 10
            cache_read_input_tokens = 900
            cache_creation_input_tokens = 100

        p = policy()
        first = p.step(run_of(2))
        second = p.step(run_of(2), usage=Usage())
        assert second.budget == min(4000, int(4000 / (1010 / first.token_count)))

    def test_a_usage_without_counts_is_refused(self) -> None:
        with pytest.raises(PolicyError, match="usage"):
            policy().step(run_of(2), usage={"output_tokens": 3})

    def test_an_overflow_shrinks_at_once(self) -> None:
        p = policy()
        state = run_of(2)
        calm = p.step(state)
        assert not calm.changed
        shrunk = p.step(state, overflowed=True)
        assert "overflowed" in shrunk.events
        assert shrunk.changed
        assert shrunk.token_count < calm.token_count


class Failing:
    def __call__(self, covered: Sequence[Chunk], previous: str | None) -> str:
        raise RuntimeError("model down")


class TestBadInput:
    def test_an_unknown_model(self) -> None:
        with pytest.raises(UnknownModelError):
            ContextPolicy("gpt-17")

    def test_a_reserve_larger_than_the_window(self) -> None:
        with pytest.raises(PolicyError, match="reserve_tokens") as caught:
            ContextPolicy("gpt-4o", reserve_tokens=200_000)
        assert caught.value.option == "reserve_tokens"

    def test_max_tokens_above_the_window(self) -> None:
        with pytest.raises(PolicyError, match="max_tokens"):
            ContextPolicy("gpt-4o", max_tokens=500_000)

    def test_a_trigger_above_the_window(self) -> None:
        with pytest.raises(PolicyError, match=r"compaction\.trigger"):
            ContextPolicy("gpt-4o", compaction=CompactionPolicy(trigger=300_000, keep_recent=1000))

    def test_a_clearing_trigger_above_the_window(self) -> None:
        with pytest.raises(PolicyError, match=r"clear_tool_uses\.trigger"):
            ContextPolicy("gpt-4o", clear_tool_uses=ClearToolUses(trigger=300_000))

    @pytest.mark.parametrize("summarizer", [Failing(), lambda covered, previous: "  "])
    def test_a_summarizer_that_fails_names_the_option_and_changes_nothing(
        self, summarizer: object
    ) -> None:
        p = policy(clear_tool_uses=None, summarizer=summarizer, max_tokens=3000)
        state = run_of(30)
        ids = state.ids
        with pytest.raises(PolicyError, match="summarizer") as caught:
            p.step(state)
        assert caught.value.option == "summarizer"
        assert state.ids == ids
        assert p.step(run_of(1)).token_count > 0

    @pytest.mark.parametrize(
        ("option", "value"),
        [("strategy", "priority"), ("tools", "xml"), ("compaction", 0.8), ("summarizer", 3),
         ("clear_tool_uses", True)],
    )  # fmt: skip
    def test_a_bad_option_is_named(self, option: str, value: object) -> None:
        with pytest.raises(PolicyError, match=option):
            ContextPolicy("gpt-4o", **{option: value})  # type: ignore[arg-type]

    def test_an_async_summarizer_needs_astep(self) -> None:
        async def summarize(covered: Sequence[Chunk], previous: str | None) -> str:
            return "summary"

        p = policy(clear_tool_uses=None, summarizer=summarize, max_tokens=3000)
        with pytest.raises(PolicyError, match="astep"):
            p.step(run_of(30))


class TestAsync:
    def test_an_async_summarizer_is_awaited(self) -> None:
        seen: list[int] = []

        async def summarize(covered: Sequence[Chunk], previous: str | None) -> str:
            await asyncio.sleep(0)
            seen.append(len(covered))
            return "## Done\n- the first calls"

        p = policy(clear_tool_uses=None, summarizer=summarize, max_tokens=3000)
        step = asyncio.run(p.astep(run_of(30)))
        assert step.compacted
        assert seen
        assert "the first calls" in str(step.request)

    def test_astep_gives_what_step_gives(self) -> None:
        state = run_of(30)
        now = dt.datetime(2026, 5, 1, tzinfo=dt.UTC)
        sync = policy(summarizer=ExtractiveSummarizer()).step(state, now=now)
        done = asyncio.run(policy(summarizer=ExtractiveSummarizer()).astep(state, now=now))
        assert (done.state.ids[:2], done.events, done.token_count) == (
            sync.state.ids[:2], sync.events, sync.token_count,
        )  # fmt: skip


def test_a_state_must_be_a_state() -> None:
    with pytest.raises(PolicyError, match="state"):
        policy().step([])  # type: ignore[arg-type]


def test_reports_say_what_and_why() -> None:
    step = policy(max_tokens=3000).step(run_of(30))
    assert step.reports
    assert all(r.summary().startswith(r.kind) for r in step.reports)
    assert MemoryState(step.state.chunks) == step.state.with_thread_id(None)


def test_with_recall_the_summary_points_to_the_recall_tool() -> None:
    step = policy(max_tokens=3000, clear_tool_uses=None, recall=True).step(run_of(30))
    assert step.compacted
    assert "`recall` tool" in str(step.request)
