"""context_for_agent: the window, stripping, addressees, de-duplication, pass-through."""

from __future__ import annotations

import logging

import pytest

from memctx import BuildOptionError, TeamMessageError
from memctx.team import (
    DEFAULT_MAX_BYTES,
    AgentContext,
    PromptMessage,
    Speaker,
    TeamConversation,
    TeamMessage,
    format_addressees,
)
from memctx.team._context import deduplicate


def contents(ctx: AgentContext) -> list[str]:
    return [m.content for m in ctx.context_messages]


class TestContextForAgent:
    def test_returns_the_empty_context_when_there_are_no_messages(
        self, team: TeamConversation
    ) -> None:
        team.set_team_task("the task")

        ctx = team.context_for_agent(
            "coder", "claude", system_instruction="be terse", instruction_file_text="rules"
        )

        assert ctx == AgentContext((), "", "the task", "be terse", "rules", DEFAULT_MAX_BYTES)

    def test_the_latest_message_is_the_current_one_and_not_in_the_context(
        self, team: TeamConversation, lena: Speaker, coder: Speaker
    ) -> None:
        team.add_message("first", speaker=lena)
        team.add_message("second", speaker=coder)

        ctx = team.context_for_agent("reviewer", "claude")

        assert ctx.current_message == "second"
        assert ctx.context_messages == (PromptMessage("Lena", "all", "first"),)

    def test_applies_the_window_size(self, lena: Speaker) -> None:
        team = TeamConversation(window_size=3)
        for i in range(1, 8):
            team.add_message(f"m{i}", speaker=lena)

        ctx = team.context_for_agent("coder", "codex")

        assert contents(ctx) == ["m4", "m5", "m6"]
        assert ctx.current_message == "m7"

    def test_the_default_window_is_five_messages(
        self, team: TeamConversation, lena: Speaker
    ) -> None:
        for i in range(1, 10):
            team.add_message(f"m{i}", speaker=lena)

        assert contents(team.context_for_agent("coder", "codex")) == ["m4", "m5", "m6", "m7", "m8"]

    def test_respects_window_size_override(self, team: TeamConversation, lena: Speaker) -> None:
        for i in range(1, 10):
            team.add_message(f"m{i}", speaker=lena)

        assert contents(team.context_for_agent("coder", "codex", window_size=2)) == ["m7", "m8"]
        assert contents(team.context_for_agent("coder", "codex", window_size=100)) == [
            f"m{i}" for i in range(1, 9)
        ]

    def test_a_window_of_zero_gives_no_context_messages(
        self, team: TeamConversation, lena: Speaker
    ) -> None:
        team.add_message("m1", speaker=lena)
        team.add_message("m2", speaker=lena)

        ctx = team.context_for_agent("coder", "codex", window_size=0)

        assert ctx.context_messages == ()
        assert ctx.current_message == "m2"

    @pytest.mark.parametrize("size", [-1, 1.5, True, "5"])
    def test_rejects_a_window_size_that_is_not_a_count(
        self, team: TeamConversation, size: object
    ) -> None:
        with pytest.raises(BuildOptionError, match="window_size"):
            team.context_for_agent("coder", "codex", window_size=size)  # type: ignore[arg-type]
        with pytest.raises(BuildOptionError, match="window_size"):
            TeamConversation(window_size=size)  # type: ignore[arg-type]

    def test_strips_markers_from_context_messages(
        self, team: TeamConversation, lena: Speaker, coder: Speaker
    ) -> None:
        team.add_message("[FROM:lena] Please fix it.  [NEXT:coder]", speaker=lena)
        team.add_message("[TEAM_TASK] old task text", speaker=lena)
        team.add_message("On it.", speaker=coder)

        assert contents(team.context_for_agent("coder", "claude")) == ["Please fix it.", ""]

    def test_strips_markers_from_current_message(
        self, team: TeamConversation, coder: Speaker
    ) -> None:
        team.add_message("Fixed.\n\n[NEXT: reviewer]", speaker=coder)

        assert team.context_for_agent("reviewer", "claude").current_message == "Fixed."

    def test_formats_the_addressees(self, team: TeamConversation, lena: Speaker) -> None:
        team.add_message("to all", speaker=lena)
        team.add_message("to one", speaker=lena, addressees=["max"])
        team.add_message("to two", speaker=lena, addressees=["max", "sarah"])
        team.add_message("to three", speaker=lena, addressees=["max", "sarah", "carol"])
        team.add_message("current", speaker=lena)

        targets = [m.to for m in team.context_for_agent("max", "claude").context_messages]

        assert targets == ["all", "max", "max, sarah", "max, sarah, carol"]

    def test_context_messages_name_the_speaker_by_role_name(
        self, team: TeamConversation, coder: Speaker, lena: Speaker
    ) -> None:
        team.add_message("patch ready", speaker=coder, addressees=["reviewer"])
        team.add_message("thanks", speaker=lena)

        assert team.context_for_agent("reviewer", "gemini").context_messages == (
            PromptMessage("Coder", "reviewer", "patch ready"),
        )

    def test_deduplicates_ai_to_ai(
        self,
        team: TeamConversation,
        lena: Speaker,
        coder: Speaker,
        caplog: pytest.LogCaptureFixture,
    ) -> None:
        team.add_message("Please fix it.", speaker=lena)
        team.add_message("Fixed. [NEXT:reviewer]", speaker=coder)
        team.add_message("Fixed. [NEXT:tester]", speaker=coder)  # the same answer, routed again

        with caplog.at_level(logging.DEBUG, logger="memctx.team"):
            ctx = team.context_for_agent("reviewer", "claude")

        assert ctx.context_messages == (PromptMessage("Lena", "all", "Please fix it."),)
        assert ctx.current_message == "Fixed."
        logged = ("memctx.team", logging.DEBUG, "[TeamConversation] Deduplicated context for AI→AI")
        assert logged in caplog.record_tuples

    def test_does_not_deduplicate_human_messages(
        self, team: TeamConversation, lena: Speaker
    ) -> None:
        team.add_message("Status?", speaker=lena)
        team.add_message("Status?", speaker=lena)

        ctx = team.context_for_agent("coder", "claude")

        assert ctx.context_messages == (PromptMessage("Lena", "all", "Status?"),)

    def test_does_not_deduplicate_the_same_text_from_another_agent(
        self, team: TeamConversation, coder: Speaker, reviewer: Speaker
    ) -> None:
        team.add_message("LGTM", speaker=coder)
        team.add_message("LGTM", speaker=reviewer)

        assert contents(team.context_for_agent("lena", "claude")) == ["LGTM"]

    def test_does_not_deduplicate_different_text_from_the_same_agent(
        self, team: TeamConversation, coder: Speaker
    ) -> None:
        team.add_message("Part one.", speaker=coder)
        team.add_message("Part two.", speaker=coder)

        assert contents(team.context_for_agent("reviewer", "claude")) == ["Part one."]

    def test_passes_system_instruction_and_instruction_file_text(
        self, team: TeamConversation, lena: Speaker
    ) -> None:
        team.add_message("hi", speaker=lena)

        ctx = team.context_for_agent(
            "coder", "claude", system_instruction="You write code.", instruction_file_text="# Rules"
        )

        assert (ctx.system_instruction, ctx.instruction_file_text) == ("You write code.", "# Rules")

    def test_passes_max_bytes_to_output(self, lena: Speaker) -> None:
        team = TeamConversation(max_bytes=4096)
        team.add_message("hi", speaker=lena)

        assert team.context_for_agent("coder", "claude").max_bytes == 4096

    def test_passes_the_team_task(self, team: TeamConversation, lena: Speaker) -> None:
        team.set_team_task("Ship it.")
        team.add_message("hi", speaker=lena)

        assert team.context_for_agent("coder", "claude").team_task == "Ship it."

    def test_every_agent_type_gets_the_same_context(
        self, team: TeamConversation, lena: Speaker
    ) -> None:
        team.add_message("a", speaker=lena)
        team.add_message("b", speaker=lena)

        contexts = {team.context_for_agent("coder", t) for t in ("claude", "CODEX", "x-agent")}

        assert len(contexts) == 1

    @pytest.mark.parametrize(
        "arguments",
        [
            {"agent_id": 1},
            {"agent_type": None},
            {"system_instruction": 3},
            {"instruction_file_text": b"rules"},
        ],
    )
    def test_rejects_arguments_of_the_wrong_type(
        self, team: TeamConversation, arguments: dict[str, object]
    ) -> None:
        call: dict[str, object] = {"agent_id": "coder", "agent_type": "claude", **arguments}
        agent_id, agent_type = call.pop("agent_id"), call.pop("agent_type")

        with pytest.raises(TeamMessageError):
            team.context_for_agent(agent_id, agent_type, **call)  # type: ignore[arg-type]


class TestDeduplicate:
    """The rule itself, on entries (a context message and the id it came from)."""

    def test_drops_the_last_entry_when_it_has_the_current_messages_id(self, coder: Speaker) -> None:
        current = TeamMessage("msg-2", "new text", coder)
        entries = [
            (PromptMessage("Lena", "all", "hi"), "msg-1"),
            (PromptMessage("Someone", "all", "other text"), "msg-2"),
        ]

        assert deduplicate(entries, current) == entries[:1]

    def test_keeps_everything_when_the_current_message_is_a_humans(self, lena: Speaker) -> None:
        current = TeamMessage("msg-2", "hi", lena)
        entries = [(PromptMessage("Lena", "all", "hi"), "msg-2")]

        assert deduplicate(entries, current) == entries

    def test_an_empty_context_stays_empty(self, coder: Speaker) -> None:
        assert deduplicate([], TeamMessage("msg-1", "x", coder)) == []


class TestFormatAddressees:
    @pytest.mark.parametrize(
        ("addressees", "expected"),
        [
            (None, "all"),
            ([], "all"),
            (["max"], "max"),
            (["max", "sarah"], "max, sarah"),
            (["max", "sarah", "carol"], "max, sarah, carol"),
        ],
    )
    def test_formats_as_the_table_says(self, addressees: list[str] | None, expected: str) -> None:
        assert format_addressees(addressees) == expected
