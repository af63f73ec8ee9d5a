"""A pydantic-ai agent whose message history memctx fits into a token budget.

Runs offline: the model is pydantic-ai's FunctionModel, a plain function that
records what it was sent. Run it with ``python examples/pydantic_ai_history.py``
(needs ``pip install 'memctx[pydantic-ai]'``).
"""

from __future__ import annotations

import asyncio
from typing import Any

from pydantic_ai import Agent
from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart, ToolCallPart
from pydantic_ai.models.function import AgentInfo, FunctionModel

from memctx import create_tokenizer
from memctx.integrations.pydantic_ai import MemctxHistoryProcessor

BUDGET = 300
seen: list[list[ModelMessage]] = []


def fake_model(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
    """Calls read_file once per question, then answers with how much history it got."""
    seen.append(messages)
    last = messages[-1].parts[-1]
    if last.part_kind == "user-prompt":
        return ModelResponse(parts=[ToolCallPart("read_file", {"path": "src/retry.ts"})])
    return ModelResponse(parts=[TextPart(f"I was sent {len(messages)} messages.")])


fit = MemctxHistoryProcessor(max_tokens=BUDGET, tokenizer=create_tokenizer("gpt-4o"))
agent = Agent(
    FunctionModel(fake_model), instructions="You are terse.", capabilities=[fit.capability()]
)


@agent.tool_plain
def read_file(path: str) -> str:
    """Read a file of the project."""
    return f"// {path}\n" + "export const retries = 3;\n" * 10


def main() -> dict[str, Any]:
    history: list[ModelMessage] = []
    for question in ("How many retries?", "And in the tests?", "Summarise."):
        result = asyncio.run(agent.run(question, message_history=history))
        history = result.all_messages()
        report = fit.last_result
        assert report is not None
        print(f"> {question}\n{result.output}")
        total = len(report.included_chunk_ids) + len(report.excluded_chunk_ids)
        print(
            f"  {len(report.included_chunk_ids)} of {total} parts kept, "
            f"{report.token_count} tokens (budget {BUDGET})"
        )
    return {"seen": seen, "history": history}


if __name__ == "__main__":
    main()
