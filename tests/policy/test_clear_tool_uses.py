"""ClearToolUses: old outputs become placeholders; calls, ids and pending calls stay."""

from __future__ import annotations

import pytest
from policy_runs import run_of, tool_step

from memctx import MemoryState, PolicyError, chunks
from memctx.compaction import ExtractiveSummarizer
from memctx.compress import compress
from memctx.policy import ClearToolUses, is_cleared


class TestClearing:
    def test_all_but_the_newest_outputs_are_cleared(self, long_run: MemoryState) -> None:
        new = ClearToolUses(keep_recent=3)(long_run)
        cleared = [c for c in new if is_cleared(c)]
        assert len(cleared) == 27
        assert [c.id for c in new][-6:] == [c.id for c in long_run][-6:]

    def test_a_cleared_output_keeps_its_call_id_and_names_its_source(
        self, long_run: MemoryState
    ) -> None:
        new = ClearToolUses(keep_recent=3, placeholder="[gone]")(long_run)
        first = next(c for c in new if is_cleared(c))
        assert (first.text, first.metadata.call_id, first.metadata.derived_from) == (
            "[gone]", "c0", ("res0",),
        )  # fmt: skip
        assert first.metadata.tool == "bash"

    def test_the_calls_stay(self, long_run: MemoryState) -> None:
        new = ClearToolUses(keep_recent=0)(long_run)
        assert [c.id for c in new if c.action == "tool_call"] == [f"call{n}" for n in range(30)]

    def test_excluded_tools_keep_their_outputs(self) -> None:
        state = MemoryState([chunks.user("task"), *tool_step(0, tool="read_file"), *tool_step(1)])
        new = ClearToolUses(keep_recent=0, exclude_tools=["read_file"])(state)
        assert [c.id for c in new if is_cleared(c)] == [new[4].id]
        assert new[2].id == "res0"

    def test_clearing_again_changes_nothing(self, long_run: MemoryState) -> None:
        clear = ClearToolUses(keep_recent=3)
        once = clear(long_run)
        assert clear(once) is once

    def test_a_pending_call_is_never_touched(self) -> None:
        pending = chunks.tool_call("bash", {"command": "make"}, call_id="w", id="waiting")
        state = MemoryState([chunks.user("task"), *tool_step(0), pending, *tool_step(1)])
        new = ClearToolUses(keep_recent=0, clear_inputs=True)(state)
        assert new.get("waiting") == pending

    def test_a_failed_output_keeps_its_exit_status_and_error_line(self) -> None:
        log = (
            "<returncode>1</returncode>\nCollecting erfa\n"
            "ModuleNotFoundError: No module named 'erfa'"
        )
        state = MemoryState(
            [
                chunks.user("task"),
                chunks.tool_call("bash", {"command": "pytest"}, call_id="c0", id="call0"),
                chunks.tool_result("bash", log, call_id="c0", id="res0"),
                *tool_step(1),
            ]
        )
        new = ClearToolUses(keep_recent=1)(state)
        assert new[2].text == (
            "<returncode>1</returncode>\nModuleNotFoundError: No module named 'erfa'\n"
            "[output cleared]"
        )

    def test_a_failure_without_an_exit_status_keeps_its_error_line(self) -> None:
        state = MemoryState(
            [
                chunks.user("task"),
                chunks.tool_call("bash", {"command": "make"}, call_id="c0", id="call0"),
                chunks.tool_error("bash", "make: *** No rule to make target", call_id="c0"),
                *tool_step(1),
            ]
        )
        new = ClearToolUses(keep_recent=1, placeholder="[gone]")(state)
        assert new[2].text == "make: *** No rule to make target\n[gone]"

    def test_a_successful_output_is_only_the_placeholder(self, long_run: MemoryState) -> None:
        new = ClearToolUses(keep_recent=3)(long_run)
        assert {c.text for c in new if is_cleared(c)} == {"[output cleared]"}

    def test_a_summary_of_a_cleared_failure_still_lists_its_error(self) -> None:
        state = MemoryState(
            [
                chunks.tool_call("bash", {"command": "pip install erfa"}, call_id="c0"),
                chunks.tool_result(
                    "bash",
                    "<returncode>1</returncode>\nERROR: No matching distribution",
                    call_id="c0",
                ),
                *tool_step(1),
            ]
        )
        cleared = ClearToolUses(keep_recent=1)(state)
        text = ExtractiveSummarizer()(list(cleared)[:2], None)
        assert "- bash `pip install erfa` → exit 1" in text
        assert "## Errors\n- bash `pip install erfa`: ERROR: No matching distribution" in text

    def test_a_summary_of_a_cleared_success_still_gives_its_exit_status(self) -> None:
        state = MemoryState(
            [
                chunks.tool_call("bash", {"command": "make test"}, call_id="c0"),
                chunks.tool_result(
                    "bash", "<returncode>0</returncode>\n" + "ok " * 300, call_id="c0"
                ),
                *tool_step(1),
            ]
        )
        cleared = ClearToolUses(keep_recent=1)(state)
        assert cleared[1].text == "<returncode>0</returncode>\n[output cleared]"
        text = ExtractiveSummarizer()(list(cleared)[:2], None)
        assert "- bash `make test` → exit 0" in text

    def test_keep_errors_false_clears_failures_to_the_placeholder_too(self) -> None:
        state = MemoryState(
            [
                chunks.user("task"),
                chunks.tool_call("bash", {"command": "make"}, call_id="c0", id="call0"),
                chunks.tool_error("bash", "make: *** No rule", call_id="c0"),
                *tool_step(1),
            ]
        )
        new = ClearToolUses(keep_recent=1, keep_errors=False)(state)
        assert new[2].text == "[output cleared]"

    def test_clear_inputs_empties_the_arguments_of_cleared_calls(
        self, long_run: MemoryState
    ) -> None:
        new = ClearToolUses(keep_recent=29, clear_inputs=True)(long_run)
        call = next(c for c in new if c.action == "tool_call")
        assert (dict(call.content), call.metadata.call_id) == (
            {"cleared": "[output cleared]"},
            "c0",
        )

    def test_it_is_a_lawful_compressor(self, long_run: MemoryState) -> None:
        new, report = compress(long_run, [ClearToolUses(keep_recent=2)])
        assert len(report.replaced_ids) == 28
        assert report.tokens_after < report.tokens_before / 5
        assert report.compressors[0]["name"] == "ClearToolUses"
        assert len(new) == len(long_run)


class TestSettings:
    @pytest.mark.parametrize(
        ("option", "value"),
        [("keep_recent", -1), ("placeholder", ""), ("clear_at_least", 1.5), ("clear_inputs", "yes"),
         ("trigger", 1.5), ("trigger", 0), ("exclude_tools", "bash"), ("keep_errors", 1)],
    )  # fmt: skip
    def test_a_bad_setting_names_its_option(self, option: str, value: object) -> None:
        with pytest.raises(PolicyError, match=option) as caught:
            ClearToolUses(**{option: value})  # type: ignore[arg-type]
        assert caught.value.option == option

    def test_a_trigger_is_a_fraction_or_tokens(self) -> None:
        assert ClearToolUses(trigger=0.5).trigger == 0.5
        assert ClearToolUses(trigger=50_000).trigger == 50_000


def test_run_of_builds_what_it_says() -> None:
    assert len(run_of(2)) == 6
