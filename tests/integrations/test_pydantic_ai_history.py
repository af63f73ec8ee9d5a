"""MemctxHistoryProcessor with the real pydantic-ai (its FunctionModel stands in for the API)."""

from __future__ import annotations

import asyncio
import runpy
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("pydantic_ai")

from pydantic_ai import Agent
from pydantic_ai.messages import (
    ModelMessage,
    ModelRequest,
    ModelResponse,
    SystemPromptPart,
    TextPart,
    ToolCallPart,
    ToolReturnPart,
    UserPromptPart,
)
from pydantic_ai.models.function import AgentInfo, FunctionModel

from memctx import BuildOptionError, TranscriptError, create_tokenizer
from memctx.integrations.pydantic_ai import MemctxHistoryProcessor, messages_to_state

ROOT = Path(__file__).parent.parent.parent


def history() -> list[ModelMessage]:
    return [
        ModelRequest(parts=[SystemPromptPart("Be terse."), UserPromptPart("read a.py " * 40)]),
        ModelResponse(parts=[ToolCallPart("read_file", {"path": "a.py"}, tool_call_id="c1")]),
        ModelRequest(parts=[ToolReturnPart("read_file", "x = 1\n" * 50, tool_call_id="c1")]),
        ModelResponse(parts=[TextPart("x is 1.")]),
        ModelRequest(parts=[UserPromptPart("and y?")]),
    ]


class TestProcessor:
    def test_every_part_becomes_a_chunk(self) -> None:
        state = messages_to_state(history())

        assert [c.type.value for c in state] == [
            "SYSTEM",
            "AGENT",
            "WORKFLOW",
            "ENVIRONMENT",
            "AGENT",
            "AGENT",
        ]
        assert state.get("m1.p0").metadata.call_id == state.get("m2.p0").metadata.call_id == "c1"
        assert state.ids[0] == "m0.p0"

    def test_everything_that_fits_is_returned_unchanged(self) -> None:
        messages = history()

        assert MemctxHistoryProcessor(max_tokens=None)(messages) == messages

    def test_a_tight_budget_drops_old_parts_and_keeps_calls_with_returns(self) -> None:
        fit = MemctxHistoryProcessor(max_tokens=80, tokenizer=create_tokenizer("gpt-4o"))

        fitted = fit(history())

        kinds = [[p.part_kind for p in m.parts] for m in fitted]
        assert kinds[0] == ["system-prompt"]  # the long user prompt is gone, the system kept
        assert kinds[-1] == ["user-prompt"]
        flat = [k for ks in kinds for k in ks]
        assert ("tool-call" in flat) == ("tool-return" in flat)
        assert fit.last_result is not None
        assert fit.last_result.token_count <= 80
        assert "m0.p1" in fit.last_result.excluded_chunk_ids

    def test_the_newest_request_is_kept_whole(self) -> None:
        newest = ModelRequest(parts=[UserPromptPart("long " * 60), UserPromptPart("b")])
        messages = [*history()[:4], newest]
        fit = MemctxHistoryProcessor(max_tokens=140, tokenizer=create_tokenizer("gpt-4o"))

        fitted = fit(messages)

        assert fitted[-1] is newest
        assert [[p.part_kind for p in m.parts] for m in fitted[:-1]] == [["system-prompt"]]


class TestBadSettings:
    @pytest.mark.parametrize(
        ("options", "error"),
        [
            ({"max_tokens": -1}, "max_tokens"),
            ({"max_tokens": "100"}, "max_tokens"),
            ({"max_tokens": 100, "strategy": "nope"}, "strategy"),
            ({"max_tokens": 100, "builder": "x"}, "builder"),
        ],
    )
    def test_are_refused_when_the_processor_is_made(
        self, options: dict[str, Any], error: str
    ) -> None:
        with pytest.raises(BuildOptionError, match=error):
            MemctxHistoryProcessor(**options)


def test_a_history_of_something_else_than_pydantic_ai_messages_is_refused() -> None:
    with pytest.raises(TranscriptError, match=r"messages\[0\]: must be a ModelRequest"):
        MemctxHistoryProcessor(max_tokens=100)(["x"])  # type: ignore[list-item]


class TestWithAnAgent:
    def test_the_model_is_sent_the_fitted_history(self) -> None:
        sent: list[list[ModelMessage]] = []

        def model(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
            sent.append(messages)
            return ModelResponse(parts=[TextPart("ok")])

        fit = MemctxHistoryProcessor(max_tokens=60, tokenizer=create_tokenizer("gpt-4o"))
        agent = Agent(FunctionModel(model), capabilities=[fit.capability()])

        asyncio.run(agent.run("and y?", message_history=history()[:4]))

        kinds = [p.part_kind for m in sent[-1] for p in m.parts]
        assert "tool-return" not in kinds
        assert "tool-call" not in kinds
        assert kinds[-1] == "user-prompt"


def test_the_example_runs_offline(capsys: pytest.CaptureFixture[str]) -> None:
    outcome = runpy.run_path(str(ROOT / "examples" / "pydantic_ai_history.py"))["main"]()

    out = capsys.readouterr().out
    assert "parts kept" in out
    assert len(outcome["seen"]) == 6
