"""MemctxMiddleware in a LangChain v1 agent (``create_agent``) with a scripted chat model
that records what each model call receives."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest

pytest.importorskip("langchain.agents")

from langchain.agents import create_agent
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import (
    AIMessage,
    BaseMessage,
    HumanMessage,
    SystemMessage,
    ToolMessage,
)
from langchain_core.outputs import ChatGeneration, ChatResult
from langchain_core.tools import tool
from langgraph.runtime import Runtime

from memctx import BudgetExceededError, PolicyError, create_tokenizer
from memctx.compaction import CompactionPolicy, ExtractiveSummarizer
from memctx.integrations.langchain import MemctxMiddleware
from memctx.policy import ClearToolUses, ContextPolicy, PolicyStep

BUDGET = 400
CALLS_PER_TURN = 3
TURNS = 4
SYSTEM = "You fix bugs."
TOKENIZER = create_tokenizer("gpt-4.1")


def task(turn: int) -> str:
    return f"Task {turn}: fix bug number {turn} in the m{turn} modules."


class ScriptedChat(BaseChatModel):
    """Three tool calls after each new task, then an answer; records every call's messages.

    LangChain's fake chat models do not implement ``bind_tools``, which ``create_agent``
    calls; this one binds by ignoring the tools."""

    seen: list[list[BaseMessage]]
    prompt: str | None = None
    calls: int = 0

    @property
    def _llm_type(self) -> str:
        return "scripted"

    def bind_tools(self, tools: Any, **kwargs: Any) -> ScriptedChat:  # type: ignore[override]
        return self

    def _generate(
        self, messages: list[BaseMessage], stop: Any = None, run_manager: Any = None, **kw: Any
    ) -> ChatResult:
        self.seen.append(list(messages))
        newest = [str(m.content) for m in messages if isinstance(m, HumanMessage)]
        newest = [t for t in newest if t.startswith("Task")]
        if newest[-1] != self.prompt:
            self.prompt, self.calls = newest[-1], 0
        self.calls += 1
        n = len(self.seen)
        if self.calls <= CALLS_PER_TURN:
            call = {"name": "read_file", "args": {"path": f"src/f{n}.py"}, "id": f"call_{n}"}
            answer = AIMessage(content="", tool_calls=[{**call, "type": "tool_call"}])
        else:
            answer = AIMessage(content="Done.")
        return ChatResult(generations=[ChatGeneration(message=answer)])


@tool
def read_file(path: str) -> str:
    """Read a file of the project."""
    return f"# {path}\n" + "value = compute(x)  # a line of code\n" * 4


class Recording(MemctxMiddleware):
    """The middleware, noting its step for each model call."""

    steps: list[PolicyStep]

    def before_model(self, state: Any, runtime: Runtime[Any]) -> dict[str, Any] | None:
        update = super().before_model(state, runtime)
        assert self.last_step is not None
        self.steps.append(self.last_step)
        return update


def policy(**options: Any) -> ContextPolicy:
    return ContextPolicy(
        "gpt-4.1",
        max_tokens=BUDGET,
        system_prompt=SYSTEM,
        clear_tool_uses=ClearToolUses(keep_recent=2),
        compaction=CompactionPolicy(),
        summarizer=ExtractiveSummarizer(max_chars=300),
        **options,
    )


def text_tokens(messages: list[BaseMessage]) -> int:
    """What the model reads: every message's text, every call's name and arguments."""
    total = 0
    for message in messages:
        total += TOKENIZER.count(str(message.content))
        for call in getattr(message, "tool_calls", None) or []:
            total += TOKENIZER.count(call["name"]) + TOKENIZER.count(json.dumps(call["args"]))
    return total


@pytest.fixture(scope="module")
def run() -> dict[str, Any]:
    model = ScriptedChat(seen=[])
    middleware = Recording(policy())
    middleware.steps = []
    agent = create_agent(model, [read_file], system_prompt=SYSTEM, middleware=[middleware])
    messages: list[BaseMessage] = []
    turns: list[int] = []
    for turn in range(TURNS):
        before = len(model.seen)
        messages = agent.invoke({"messages": [*messages, HumanMessage(task(turn))]})["messages"]
        turns += [turn] * (len(model.seen) - before)
    return {"seen": model.seen, "steps": middleware.steps, "turns": turns, "final": messages}


class TestAnAgentRun:
    def test_every_model_call_holds_the_system_prompt_and_its_task(
        self, run: dict[str, Any]
    ) -> None:
        assert len(run["seen"]) == TURNS * (CALLS_PER_TURN + 1)
        for messages, turn in zip(run["seen"], run["turns"], strict=True):
            assert messages[0] == SystemMessage(SYSTEM)
            texts = [m.content for m in messages if isinstance(m, HumanMessage)]
            assert task(turn) in texts
            assert task(0) in texts  # the first task is the policy's pin

    def test_every_model_call_is_within_the_budget(self, run: dict[str, Any]) -> None:
        counted = [step.token_count for step in run["steps"]]

        assert max(counted) <= BUDGET
        assert max(text_tokens(m) for m in run["seen"]) <= BUDGET
        assert max(counted) > BUDGET * 0.7  # the budget is what held it

    def test_no_call_goes_without_its_result(self, run: dict[str, Any]) -> None:
        for messages in run["seen"]:
            calls = {c["id"] for m in messages if isinstance(m, AIMessage) for c in m.tool_calls}
            results = {m.tool_call_id for m in messages if isinstance(m, ToolMessage)}
            assert calls == results

    def test_old_history_is_compacted_and_cleared(self, run: dict[str, Any]) -> None:
        events = {event for step in run["steps"] for event in step.events}
        summaries = [
            m
            for messages in run["seen"]
            for m in messages
            if isinstance(m, HumanMessage) and "<progress_summary" in str(m.content)
        ]

        assert "compacted" in events
        assert summaries
        assert all(m.id is not None and m.id.startswith("memctx-") for m in summaries)

    def test_the_figures(self, run: dict[str, Any], capsys: pytest.CaptureFixture[str]) -> None:
        """Not an assertion: the per-call figures, printed for the record (-s)."""
        rows = [
            (n, step.token_count, text_tokens(m), len(m))
            for n, (step, m) in enumerate(zip(run["steps"], run["seen"], strict=True))
        ]
        with capsys.disabled():
            print(f"\nlangchain, budget {BUDGET}: (call, memctx, text, messages)", rows)
        assert rows


class TestUnderTheBudget:
    def test_the_state_is_left_alone(self) -> None:
        model = ScriptedChat(seen=[])
        roomy = ContextPolicy("gpt-4.1", max_tokens=100_000)
        agent = create_agent(model, [read_file], middleware=[MemctxMiddleware(roomy)])

        out = agent.invoke({"messages": [HumanMessage(task(0))]})["messages"]

        assert [type(m).__name__ for m in out] == ["HumanMessage"] + [
            "AIMessage",
            "ToolMessage",
        ] * CALLS_PER_TURN + ["AIMessage"]


class TestAsync:
    def test_an_async_run_fits_the_same_way(self) -> None:
        model = ScriptedChat(seen=[])
        middleware = MemctxMiddleware(policy())
        agent = create_agent(model, [read_file], system_prompt=SYSTEM, middleware=[middleware])

        async def go() -> None:
            messages: list[BaseMessage] = []
            for turn in range(2):
                given = {"messages": [*messages, HumanMessage(task(turn))]}
                messages = (await agent.ainvoke(given))["messages"]

        asyncio.run(go())

        assert middleware.last_step is not None
        assert all(text_tokens(m) <= BUDGET for m in model.seen)
        assert task(1) in [m.content for m in model.seen[-1]]


class TestBadInput:
    def test_a_budget_that_cannot_hold_the_task_raises_and_the_model_is_not_called(
        self,
    ) -> None:
        model = ScriptedChat(seen=[])
        tiny = MemctxMiddleware(ContextPolicy("gpt-4.1", max_tokens=20))
        agent = create_agent(model, [read_file], middleware=[tiny])

        with pytest.raises(BudgetExceededError, match="budget leaves 20"):
            agent.invoke({"messages": [HumanMessage("word " * 50)]})
        assert model.seen == []

    def test_something_else_than_a_policy_is_refused(self) -> None:
        with pytest.raises(PolicyError, match=r"must be a memctx\.policy\.ContextPolicy"):
            MemctxMiddleware(8000)  # type: ignore[arg-type]
