"""MemctxHistoryProcessor in runs with tool calls: the prompt kept, pairs whole, the budget
held in every request (pydantic-ai's FunctionModel records what each request is sent)."""

from __future__ import annotations

import asyncio
import inspect
from typing import Any

import pytest

pytest.importorskip("pydantic_ai")

from pydantic_ai import Agent
from pydantic_ai.capabilities import ProcessHistory
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

from memctx import BudgetExceededError, PolicyError, create_tokenizer
from memctx.compaction import CompactionPolicy, ExtractiveSummarizer
from memctx.integrations.pydantic_ai import MemctxHistoryProcessor
from memctx.policy import ClearToolUses, ContextPolicy

BUDGET = 400
CALLS_PER_TURN = 3
TOKENIZER = create_tokenizer("gpt-4.1")


def task(turn: int) -> str:
    return f"Task {turn}: fix bug number {turn} in the m{turn} modules."


class Recorder:
    """A FunctionModel function: three tool calls after each new prompt, then an answer."""

    def __init__(self) -> None:
        self.requests: list[tuple[list[ModelMessage], str | None]] = []
        self.prompt: str | None = None
        self.calls = 0

    def __call__(self, messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        self.requests.append((list(messages), info.instructions))
        newest = [p for p in prompts(messages) if p.startswith("Task")][-1]
        if newest != self.prompt:
            self.prompt, self.calls = newest, 0
        self.calls += 1
        if self.calls <= CALLS_PER_TURN:
            n = len(self.requests)
            return ModelResponse(parts=[ToolCallPart("read_file", {"path": f"src/f{n}.py"})])
        return ModelResponse(parts=[TextPart("Done.")])


def make_agent(fit: MemctxHistoryProcessor, recorder: Recorder, counts: list[int]) -> Any:
    """An agent whose history ``fit`` processes, noting memctx's count of each request."""
    processor = fit.capability().processor

    async def counting(messages: list[ModelMessage]) -> list[ModelMessage]:
        out = processor(messages)
        fitted: list[ModelMessage] = await out if inspect.isawaitable(out) else out
        assert fit.last_result is not None
        counts.append(fit.last_result.token_count)
        return fitted

    agent = Agent(
        FunctionModel(recorder),
        instructions="You fix bugs.",
        capabilities=[ProcessHistory(counting)],
    )

    @agent.tool_plain
    def read_file(path: str) -> str:
        """Read a file of the project."""
        return f"# {path}\n" + "value = compute(x)  # a line of code\n" * 4

    return agent


def text_tokens(messages: list[ModelMessage], instructions: str | None) -> int:
    """What the model reads: instructions, prompts, calls (name and arguments), returns, text."""
    total = TOKENIZER.count(instructions or "")
    for message in messages:
        for part in message.parts:
            if isinstance(part, ToolCallPart):
                total += TOKENIZER.count(part.tool_name) + TOKENIZER.count(part.args_as_json_str())
            elif isinstance(part, ToolReturnPart):
                total += TOKENIZER.count(part.model_response_str())
            elif isinstance(part, UserPromptPart | SystemPromptPart | TextPart):
                total += TOKENIZER.count(str(part.content))
    return total


def prompts(messages: list[ModelMessage]) -> list[str]:
    return [str(p.content) for m in messages for p in m.parts if isinstance(p, UserPromptPart)]


def pairs_whole(messages: list[ModelMessage]) -> bool:
    calls = {p.tool_call_id for m in messages for p in m.parts if isinstance(p, ToolCallPart)}
    returns = {p.tool_call_id for m in messages for p in m.parts if isinstance(p, ToolReturnPart)}
    return calls == returns


def run_turns(fit: MemctxHistoryProcessor, turns: int) -> tuple[Recorder, list[tuple[int, int]]]:
    """Run ``turns`` prompts in one conversation; the turn and memctx's count per request."""
    recorder, counts, turn_of = Recorder(), [], []
    agent = make_agent(fit, recorder, counts)

    async def conversation() -> None:
        history: list[ModelMessage] = []
        for turn in range(turns):
            before = len(recorder.requests)
            result = await agent.run(task(turn), message_history=history)
            history = result.all_messages()
            turn_of.extend([turn] * (len(recorder.requests) - before))

    asyncio.run(conversation())
    return recorder, list(zip(turn_of, counts, strict=True))


@pytest.fixture(scope="module")
def budget_run() -> tuple[Recorder, list[tuple[int, int]]]:
    fit = MemctxHistoryProcessor(max_tokens=BUDGET, tokenizer=TOKENIZER)
    return run_turns(fit, turns=2)


@pytest.fixture(scope="module")
def policy_run() -> tuple[Recorder, list[tuple[int, int]], MemctxHistoryProcessor]:
    policy = ContextPolicy(
        "gpt-4.1",
        max_tokens=BUDGET,
        clear_tool_uses=ClearToolUses(keep_recent=2),
        compaction=CompactionPolicy(),
        summarizer=ExtractiveSummarizer(max_chars=300),
    )
    fit = MemctxHistoryProcessor(policy=policy)
    recorder, counted = run_turns(fit, turns=4)
    return recorder, counted, fit


class TestABudgetedRunWithToolCalls:
    """The issue's run: a 400-token budget lost the prompt after two tool calls."""

    def test_every_request_holds_the_prompt_of_its_run(
        self, budget_run: tuple[Recorder, list[tuple[int, int]]]
    ) -> None:
        recorder, counted = budget_run
        for (messages, _), (turn, _) in zip(recorder.requests, counted, strict=True):
            assert task(turn) in prompts(messages)

    def test_every_request_is_within_the_budget_with_pairs_whole(
        self, budget_run: tuple[Recorder, list[tuple[int, int]]]
    ) -> None:
        recorder, counted = budget_run
        assert len(recorder.requests) == 2 * (CALLS_PER_TURN + 1)
        assert max(n for _, n in counted) <= BUDGET
        assert max(text_tokens(m, i) for m, i in recorder.requests) <= BUDGET
        assert all(pairs_whole(m) for m, _ in recorder.requests)
        assert max(n for _, n in counted) > BUDGET * 0.7  # the budget is what held it

    def test_the_figures(
        self,
        budget_run: tuple[Recorder, list[tuple[int, int]]],
        capsys: pytest.CaptureFixture[str],
    ) -> None:
        """Not an assertion: the per-request figures, printed for the record (-s)."""
        recorder, counted = budget_run
        rows = [
            (c, text_tokens(m, i))
            for (m, i), (_, c) in zip(recorder.requests, counted, strict=True)
        ]
        with capsys.disabled():
            print(f"\npydantic-ai, max_tokens={BUDGET}: (memctx, text)", rows)
        assert rows


class TestWithAPolicy:
    def test_every_request_holds_its_prompt_within_the_budget_with_pairs_whole(
        self, policy_run: tuple[Recorder, list[tuple[int, int]], MemctxHistoryProcessor]
    ) -> None:
        recorder, counted, _ = policy_run
        assert len(recorder.requests) == 4 * (CALLS_PER_TURN + 1)
        for (messages, instructions), (turn, count) in zip(recorder.requests, counted, strict=True):
            assert task(turn) in prompts(messages)
            assert task(0) in prompts(messages)  # the first task is the policy's pin
            assert pairs_whole(messages)
            assert count <= BUDGET
            assert text_tokens(messages, instructions) <= BUDGET

    def test_old_history_is_compacted_into_a_summary_the_model_is_sent(
        self, policy_run: tuple[Recorder, list[tuple[int, int]], MemctxHistoryProcessor]
    ) -> None:
        recorder, _, fit = policy_run
        summaries = [
            p for m, _ in recorder.requests for p in prompts(m) if "<progress_summary" in p
        ]
        assert summaries
        assert fit.last_step is not None

    def test_the_figures(
        self,
        policy_run: tuple[Recorder, list[tuple[int, int]], MemctxHistoryProcessor],
        capsys: pytest.CaptureFixture[str],
    ) -> None:
        """Not an assertion: the per-request figures, printed for the record (-s)."""
        recorder, counted, _ = policy_run
        rows = [
            (n, count, text_tokens(m, i))
            for n, ((m, i), (_, count)) in enumerate(zip(recorder.requests, counted, strict=True))
        ]
        with capsys.disabled():
            print(f"\npydantic-ai, policy, budget {BUDGET}: (request, memctx, text)", rows)
        assert rows


class TestBadInput:
    def test_a_policy_with_other_options_is_refused(self) -> None:
        with pytest.raises(PolicyError, match="takes no other option"):
            MemctxHistoryProcessor(max_tokens=100, policy=ContextPolicy("gpt-4.1"))

    def test_something_else_than_a_policy_is_refused(self) -> None:
        with pytest.raises(PolicyError, match=r"must be a memctx\.policy\.ContextPolicy"):
            MemctxHistoryProcessor(policy="gpt-4.1")  # type: ignore[arg-type]

    def test_a_budget_that_cannot_hold_the_prompt_raises(self) -> None:
        fit = MemctxHistoryProcessor(policy=ContextPolicy("gpt-4.1", max_tokens=20))
        messages: list[ModelMessage] = [ModelRequest(parts=[UserPromptPart("word " * 50)])]

        with pytest.raises(BudgetExceededError, match="budget leaves 20"):
            fit(messages)
        assert fit.last_step is None
