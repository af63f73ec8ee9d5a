"""budget_filter: every model call of an Agents SDK run within the policy's budget.

The run: four turns of a session, three tool calls a turn, the SDK's ScriptedModel
recording what each of the 16 model calls is sent.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("agents")

from agents import Agent, RunConfig, Runner, function_tool
from agents.run_config import CallModelData, ModelInputData
from agents.testing import ScriptedModel, assistant_message, function_call

from memctx import BudgetExceededError, PolicyError, create_tokenizer
from memctx.compaction import CompactionPolicy, ExtractiveSummarizer
from memctx.integrations.openai_agents import BudgetFilter, MemctxSession, budget_filter
from memctx.policy import ClearToolUses, ContextPolicy, PolicyStep
from memctx.store import MemoryStore

BUDGET = 400
TURNS = 4
CALLS_PER_TURN = 3
TOKENIZER = create_tokenizer("gpt-4.1")


@function_tool
def read_file(path: str) -> str:
    """Read a file of the project."""
    return f"# {path}\n" + "value = compute(x)  # a line of code\n" * 3


def task(turn: int) -> str:
    return f"Task {turn}: fix bug number {turn} in the m{turn} modules."


def policy() -> ContextPolicy:
    return ContextPolicy(
        "gpt-4.1",
        max_tokens=BUDGET,
        clear_tool_uses=ClearToolUses(keep_recent=2),
        compaction=CompactionPolicy(),
        summarizer=ExtractiveSummarizer(max_chars=300),  # the default is sized for 1,000+
    )


def script() -> list[Any]:
    steps: list[Any] = []
    for turn in range(TURNS):
        for k in range(CALLS_PER_TURN):
            args = {"path": f"src/m{turn}_{k}.py"}
            steps.append([function_call("read_file", args, call_id=f"call_{turn}_{k}")])
        steps.append([assistant_message(f"Turn {turn} done.")])
    return steps


def text_tokens(items: list[Any], instructions: str | None) -> int:
    """What the model reads: the instructions, each message's text, each call's name and
    arguments, each output (no framing)."""
    total = TOKENIZER.count(instructions or "")
    for item in items:
        kind = item.get("type", "message")
        if kind == "function_call":
            total += TOKENIZER.count(item["name"]) + TOKENIZER.count(item["arguments"])
        elif kind == "function_call_output":
            total += TOKENIZER.count(str(item["output"]))
        else:
            content = item["content"]
            text = content if isinstance(content, str) else "".join(p["text"] for p in content)
            total += TOKENIZER.count(text)
    return total


def json_tokens(items: list[Any], instructions: str | None) -> int:
    """The items as JSON text (field names and all): a count above any provider's."""
    return TOKENIZER.count(instructions or "") + sum(TOKENIZER.count(json.dumps(i)) for i in items)


class Recording:
    """The filter, noting its step for each call."""

    def __init__(self, inner: BudgetFilter) -> None:
        self.inner = inner
        self.steps: list[PolicyStep] = []

    async def __call__(self, data: CallModelData[Any]) -> ModelInputData:
        out = await self.inner(data)
        assert self.inner.last_step is not None
        self.steps.append(self.inner.last_step)
        return out


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    model = ScriptedModel(script())
    agent = Agent(name="coder", instructions="You fix bugs.", model=model, tools=[read_file])
    recording = Recording(budget_filter(policy()))
    config = RunConfig(tracing_disabled=True, call_model_input_filter=recording)
    path = Path(tmp_path_factory.mktemp("budget")) / "agents.db"
    with MemoryStore.open(path) as store:
        session = MemctxSession("coder", store)
        turn_of_call: list[int] = []
        for turn in range(TURNS):
            before = len(model.calls)
            asyncio.run(Runner.run(agent, task(turn), session=session, run_config=config))
            turn_of_call += [turn] * (len(model.calls) - before)
        yield {
            "calls": model.calls,
            "steps": recording.steps,
            "turns": turn_of_call,
            "stored": len(store.get_all_chunks("coder")),
        }


class TestAFourTurnRun:
    def test_makes_sixteen_model_calls_and_stores_every_item(self, run: dict[str, Any]) -> None:
        assert len(run["calls"]) == TURNS * (CALLS_PER_TURN + 1)
        assert run["stored"] == TURNS * (2 + 2 * CALLS_PER_TURN)

    def test_every_call_is_within_the_budget(self, run: dict[str, Any]) -> None:
        counted = [step.token_count for step in run["steps"]]
        read = [text_tokens(c.input, c.system_instructions) for c in run["calls"]]

        assert max(counted) <= BUDGET
        assert max(read) <= BUDGET
        assert max(counted) > BUDGET * 0.7  # the budget is what held it, not a small run

    def test_every_call_holds_the_current_task(self, run: dict[str, Any]) -> None:
        for call, turn in zip(run["calls"], run["turns"], strict=True):
            assert {"role": "user", "content": task(turn)} in call.input

    def test_no_call_is_sent_without_its_output_nor_an_output_without_its_call(
        self, run: dict[str, Any]
    ) -> None:
        for call in run["calls"]:
            calls = {i["call_id"] for i in call.input if i.get("type") == "function_call"}
            outputs = {i["call_id"] for i in call.input if i.get("type") == "function_call_output"}
            assert calls == outputs

    def test_the_policy_cleared_and_compacted_on_the_way(self, run: dict[str, Any]) -> None:
        events = {event for step in run["steps"] for event in step.events}
        summaries = [
            i
            for call in run["calls"]
            for i in call.input
            if "<progress_summary" in str(i.get("content"))
        ]

        assert "compacted" in events
        assert summaries
        assert all(i["role"] == "user" for i in summaries)

    def test_the_figures(self, run: dict[str, Any], capsys: pytest.CaptureFixture[str]) -> None:
        """Not an assertion: the per-call figures, printed for the record (-s)."""
        rows = [
            (n, s.token_count, text_tokens(c.input, c.system_instructions), len(c.input))
            for n, (s, c) in enumerate(zip(run["steps"], run["calls"], strict=True))
        ]
        json_max = max(json_tokens(c.input, c.system_instructions) for c in run["calls"])
        with capsys.disabled():
            print(f"\nbudget {BUDGET}: (call, memctx count, text tokens, items)", rows)
            print(f"max as JSON text: {json_max}")
        assert rows


class TestBadPolicies:
    def test_a_budget_too_small_for_the_task_raises_before_the_model_is_called(self) -> None:
        model = ScriptedModel([[assistant_message("never")]])
        agent = Agent(name="a", instructions="Be terse.", model=model)
        tiny = ContextPolicy("gpt-4.1", max_tokens=20)
        config = RunConfig(tracing_disabled=True, call_model_input_filter=budget_filter(tiny))

        with pytest.raises(BudgetExceededError, match="budget leaves 20"):
            asyncio.run(Runner.run(agent, "word " * 50, run_config=config))
        assert model.calls == ()

    def test_something_else_than_a_policy_is_refused(self) -> None:
        with pytest.raises(PolicyError, match=r"policy: must be a memctx\.policy\.ContextPolicy"):
            budget_filter(400)  # type: ignore[arg-type]

    def test_an_input_item_json_cannot_hold_is_refused(self) -> None:
        from agents import Agent as SDKAgent
        from agents.run_config import CallModelData, ModelInputData

        from memctx import ItemNotJSONError

        data = CallModelData(
            model_data=ModelInputData(input=[{"role": "user", "content": {1}}], instructions=None),  # type: ignore[list-item]
            agent=SDKAgent(name="a"),
            context=None,
        )
        with pytest.raises(ItemNotJSONError, match=r"input\[0\]\.content"):
            asyncio.run(budget_filter(policy())(data))
