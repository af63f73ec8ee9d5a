"""ExtractiveSummarizer: a readable, deterministic summary without a model."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from memctx import CompactionError, MemoryState, chunks
from memctx._render.tokens import TiktokenTokenizer
from memctx.compaction import CompactionPolicy, ExtractiveSummarizer, compact, is_compaction_summary
from memctx.compress._extractive import RECALL_HINT
from memctx.importers import load_openai_transcript

TRAJECTORIES = sorted((Path(__file__).parent.parent / "examples" / "trajectories").glob("*.json"))


@pytest.fixture(scope="module", params=TRAJECTORIES, ids=lambda p: p.name.split("__")[0])
def trajectory(request: pytest.FixtureRequest) -> MemoryState:
    state, _ = load_openai_transcript(json.loads(request.param.read_text()))
    return state


summarize = ExtractiveSummarizer()


class TestTrajectories:
    def test_one_compaction_of_a_real_run(
        self, trajectory: MemoryState, gpt4o: TiktokenTokenizer, context_snapshot: Any
    ) -> None:
        new, report = compact(trajectory, summarize, keep_recent_tokens=4000, tokenizer=gpt4o)
        summary = new.get(report.summary_id)  # type: ignore[arg-type]
        assert context_snapshot == summary.text

    def test_the_summary_after_a_whole_run_under_a_policy(
        self, trajectory: MemoryState, gpt4o: TiktokenTokenizer, context_snapshot: Any
    ) -> None:
        """Replayed chunk by chunk with a 12k trigger: summaries folded into one another."""
        policy = CompactionPolicy(trigger=12_000, keep_recent=6_000)
        state = MemoryState([])
        compactions = 0
        for chunk in trajectory:
            state, report = policy.apply(state.append(chunk), summarize, tokenizer=gpt4o)
            compactions += report.compacted
        assert compactions >= 2
        (summary,) = [c for c in state if is_compaction_summary(c)]
        assert summary.metadata.original_count == len(trajectory) - len(state) + 1
        assert context_snapshot == summary.text


class TestSections:
    def test_the_first_user_message_is_the_goal_and_later_ones_are_requests(self) -> None:
        text = summarize(
            [chunks.user("Fix the bug.\nIt is in main.ts."), chunks.user("Also add a test.")],
            None,
        )
        assert text == (
            "## Goal\n> Fix the bug.\n> It is in main.ts.\n\n## Requests\n- Also add a test."
        )

    def test_calls_show_their_key_arguments_and_outcome(self) -> None:
        text = summarize(
            [
                chunks.tool_call("read_file", {"path": "src/a.py", "limit": 5}, call_id="1"),
                chunks.tool_result("read_file", "line 1\nline 2", call_id="1"),
                chunks.tool_call("bash", {"command": "pytest -x"}, call_id="2"),
                chunks.tool_error("bash", "E   AssertionError: 1 != 2", call_id="2"),
                chunks.tool_call("bash", {"command": "ls"}, call_id="3"),
                chunks.tool_result(
                    "bash",
                    "<returncode>2</returncode>\n<output>\nls: cannot "
                    "access 'x': No such file\n</output>",
                    call_id="3",
                ),
            ],
            None,
        )
        assert "## Done\n- read_file path=src/a.py → ok, 2 lines\n" in text
        assert "- bash `pytest -x` → failed, 1 line\n" in text
        assert "- bash `ls` → exit 2, 1 line" in text
        assert "## Errors\n- bash `pytest -x`: E AssertionError: 1 != 2\n" in text

    def test_files_read_and_changed_are_listed_once(self) -> None:
        text = summarize(
            [
                chunks.tool_call("bash", {"command": "cat src/a.py | grep -n foo"}, call_id="1"),
                chunks.tool_call("bash", {"command": "sed -i 's/a/b/' src/a.py"}, call_id="2"),
                chunks.tool_call(
                    "bash", {"command": "cat > notes.md << 'EOF'\n# x > y\nEOF"}, call_id="3"
                ),
                chunks.tool_call("edit_file", {"path": "src/b.py", "text": "x"}, call_id="4"),
                chunks.tool_call("bash", {"command": "head -5 src/a.py"}, call_id="5"),
            ],
            None,
        )
        assert "## Files\n- read: src/a.py\n- changed: src/a.py, notes.md, src/b.py" in text

    def test_sub_agents_show_their_task_and_result(self) -> None:
        text = summarize(
            [
                chunks.spawn_subagent("r1", "researcher", "Find the spec"),
                chunks.subagent_result("r1", "The cap is 30 s.", success=True),
                chunks.spawn_subagent("r2", "tester", "Run the suite"),
            ],
            None,
        )
        assert (
            "## Sub-agents\n- researcher r1: Find the spec → succeeded: The cap is 30 s.\n"
            "- tester r2: Run the suite → no result yet" in text
        )

    def test_only_the_last_todo_lists_open_items_count(self) -> None:
        text = summarize(
            [
                chunks.todo_update([{"task": "old", "done": False}]),
                chunks.todo_update(
                    [{"task": "read", "done": True}, {"content": "fix", "status": "in_progress"}]
                ),
            ],
            None,
        )
        assert "## Open todos\n- [ ] fix (in_progress)" in text
        assert "old" not in text

    def test_the_last_decisions_are_kept(self) -> None:
        made = [chunks.assistant(f"decision {i}") for i in range(8)]
        text = summarize([*made, chunks.task_completed("done", summary="ok")], None)
        decisions = text.split("## Key decisions\n")[1].splitlines()
        assert decisions == [
            "- decision 4",
            "- decision 5",
            "- decision 6",
            "- decision 7",
            '- (task_completed) {"result": "done", "summary": "ok"}',
        ]

    def test_the_same_chunks_give_the_same_summary(self) -> None:
        made = [chunks.user("go"), chunks.tool_call("bash", {"command": "ls"}, call_id="1")]
        assert summarize(made, None) == summarize(made, None)


class TestFolding:
    def test_a_previous_summary_is_merged_section_by_section(self) -> None:
        first = summarize(
            [
                chunks.user("Ship it."),
                chunks.tool_call("bash", {"command": "cat a.py"}, call_id="1"),
                chunks.tool_result("bash", "x", call_id="1"),
            ],
            None,
        )
        second = summarize(
            [
                chunks.tool_call("bash", {"command": "cat b.py"}, call_id="2"),
                chunks.tool_result("bash", "y", call_id="2"),
            ],
            first,
        )
        assert second == (
            "## Goal\n> Ship it.\n\n"
            "## Done\n- bash `cat a.py` → ok, 1 line\n- bash `cat b.py` → ok, 1 line\n\n"
            "## Files\n- read: a.py, b.py"
        )

    def test_steps_beyond_the_cap_are_counted_not_listed(self) -> None:
        small = ExtractiveSummarizer(max_done=2)
        calls = [
            chunks.tool_call("bash", {"command": f"step {i}"}, call_id=str(i)) for i in range(5)
        ]
        first = small(calls[:3], None)
        second = small(calls[3:], first)
        assert second.split("## Done\n")[1].splitlines() == [
            "(3 earlier steps not listed)",
            "- bash `step 3` → no result",
            "- bash `step 4` → no result",
        ]

    def test_a_summary_written_elsewhere_is_kept_as_earlier_summary(self) -> None:
        text = summarize([chunks.user("Continue.")], "The model wrote this.\nAnd this.")
        assert text.endswith("## Earlier summary\n> The model wrote this.\n> And this.")


class TestSize:
    def test_a_long_history_fits_max_chars_by_listing_fewer_entries(self) -> None:
        calls = [
            chunks.tool_call("bash", {"command": f"step {i} " + "x" * 100}, call_id=str(i))
            for i in range(200)
        ]
        small = ExtractiveSummarizer(max_chars=2000)
        text = small([chunks.user("goal " * 500), *calls], None)
        assert len(text) <= 2000
        done = text.split("## Done\n")[1].splitlines()
        assert done[0] == f"({200 - (len(done) - 1)} earlier steps not listed)"
        assert done[-1].startswith("- bash `step 199 ")

    def test_the_goals_quote_shrinks_before_the_steps_done(self) -> None:
        calls = [
            chunks.tool_call("bash", {"command": f"pytest tests/test_{i}.py"}, call_id=str(i))
            for i in range(20)
        ]
        small = ExtractiveSummarizer(max_chars=1500, max_done=20)
        text = small([chunks.user("goal " * 300), *calls], None)
        assert len(text) <= 1500
        assert "more characters)" in text.split("## Done")[0]
        assert all(f"`pytest tests/test_{i}.py`" in text for i in range(20))

    def test_folding_again_and_again_stays_within_max_chars(self) -> None:
        small = ExtractiveSummarizer(max_chars=1500)
        summary = None
        for round_ in range(20):
            made = [
                chunks.assistant(f"round {round_}: " + "because " * 40),
                chunks.tool_call("bash", {"command": f"make {round_}"}, call_id=f"c{round_}"),
            ]
            summary = small(made, summary)
            assert len(summary) <= 1500
        assert summary is not None
        assert "(20 earlier steps not listed)" not in summary
        assert "- bash `make 19` → no result" in summary

    def test_output_sizes_go_before_any_step_and_every_exit_status_stays(self) -> None:
        made = []
        for i in range(30):
            made += [
                chunks.tool_call("bash", {"command": f"pytest tests/test_{i}.py"}, call_id=str(i)),
                chunks.tool_result("bash", f"<returncode>{i % 3}</returncode>\nok", call_id=str(i)),
            ]
        full = ExtractiveSummarizer(max_chars=10_000)(made, None)
        assert "- bash `pytest tests/test_0.py` → exit 0, 1 line" in full
        limit = len(full) - 100  # too long with the sizes, short enough without them
        text = ExtractiveSummarizer(max_chars=limit)(made, None)
        assert len(text) <= limit
        for i in range(30):
            assert f"- bash `pytest tests/test_{i}.py` → exit {i % 3}\n" in text + "\n"
        assert " line" not in text

    def test_as_many_of_the_newest_steps_are_listed_as_fit(self) -> None:
        calls = [
            chunks.tool_call("bash", {"command": f"make target_{i:03d}"}, call_id=str(i))
            for i in range(100)
        ]
        for limit in (700, 1000, 1500):
            text = ExtractiveSummarizer(max_chars=limit)(calls, None)
            done = text.split("## Done\n")[1].splitlines()
            listed = len(done) - 1
            assert done[0] == f"({100 - listed} earlier steps not listed)"
            assert done[-1] == "- bash `make target_099` → no result"
            older = f"- bash `make target_{99 - listed:03d}` → no result"
            one_more = [f"({99 - listed} earlier steps not listed)", older, *done[1:]]
            assert len("## Done\n" + "\n".join(one_more)) > limit  # one older step: too long

    def test_steps_without_a_command_go_before_any_command(self) -> None:
        made = []
        for i in range(40):
            made.append(chunks.tool_call("read_file", {"path": f"src/m{i}.py"}, call_id=f"r{i}"))
            made.append(chunks.tool_call("bash", {"command": f"make t{i}"}, call_id=f"b{i}"))
        text = ExtractiveSummarizer(max_chars=2000)(made, None)
        done = text.split("## Done\n")[1].split("\n\n")[0].splitlines()
        assert all(f"- bash `make t{i}` → no result" in done for i in range(40))
        reads = [line for line in done if line.startswith("- read_file")]
        assert 0 < len(reads) < 40
        assert reads[-1] == "- read_file path=src/m39.py → no result"  # the oldest went
        assert "src/m0.py" in text.split("## Files\n")[1]  # the reads' paths stay listed

    @pytest.mark.parametrize("field", ["max_done", "line_chars", "max_chars"])
    def test_settings_must_be_counts(self, field: str) -> None:
        with pytest.raises(CompactionError, match=f"ExtractiveSummarizer.{field} must be an int"):
            ExtractiveSummarizer(**{field: -1})


def test_fewer_entries_than_the_cap_are_all_listed() -> None:
    calls = [chunks.tool_call("bash", {"command": f"step {i}"}, call_id=str(i)) for i in range(5)]
    done = ExtractiveSummarizer(max_done=30)(calls, None).split("## Done\n")[1].splitlines()
    assert done == [f"- bash `step {i}` → no result" for i in range(5)]


class TestRecallHint:
    def test_the_hint_ends_the_summary_once_however_often_it_folds(self) -> None:
        hinted = ExtractiveSummarizer(recall_hint=True)
        first = hinted([chunks.tool_call("bash", {"command": "ls"}, call_id="1")], None)
        second = hinted([chunks.tool_call("bash", {"command": "pwd"}, call_id="2")], first)
        assert second.endswith("`recall` tool.")
        assert second.count("`recall` tool") == 1
        assert "- bash `ls` → no result" in second


def test_a_multi_line_command_keeps_its_first_line_verbatim() -> None:
    call = chunks.tool_call("bash", {"command": "cat > a.py << 'EOF'\nx = 1\nEOF"}, call_id="1")
    text = ExtractiveSummarizer()([call], None)
    assert "- bash `cat > a.py << 'EOF' …` → no result" in text


class TestStacked:
    """A summary stacked after earlier ones (``known``) carries only what is new."""

    @staticmethod
    def calls(*commands: str, error: str | None = None) -> list[Any]:
        made: list[Any] = []
        for n, command in enumerate(commands):
            made.append(chunks.tool_call("bash", {"command": command}, call_id=f"k{n}"))
            made.append(chunks.tool_result("bash", "ok", call_id=f"k{n}"))
        if error is not None:
            made.append(chunks.tool_call("bash", {"command": "make"}, call_id="e"))
            made.append(chunks.tool_error("bash", error, call_id="e"))
        return made

    def test_a_new_summary_does_not_repeat_a_file_or_error_line_an_earlier_one_holds(
        self,
    ) -> None:
        earlier = summarize(self.calls("cat src/a.py", error="E   make: no rule"), None)
        assert "src/a.py" in earlier
        assert "no rule" in earlier
        new = self.calls("cat src/a.py", "cat src/b.py", error="E   make: no rule")
        text = summarize(new, None, known=earlier)
        assert "- read: src/b.py" in text  # the new file
        assert "- read: src/a.py" not in text
        assert "## Errors" not in text  # the same error line, already held
        assert "- bash `cat src/b.py` → ok, 1 line" in text  # every step is still listed

    def test_a_file_read_before_and_changed_now_is_listed_as_changed(self) -> None:
        earlier = summarize(self.calls("cat src/a.py"), None)
        text = summarize(self.calls("sed -i 's/x/y/' src/a.py"), None, known=earlier)
        assert "- changed: src/a.py" in text

    def test_a_step_that_only_read_or_edited_a_listed_file_is_left_to_the_files(self) -> None:
        made = [
            chunks.tool_call("read_file", {"path": "src/a.py"}, call_id="r"),
            chunks.tool_result("read_file", "x = 1", call_id="r"),
            chunks.tool_call("read_file", {"path": "src/gone.py"}, call_id="g"),
            chunks.tool_error("read_file", "No such file: src/gone.py", call_id="g"),
            chunks.tool_call("run_tests", {"selector": "tests/test_a.py"}, call_id="t"),
            chunks.tool_result("run_tests", "1 passed", call_id="t"),
        ]
        text = summarize(made, None, known="")
        assert "- read_file path=src/a.py" not in text  # its path is the fact
        assert "- read: src/a.py" in text
        assert "- read_file path=src/gone.py → failed" in text  # a failure stays a step
        assert "- run_tests selector=tests/test_a.py → ok" in text  # no path: a step
        assert "- read_file path=src/a.py" in summarize(made, None)  # alone: every step

    def test_a_later_user_turn_is_a_request_when_the_task_is_known(self) -> None:
        text = summarize([chunks.user("Also add a test.")], None, known="Fix the bug.")
        assert text == "## Requests\n- Also add a test."

    def test_the_recall_hint_is_not_repeated_after_an_earlier_summary_ending_with_it(
        self,
    ) -> None:
        hinted = ExtractiveSummarizer(recall_hint=True)
        earlier = hinted(self.calls("ls"), None)
        assert RECALL_HINT in earlier
        assert RECALL_HINT not in hinted(self.calls("pwd"), None, known=earlier)

    def test_max_chars_given_for_one_summary_replaces_the_cap(self) -> None:
        made = self.calls(*(f"pytest tests/test_{n}.py -k case_{n}" for n in range(200)))
        small = ExtractiveSummarizer(max_chars=1000)
        assert len(small(made, None)) <= 1000
        text = small(made, None, max_chars=20_000)
        assert 1000 < len(text) <= 20_000
        assert all(f"pytest tests/test_{n}.py -k case_{n}" in text for n in range(200))
