"""An OpenAI Agents SDK agent whose session lives in a memctx store, under a token budget.

Runs offline: the model is the SDK's ScriptedModel, which answers from a script
and records what it was sent. Run it with ``python examples/openai_agents_session.py``
(needs ``pip install 'memctx[openai-agents]'``).
"""

from __future__ import annotations

import asyncio
import tempfile
from pathlib import Path
from typing import Any

from agents import Agent, RunConfig, Runner, function_tool
from agents.testing import ScriptedModel, assistant_message, function_call

from memctx import create_tokenizer
from memctx.integrations.openai_agents import MemctxSession
from memctx.store import MemoryStore

BUDGET = 300


@function_tool
def read_file(path: str) -> str:
    """Read a file of the project."""
    return f"// {path}\n" + "export const retries = 3;\n" * 20


async def run(db: Path) -> dict[str, Any]:
    model = ScriptedModel(
        [
            [function_call("read_file", {"path": "src/retry.ts"}, call_id="call_1")],
            [assistant_message("retries is 3 in src/retry.ts.")],
            [assistant_message("Set it to 5 and add a test.")],
            [assistant_message("Done: retries is 5.")],
        ]
    )
    agent = Agent(
        name="coder", instructions="You are a terse coding agent.", model=model, tools=[read_file]
    )
    config = RunConfig(tracing_disabled=True)
    with MemoryStore.open(db) as store:
        session = MemctxSession(
            "demo", store, max_tokens=BUDGET, tokenizer=create_tokenizer("gpt-4o")
        )
        for question in ("How many retries?", "What should we change?", "Do it."):
            result = await Runner.run(agent, question, session=session, run_config=config)
            report = session.last_result  # the build of the history sent with the question
            assert report is not None
            kept, left_out = len(report.included_chunk_ids), len(report.excluded_chunk_ids)
            print(f"> {question}\n{result.final_output}")
            print(
                f"  history sent: {kept} of {kept + left_out} stored items, "
                f"{report.token_count} tokens (budget {BUDGET})"
            )
        stored = len(store.get_all_chunks("demo"))
    return {"calls": model.calls, "stored": stored}


def main() -> dict[str, Any]:
    with tempfile.TemporaryDirectory() as folder:
        outcome = asyncio.run(run(Path(folder) / "agent.db"))
    print(f"{outcome['stored']} items stored; the model was called {len(outcome['calls'])} times")
    return outcome


if __name__ == "__main__":
    main()
