"""A chat session's settings, as kept in its store thread's metadata."""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable, Mapping
from typing import Any

import attrs

from memctx._exceptions import ChatError
from memctx.chat._agents import AgentLookup, ChatAgent
from memctx.chat._history import DEFAULT_WINDOW, check_window
from memctx.chat._modes import (
    WORKFLOW,
    WORKFLOW_CHAIN,
    ModeState,
    RoleMap,
    as_mode_state,
    check_mode,
    select_targets,
)


def now() -> dt.datetime:
    """The current time in UTC."""
    return dt.datetime.now(dt.UTC)


def _role_map(value: RoleMap | None) -> dict[str, tuple[str, ...]] | None:
    if value is None:
        return None
    if not isinstance(value, Mapping):
        raise ChatError(f"role_map: must be a mapping, got {type(value).__name__}")
    out: dict[str, tuple[str, ...]] = {}
    for node, agents in value.items():
        ids = (agents,) if isinstance(agents, str) else tuple(agents)
        if not all(isinstance(agent_id, str) for agent_id in ids):
            raise ChatError(f"role_map[{node!r}]: must be an agent id or a list of them")
        out[str(node)] = ids
    return out


def _count(metadata: Mapping[str, Any], key: str) -> int:
    value = metadata.get(key, 0)
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise ChatError(f"{key}: must be an integer >= 0, got {value!r}")
    return value


@attrs.frozen
class ChatSettings:
    """What a :class:`~memctx.chat.ChatSession` keeps besides its messages.

    ``rounds`` is how many rounds were opened, ``messages`` how many
    messages were stored (the last message id is ``msg-<messages>``),
    ``updated_at`` when the session last changed, ``parent`` what the
    session belongs to (or ``None``).
    """

    agents: tuple[ChatAgent, ...]
    mode: str
    mode_state: ModeState | None
    role_map: Mapping[str, tuple[str, ...]] | None = attrs.field(hash=False)
    window: int = DEFAULT_WINDOW
    rounds: int = 0
    messages: int = 0
    updated_at: dt.datetime | None = None
    parent: str | None = None
    lookup: AgentLookup = attrs.field(init=False, eq=False, repr=False, hash=False)

    def __attrs_post_init__(self) -> None:
        object.__setattr__(self, "lookup", AgentLookup(self.agents))

    @classmethod
    def new(
        cls,
        agents: Iterable[ChatAgent],
        mode: str,
        role_map: RoleMap | None,
        mode_state: ModeState | Mapping[str, Any] | None,
        window: int,
        parent: str | None = None,
    ) -> ChatSettings:
        """Settings of a new session, every one checked.

        In the workflow mode every node of the chain must have an agent, and
        the mode state starts at the coder unless given.
        """
        lookup = AgentLookup(agents)
        if not lookup.agents:
            raise ChatError("agents: a chat needs at least one agent")
        check_mode(mode)
        check_window(window)
        roles = _role_map(role_map)
        if mode == WORKFLOW:
            for node in WORKFLOW_CHAIN:
                select_targets(mode, None, lookup, roles, ModeState(node))
        state = as_mode_state(mode_state) if mode == WORKFLOW or mode_state is not None else None
        if parent is not None and (not isinstance(parent, str) or not parent):
            raise ChatError(f"parent: must be a non-empty string or None, got {parent!r}")
        return cls(lookup.agents, mode, state, roles, window, updated_at=now(), parent=parent)

    @classmethod
    def from_metadata(cls, metadata: Mapping[str, Any], thread_id: str) -> ChatSettings:
        """The settings kept in a thread's metadata; ``ChatError`` if it holds no session."""
        if "agents" not in metadata or "mode" not in metadata:
            raise ChatError(f"thread {thread_id!r} holds no chat session")
        try:
            agents = metadata["agents"]
            if not isinstance(agents, list):
                raise ChatError(f"agents: must be a list, got {type(agents).__name__}")
            state = metadata.get("mode_state")
            stamp = metadata.get("updated_at")
            parent = metadata.get("parent")
            if parent is not None and not isinstance(parent, str):
                raise ChatError(f"parent: must be a string, got {type(parent).__name__}")
            return cls(
                tuple(ChatAgent.from_dict(agent) for agent in agents),
                check_mode(metadata["mode"]),
                None if state is None else ModeState.from_dict(state),
                _role_map(metadata.get("role_map")),
                check_window(metadata.get("window", DEFAULT_WINDOW)),
                _count(metadata, "rounds"),
                _count(metadata, "messages"),
                None if stamp is None else dt.datetime.fromisoformat(stamp),
                parent,
            )
        except (ChatError, TypeError, ValueError) as exc:
            raise ChatError(f"session {thread_id!r} has malformed settings: {exc}") from None

    def to_metadata(self) -> dict[str, Any]:
        """The settings as the JSON object kept in the thread's metadata."""
        return {
            "agents": [agent.to_dict() for agent in self.agents],
            "mode": self.mode,
            "mode_state": None if self.mode_state is None else self.mode_state.to_dict(),
            "role_map": None
            if self.role_map is None
            else {node: list(ids) for node, ids in self.role_map.items()},
            "window": self.window,
            "rounds": self.rounds,
            "messages": self.messages,
            "updated_at": None if self.updated_at is None else self.updated_at.isoformat(),
            "parent": self.parent,
        }
