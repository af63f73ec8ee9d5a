"""The turns Anthropic and Gemini requests add: given to the build, counted, sent as counted."""

from __future__ import annotations

import json
from typing import Any

import pytest
from click.testing import CliRunner

from memctx import (
    BuildOptionError,
    Chunk,
    ContextBuildResult,
    MemoryState,
    TurnMismatchError,
    chunks,
    create_builder,
    create_tokenizer,
)
from memctx.adapters import CLOSING_TURN, OPENING_TURN, AddedTurns, TurnOptions
from memctx.cli import main
from memctx.statefile import dumps_state
from memctx.store import MemoryStore

GPT4O = create_tokenizer("gpt-4o")
OPENS = chunks.assistant("I looked at the logs first.", id="opens")
TASK = chunks.user("Why does the retry test fail?", id="task")
ANSWER = chunks.assistant("The cap comes before the jitter.\n", id="answer")
OPENING = "Here is the agent's record so far, oldest first."
CLOSING = "Go on from where the record ends."


def build(*items: Chunk, **options: Any) -> ContextBuildResult:
    return create_builder(GPT4O).build(MemoryState(list(items)), **options)


def sent_anthropic(request: dict[str, Any]) -> list[dict[str, Any]]:
    system = [{"role": "system", "content": request["system"]}] if "system" in request else []
    return [*system, *request["messages"]]


class TestTheBuildCountsTheTurnsItIsGiven:
    @pytest.mark.parametrize("provider", ["anthropic", "gemini"])
    def test_custom_texts_are_remembered_counted_and_sent(self, provider: str) -> None:
        result = build(
            OPENS, TASK, ANSWER, provider=provider, opening_turn=OPENING, closing_turn=CLOSING
        )

        assert result.turn_options == TurnOptions(OPENING, CLOSING, prefill=False)
        assert result.added_turns == AddedTurns(OPENING, CLOSING)
        request = result.to_anthropic()
        assert request["messages"][0]["content"] == OPENING
        assert request["messages"][-1]["content"] == CLOSING
        assert result.token_count == GPT4O.count_messages(sent_anthropic(request))
        contents = result.to_gemini()["contents"]
        assert (contents[0]["parts"][0]["text"], contents[-1]["parts"][0]["text"]) == (
            OPENING,
            CLOSING,
        )

    def test_a_prefill_build_counts_no_closing_turn_and_the_prefill_as_sent(self) -> None:
        result = build(TASK, ANSWER, provider="anthropic", prefill=True)
        request = result.to_anthropic()

        assert result.added_turns == AddedTurns()
        assert request["messages"][-1]["content"] == result.messages[-1].content.rstrip()
        assert result.messages[-1].content.endswith("\n")
        assert result.token_count == GPT4O.count_messages(sent_anthropic(request))

    def test_the_budget_keeps_room_for_the_custom_turns(self) -> None:
        long_turn = "Read every step below before you answer. " * 8
        state = [
            TASK,
            *(chunks.assistant(f"step {i} " * 10, id=f"a{i}") for i in range(30)),
        ]
        for budget in range(150, 600, 11):
            result = build(*state, provider="anthropic", max_tokens=budget, closing_turn=long_turn)
            request = result.to_anthropic()
            assert request["messages"][-1]["content"] == long_turn
            assert result.token_count == GPT4O.count_messages(sent_anthropic(request))
            assert result.token_count <= budget

    def test_a_blank_turn_is_refused(self) -> None:
        with pytest.raises(BuildOptionError, match="opening_turn: must be a non-blank"):
            build(TASK, provider="anthropic", opening_turn="   ")

    @pytest.mark.parametrize("provider", [None, "openai"])
    @pytest.mark.parametrize(
        "option", [{"opening_turn": "x"}, {"closing_turn": "x"}, {"prefill": True}]
    )
    def test_turn_options_without_a_provider_that_adds_turns_are_refused(
        self, provider: str | None, option: dict[str, Any]
    ) -> None:
        with pytest.raises(BuildOptionError, match="only the anthropic and gemini adapters"):
            build(TASK, provider=provider, **option)

    def test_a_build_without_provider_counted_no_turns(self) -> None:
        result = build(OPENS, ANSWER)

        assert result.turn_options is None
        assert result.added_turns == AddedTurns()


class TestTheAdapterSendsWhatWasCounted:
    @pytest.mark.parametrize("adapter", ["to_anthropic", "to_gemini"])
    @pytest.mark.parametrize(
        ("option", "value"),
        [("opening_turn", "Earlier:"), ("closing_turn", "Go on."), ("prefill", True)],
    )
    def test_a_different_turn_raises_and_says_to_give_it_to_the_build(
        self, adapter: str, option: str, value: Any
    ) -> None:
        result = build(OPENS, TASK, ANSWER, provider="anthropic")

        with pytest.raises(TurnMismatchError, match="to the build") as info:
            getattr(result, adapter)(**{option: value})

        assert info.value.option == option
        assert info.value.given == value
        assert isinstance(info.value, ValueError)

    def test_the_counted_turns_may_be_repeated(self) -> None:
        result = build(OPENS, ANSWER, provider="gemini", closing_turn=CLOSING)

        assert result.to_anthropic(closing_turn=CLOSING, opening_turn=OPENING_TURN) == (
            result.to_anthropic()
        )

    def test_uncounted_builds_take_any_turn_the_adapter_is_given(self) -> None:
        request = build(OPENS, ANSWER).to_anthropic(opening_turn="Earlier:", closing_turn="On.")

        assert request["messages"][0]["content"] == "Earlier:"
        assert request["messages"][-1]["content"] == "On."

    def test_the_defaults_are_sent_when_nothing_was_given(self) -> None:
        request = build(OPENS, ANSWER, provider="anthropic").to_anthropic()

        assert request["messages"][0]["content"] == OPENING_TURN
        assert request["messages"][-1]["content"] == CLOSING_TURN


class TestEveryWayToBuild:
    def test_the_cli_takes_the_turn_options(self, tmp_path: Any) -> None:
        state = tmp_path / "s.json"
        state.write_text(dumps_state(MemoryState([OPENS, TASK, ANSWER])), encoding="utf-8")
        args = ["build", str(state), "--model", "gpt-4o", "--format", "json"]
        turns = ["--provider", "anthropic", "--opening-turn", OPENING, "--closing-turn", CLOSING]

        plain = json.loads(CliRunner().invoke(main, args).stdout)
        counted = json.loads(CliRunner().invoke(main, [*args, *turns]).stdout)
        prefilled = CliRunner().invoke(main, [*args, "--provider", "gemini", "--prefill"])
        refused = CliRunner().invoke(main, [*args, "--prefill"])

        turn_tokens = sum(
            GPT4O.count_messages([{"role": "user", "content": t}]) - GPT4O.count_messages([])
            for t in (OPENING, CLOSING)
        )
        assert counted["token_count"] == plain["token_count"] + turn_tokens
        assert prefilled.exit_code == 0
        assert refused.exit_code == 1
        assert "--prefill" in refused.stderr

    def test_the_store_build_takes_and_remembers_them(self, tmp_path: Any) -> None:
        with MemoryStore(f"sqlite:///{tmp_path / 'm.db'}") as store:
            store.create_thread("t")
            store.append("t", OPENS, TASK, ANSWER)
            result = store.build("t", tokenizer=GPT4O, provider="anthropic", opening_turn=OPENING)

        assert result.turn_options == TurnOptions(OPENING, CLOSING_TURN)
        assert result.token_count == GPT4O.count_messages(sent_anthropic(result.to_anthropic()))
