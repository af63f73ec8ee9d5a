"""One call that gives a chat round everything its prompts need."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any, Final

import attrs

from memctx import chunks
from memctx._chunk import Chunk
from memctx._exceptions import ChatError
from memctx._state import MemoryState
from memctx.chat._agents import AgentLookup, ChatAgent, as_lookup
from memctx.chat._history import (
    DEFAULT_WINDOW,
    ChatMessage,
    as_history,
    as_message,
    check_window,
    prompt_history,
    workflow_task_prompt,
)
from memctx.chat._mentions import Mentions, parse_mentions
from memctx.chat._modes import WORKFLOW, WORKFLOW_CHAIN, ModeState, RoleMap, Targets, select_targets


@attrs.frozen
class ChatContext:
    """What every target of one round is prompted with.

    - ``targets``: the agents that answer (and the mode state to save);
    - ``prompt_user_text``: the current input without its mentions (the
      input as written when it held nothing but mentions; ``""`` for a
      round without input);
    - ``prompt_history``: the last messages before the current input, never
      the input itself; every target of the round gets this same history;
    - ``workflow_task_prompt``: the task built from the user's messages, the
      current input included.

    :meth:`state_for` turns it into one agent's :class:`~memctx.MemoryState`,
    ready for :meth:`~memctx.ContextBuilder.build`.
    """

    targets: Targets
    prompt_user_text: str
    prompt_history: tuple[ChatMessage, ...]
    workflow_task_prompt: str
    mode: str = "free_chat"
    mentions: Mentions = attrs.field(factory=lambda: Mentions((), ""))
    agents: tuple[ChatAgent, ...] = ()

    def state_for(self, agent_id: str) -> MemoryState:
        """The prompt of ``agent_id`` as a state: persona and colleagues, history, input.

        - a SYSTEM chunk: who the agent is (display name, persona), its
          colleagues (each with ``@id`` and persona), and in the workflow
          mode the node it plays and the task;
        - the history: the agent's own messages as assistant turns; the
          user's and other agents' as user turns whose first line says who
          wrote them (``From: user``, ``From: Coder Cat (@coder)``);
        - the current input, pinned, as the last user turn (``From: user``).

        The ``From:`` line is written by memctx, never taken from a message:
        whatever a user types (``Coder Cat: LGTM``, or a ``From:`` line of
        its own) comes after it, so no message can pose as another speaker.
        Chunk ids are ``persona``, ``history-1``, ``history-2``, ... and ``input``.
        """
        lookup = AgentLookup(self.agents)
        me = lookup.agent(agent_id)
        items: list[Chunk] = [chunks.system(self._system_text(me), id="persona")]
        for number, message in enumerate(self.prompt_history, start=1):
            item_id = f"history-{number}"
            if message.role == "assistant" and message.agent_id == me.id:
                items.append(chunks.assistant(message.content, id=item_id))
            else:
                text = f"{_from(message, lookup)}\n{message.content}"
                items.append(chunks.user(text, id=item_id))
        if self.prompt_user_text:
            text = f"{FROM_USER}\n{self.prompt_user_text}"
            items.append(chunks.user(text, id="input", pinned=True))
        return MemoryState(items)

    def _system_text(self, me: ChatAgent) -> str:
        lines = [f"You are {me.display_name} (@{me.id})."]
        if me.persona:
            lines.append(me.persona)
        colleagues = [agent for agent in self.agents if agent.id != me.id]
        if colleagues:
            lines += ["", "Your colleagues in this chat:"]
            lines += [
                f"- {a.display_name} (@{a.id})" + (f": {a.persona}" if a.persona else "")
                for a in colleagues
            ]
        if self.mode == WORKFLOW and self.targets.node is not None:
            lines += [
                "",
                f"This is a workflow ({' → '.join(WORKFLOW_CHAIN)}); "
                f"you act as the {self.targets.node}.",
            ]
            if self.workflow_task_prompt:
                lines += ["", "Task:", self.workflow_task_prompt]
        return "\n".join(lines)


FROM_USER: Final = "From: user"
"""The first line of each of the user's messages in a chat prompt."""


def _from(message: ChatMessage, lookup: AgentLookup) -> str:
    """The line naming who wrote ``message``: ``From: user`` or ``From: <name> (@<id>)``."""
    if message.role == "user":
        return FROM_USER
    if message.agent_id is None:
        return "From: an agent"
    found = lookup.get(message.agent_id)
    name = found.display_name if found is not None and found.id == message.agent_id else None
    return f"From: {name or message.agent_id} (@{message.agent_id})"


def _is_current(last: ChatMessage, current: ChatMessage) -> bool:
    if last.id is not None and current.id is not None:
        return last.id == current.id
    return last.role == "user" and last.content == current.content


def build_chat_context(
    message: str | ChatMessage | Mapping[str, Any] | None,
    history: Iterable[ChatMessage | Mapping[str, Any]],
    agents: AgentLookup | Iterable[ChatAgent],
    mode: str,
    role_map: RoleMap | None = None,
    mode_state: ModeState | Mapping[str, Any] | None = None,
    window: int = DEFAULT_WINDOW,
) -> ChatContext:
    """Targets, input, history window and task prompt of one round, in one call.

    ``message`` is the current input (text, or a user :class:`ChatMessage`);
    ``None`` for a round without one (a workflow step). It may already be
    the last message of ``history`` — saved first, then the history read
    back — and is then left out of the history, so a prompt never holds it
    twice. It is recognised by ``id`` when both have one, else as a user
    message with the same text. The targets come from
    :func:`~memctx.chat.select_targets`, the window from
    :func:`~memctx.chat.prompt_history`, the task from
    :func:`~memctx.chat.workflow_task_prompt` over the history and the input.
    """
    lookup = as_lookup(agents)
    messages = as_history(history)
    check_window(window)
    current: ChatMessage | None
    if message is None:
        current = None
    elif isinstance(message, str):
        current = ChatMessage("user", message)
    else:
        current = as_message(message)
        if current.role != "user":
            raise ChatError(
                f"message: the current input must be a user message, not {current.role}"
            )
    if current is not None and messages and _is_current(messages[-1], current):
        messages = messages[:-1]
    if current is None:
        mentions = Mentions((), "")
        user_text = ""
    else:
        mentions = parse_mentions(current.content, lookup)
        user_text = mentions.clean_text or current.content.strip()
    targets = select_targets(mode, mentions, lookup, role_map=role_map, mode_state=mode_state)
    task = workflow_task_prompt(messages + ((current,) if current is not None else ()))
    return ChatContext(
        targets=targets,
        prompt_user_text=user_text,
        prompt_history=prompt_history(messages, window),
        workflow_task_prompt=task,
        mode=mode,
        mentions=mentions,
        agents=lookup.agents,
    )
