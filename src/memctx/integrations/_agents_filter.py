"""budget_filter: hold a ContextPolicy's budget for every model call of an Agents SDK run.

A session's budget applies to the history fetched when ``Runner.run`` starts; the
items the run adds (function calls, their outputs, the model's messages) come on
top. The SDK calls ``RunConfig.call_model_input_filter`` before *every* model call
with the whole input of that call, so a filter sees them all::

    policy = ContextPolicy("gpt-4.1", max_tokens=8_000, compaction=CompactionPolicy())
    config = RunConfig(call_model_input_filter=budget_filter(policy))
    await Runner.run(agent, "Fix the failing test", session=session, run_config=config)

Before each call the filter steps the policy on the call's input (each item one
chunk, the agent's instructions a SYSTEM chunk): old tool outputs are cleared and
old history compacted when that is due, and the build keeps what fits. The model is
sent the SDK's own items for the chunks kept, in order; a cleared or trimmed output
is sent with the shorter text, a compaction's summary as a user message. The
current task (the newest user message) and the run's first one are pinned, and a
function call is kept or dropped with its output. A policy whose budget cannot hold
what is pinned raises :class:`~memctx.BudgetExceededError`.

The filter remembers the policy's state between the calls of a run (a call's input
continues the previous call's), so clearing and compaction happen in blocks.
:attr:`BudgetFilter.last_step` is the newest :class:`~memctx.policy.PolicyStep`.
"""

from __future__ import annotations

import json
from typing import Any

from memctx._chunk import Chunk
from memctx.integrations._agents_items import (
    is_user_message,
    item_to_chunk,
    plain_item,
    tool_names,
)
from memctx.integrations._fit import Kept, RunFit, each
from memctx.policy import ContextPolicy, PolicyStep

try:
    from agents.run_config import CallModelData, ModelInputData
except ImportError as exc:  # pragma: no cover - the extra is not installed
    raise ImportError(
        "memctx.integrations.openai_agents needs the OpenAI Agents SDK: "
        "pip install 'memctx[openai-agents]'"
    ) from exc

__all__ = ["BudgetFilter", "budget_filter"]


class BudgetFilter:
    """A ``call_model_input_filter`` stepping ``policy`` before each model call."""

    def __init__(self, policy: ContextPolicy, *, thread_id: str | None = None) -> None:
        self._fit = RunFit(policy, is_prompt=is_user_message, thread_id=thread_id)

    @property
    def policy(self) -> ContextPolicy:
        return self._fit.policy

    @property
    def last_step(self) -> PolicyStep | None:
        """The policy's step for the newest model call (what was kept, cleared, compacted)."""
        return self._fit.last_step

    async def __call__(self, data: CallModelData[Any]) -> ModelInputData:
        model_data = data.model_data
        plain = [plain_item(item, f"input[{i}]") for i, item in enumerate(model_data.input)]
        if not plain:
            return model_data
        names = tool_names(plain)

        def convert(item: dict[str, Any], base: str) -> list[tuple[Chunk, Any]]:
            return [(item_to_chunk(item, names, id=base), item)]

        keys = [json.dumps(item, sort_keys=True) for item in plain]
        state, memo = self._fit.prepare(plain, keys, each(convert), model_data.instructions)
        step = await self._fit.astep(state)
        kept = self._fit.finish(step, memo)
        return ModelInputData(
            input=[self._item(k) for k in kept],  # type: ignore[misc]
            instructions=model_data.instructions,
        )

    def _item(self, kept: Kept) -> dict[str, Any]:
        chunk, source = kept.chunk, kept.source
        if source is None:  # a compaction's summary
            return {"role": "user", "content": self._fit.render(chunk)}
        if not kept.changed:
            return dict(source)
        kind = source.get("type", "message")
        if kind == "function_call_output":
            return {**source, "output": chunk.text}
        if kind == "function_call":
            return {**source, "arguments": json.dumps(chunk.content)}
        return {**source, "content": chunk.text}


def budget_filter(policy: ContextPolicy, *, thread_id: str | None = None) -> BudgetFilter:
    """A ``RunConfig(call_model_input_filter=...)`` holding ``policy``'s budget for every
    model call of a run (see the module's docstring). ``thread_id`` names the run's state
    for the policy's calibration memory."""
    return BudgetFilter(policy, thread_id=thread_id)
