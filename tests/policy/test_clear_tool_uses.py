"""ClearToolUses: old outputs become placeholders; calls, ids and pending calls stay."""

from __future__ import annotations

import pytest
from policy_runs import run_of, tool_step

from memctx import MemoryState, PolicyError, chunks
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
         ("trigger", 1.5), ("trigger", 0), ("exclude_tools", "bash")],
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
