"""The team task: stored, capped at 5 KB of UTF-8 on a character boundary, announced."""

from __future__ import annotations

import logging

import pytest
from hypothesis import given
from hypothesis import strategies as st

from memctx import TeamMessageError
from memctx.team import MAX_TEAM_TASK_BYTES, TeamConversation
from memctx.team._values import utf8_prefix
from strategies import wide_texts


class TestSetTeamTask:
    def test_stores_the_task(self, team: TeamConversation) -> None:
        team.set_team_task("Fix the retry cap and get it reviewed.")

        assert team.team_task == "Fix the retry cap and get it reviewed."

    def test_team_task_is_none_initially(self, team: TeamConversation) -> None:
        assert team.team_task is None

    def test_a_task_of_exactly_5kb_is_kept_whole(self, team: TeamConversation) -> None:
        team.set_team_task("x" * 5120)

        assert team.team_task == "x" * 5120

    def test_truncates_at_5kb(self, team: TeamConversation) -> None:
        team.set_team_task("x" * 6000)

        assert team.team_task == "x" * 5120

    def test_never_cuts_a_multibyte_character_in_half(self, team: TeamConversation) -> None:
        # 5,119 one-byte characters, then one of three bytes: it does not fit whole.
        team.set_team_task("a" * 5119 + "无" + "b")

        assert team.team_task == "a" * 5119

    def test_logs_a_warning_on_truncation(
        self, team: TeamConversation, caplog: pytest.LogCaptureFixture
    ) -> None:
        with caplog.at_level(logging.WARNING, logger="memctx.team"):
            team.set_team_task("无" * 2000)  # 6,000 bytes; 1,706 characters fit

        assert caplog.record_tuples == [
            (
                "memctx.team",
                logging.WARNING,
                "[TeamConversation] TeamTask exceeded 5KB limit (6000 bytes), "
                "truncated to 5118 bytes",
            )
        ]

    def test_logs_nothing_when_the_task_fits(
        self, team: TeamConversation, caplog: pytest.LogCaptureFixture
    ) -> None:
        with caplog.at_level(logging.DEBUG, logger="memctx.team"):
            team.set_team_task("short")

        assert caplog.records == []

    def test_calls_on_team_task_changed(self) -> None:
        seen: list[str | None] = []
        team = TeamConversation(on_team_task_changed=seen.append)

        team.set_team_task("x" * 6000)

        assert seen == ["x" * 5120]

    def test_rejects_a_task_that_is_not_a_string(self, team: TeamConversation) -> None:
        with pytest.raises(TeamMessageError, match="Team task must be a string, got NoneType"):
            team.set_team_task(None)  # type: ignore[arg-type]
        assert team.team_task is None

    def test_lone_surrogates_are_replaced_before_measuring(self, team: TeamConversation) -> None:
        team.set_team_task("\ud800" * 2000)  # U+FFFD is 3 bytes: 1,706 fit

        assert team.team_task == "\ufffd" * 1706


class TestFiveKilobyteCut:
    @given(filler=st.integers(min_value=0, max_value=5200), tail=wide_texts)
    def test_the_cut_is_a_utf8_prefix_of_at_most_5120_bytes(self, filler: int, tail: str) -> None:
        task = "x" * filler + tail * 40

        cut = utf8_prefix(task, MAX_TEAM_TASK_BYTES)

        encoded = cut.encode("utf-8")  # valid UTF-8: no half character
        assert len(encoded) <= MAX_TEAM_TASK_BYTES
        assert task.startswith(cut)
        if cut != task:  # the longest such prefix: one more character would not fit
            assert len(task[: len(cut) + 1].encode("utf-8")) > MAX_TEAM_TASK_BYTES

    @given(filler=st.integers(min_value=0, max_value=5200), tail=wide_texts)
    def test_set_team_task_keeps_exactly_that_prefix(self, filler: int, tail: str) -> None:
        team = TeamConversation()
        task = "x" * filler + tail * 40

        team.set_team_task(task)

        assert team.team_task == utf8_prefix(task, MAX_TEAM_TASK_BYTES)
