"""A LangChain v1 agent middleware that fits the agent's messages with a ContextPolicy.

::

    from langchain.agents import create_agent
    from memctx.integrations.langchain import MemctxMiddleware
    from memctx.policy import ContextPolicy, ClearToolUses
    from memctx.compaction import CompactionPolicy

    policy = ContextPolicy("gpt-4.1", max_tokens=8_000, system_prompt="You fix bugs.",
                           clear_tool_uses=ClearToolUses(), compaction=CompactionPolicy())
    agent = create_agent(model, tools, system_prompt="You fix bugs.",
                         middleware=[MemctxMiddleware(policy)])

Before each model call (``before_model``) the agent's messages are imported with
:func:`memctx.importers.from_langchain` and the policy steps on them: old tool
outputs are cleared and old history compacted when that is due, and the build keeps
what fits the budget. The agent's state then holds the messages kept, in order, as
they were (a cleared output's ``ToolMessage`` with the placeholder for content, an
``AIMessage`` with the calls kept) and a compaction's summary as a ``HumanMessage``
made by :func:`memctx.adapters.to_langchain`. An ``AIMessage``'s calls stay with their
``ToolMessage`` results: kept or dropped together. The current task (the newest
``HumanMessage``) and the first one are pinned. A policy whose budget cannot hold
them raises :class:`~memctx.BudgetExceededError` and the state is left as it was.

The system prompt given to ``create_agent`` is not among the state's messages: give
the same text to the policy (``ContextPolicy(system_prompt=...)``) so the budget
counts it. The middleware remembers the policy's state between the model calls of a
thread (the state's messages continue the ones it returned), so clearing and
compaction happen in blocks. :attr:`MemctxMiddleware.last_step` is the newest step.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from typing import Any

import attrs

from memctx._chunk import Chunk, ContextMessage
from memctx._state import MemoryState
from memctx.adapters import to_langchain
from memctx.importers import from_langchain
from memctx.integrations._fit import Kept, RunFit
from memctx.policy import ContextPolicy, PolicyStep

try:
    from langchain.agents.middleware import AgentMiddleware, AgentState
    from langchain_core.messages import AIMessage, AnyMessage, HumanMessage, RemoveMessage
    from langgraph.graph.message import REMOVE_ALL_MESSAGES
    from langgraph.runtime import Runtime
except ImportError as exc:  # pragma: no cover - the extra is not installed
    raise ImportError(
        "memctx.integrations.langchain needs LangChain v1: pip install 'memctx[langchain]'"
    ) from exc

__all__ = ["MemctxMiddleware"]

_IMPORTED_ID = re.compile(r"msg(\d+)(?:_call(\d+))?")


def _is_prompt(source: tuple[AnyMessage, int | None]) -> bool:
    return isinstance(source[0], HumanMessage)


def _convert(messages: Sequence[AnyMessage], bases: list[str]) -> list[tuple[Chunk, Any]]:
    """The new messages' chunks (``from_langchain``), renamed after ``bases``, and their
    sources: ``(message, None)``, or ``(message, k)`` for an ``AIMessage``'s k-th call."""
    state, _report = from_langchain(list(messages), pin_task=False)
    out: list[tuple[Chunk, Any]] = []
    for chunk in state:
        match = _IMPORTED_ID.fullmatch(chunk.id)
        assert match is not None  # from_langchain names every chunk so
        index, call = int(match[1]), match[2]
        suffix = "" if call is None else f"_call{call}"
        renamed = attrs.evolve(chunk, id=f"{bases[index]}{suffix}")
        out.append((renamed, (messages[index], None if call is None else int(call))))
    return out


class MemctxMiddleware(AgentMiddleware):
    """Fit the agent's messages with ``policy`` before each model call (see the module)."""

    def __init__(self, policy: ContextPolicy, *, thread_id: str | None = None) -> None:
        super().__init__()
        self._fit = RunFit(policy, is_prompt=_is_prompt, thread_id=thread_id, prefix="msg")

    @property
    def policy(self) -> ContextPolicy:
        return self._fit.policy

    @property
    def last_step(self) -> PolicyStep | None:
        """The policy's step for the newest model call."""
        return self._fit.last_step

    def before_model(self, state: AgentState[Any], runtime: Runtime[Any]) -> dict[str, Any] | None:
        return self._fitted(state["messages"], self._fit.step)

    async def abefore_model(
        self, state: AgentState[Any], runtime: Runtime[Any]
    ) -> dict[str, Any] | None:
        messages: list[AnyMessage] = list(state["messages"])
        if not messages:
            return None
        prepared, memo = self._fit.prepare(messages, messages, _convert, None)
        step = await self._fit.astep(prepared)
        return self._update(messages, self._fit.finish(step, memo))

    def _fitted(
        self, given: Sequence[AnyMessage], run: Callable[[MemoryState], PolicyStep]
    ) -> dict[str, Any] | None:
        messages = list(given)
        if not messages:
            return None
        prepared, memo = self._fit.prepare(messages, messages, _convert, None)
        return self._update(messages, self._fit.finish(run(prepared), memo))

    def _update(self, messages: list[AnyMessage], kept: list[Kept]) -> dict[str, Any] | None:
        """The state update replacing the messages by the fitted ones (none if unchanged)."""
        out = self._assemble(kept)
        self._fit.remember_sent(out)
        if out == messages:
            return None
        return {"messages": [RemoveMessage(id=REMOVE_ALL_MESSAGES), *out]}

    def _assemble(self, kept: list[Kept]) -> list[AnyMessage]:
        out: list[AnyMessage] = []
        groups: list[tuple[AnyMessage, list[Kept]]] = []
        for k in kept:
            if k.source is None:
                groups.append((self._summary(k.chunk), []))
                continue
            message = k.source[0]
            if groups and groups[-1][0] is message:
                groups[-1][1].append(k)
            else:
                groups.append((message, [k]))
        for message, members in groups:
            out.append(message if not members else _rebuilt(message, members))
        return out

    def _summary(self, chunk: Chunk) -> AnyMessage:
        rendered = ContextMessage(role="user", content=self._fit.render(chunk))
        (message,) = to_langchain([rendered])
        return HumanMessage(content=message.content, id=f"memctx-{chunk.id}")


def _rebuilt(message: AnyMessage, members: list[Kept]) -> AnyMessage:
    """``message`` as the kept chunks made of it say: itself when nothing was dropped or
    changed, else a copy with the kept calls and the new content."""
    if isinstance(message, AIMessage):
        calls = {k.source[1]: k for k in members if k.source[1] is not None}
        text = [k for k in members if k.source[1] is None]
        whole = len(calls) == len(message.tool_calls) and (bool(text) or not message.content)
        if whole and not any(k.changed for k in members):
            return message
        tool_calls = []
        for index, call in enumerate(message.tool_calls):
            if index in calls:
                chunk = calls[index].chunk
                args = dict(chunk.content) if calls[index].changed else call["args"]
                tool_calls.append({**call, "args": args})
        content = message.content if text else ""
        return message.model_copy(update={"content": content, "tool_calls": tool_calls})
    (only,) = members
    if only.changed:
        return message.model_copy(update={"content": only.chunk.text})
    return message
