"""Chat sessions kept in a store thread, safe with several processes posting at once."""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any, Final

import attrs

from memctx import chunks
from memctx._chunk import Chunk, ChunkType
from memctx._exceptions import ChatError, UnknownAgentError
from memctx.chat._agents import AgentLookup, ChatAgent
from memctx.chat._context import ChatContext, build_chat_context
from memctx.chat._history import DEFAULT_WINDOW, ChatMessage, ChatRole, check_window
from memctx.chat._mentions import parse_mentions
from memctx.chat._modes import (
    WORKFLOW,
    WORKFLOW_CHAIN,
    ModeState,
    RoleMap,
    as_mode_state,
    check_mode,
    select_targets,
)

if TYPE_CHECKING:
    from memctx.store import MemoryStore

CHAT_KEY: Final = "chat"
"""The key of a message chunk's ``custom`` metadata that holds its round (and agent)."""


def _now() -> str:
    return dt.datetime.now(dt.UTC).isoformat()


@attrs.frozen
class ChatRound:
    """One round of a session: its number, the input that opened it, and its context.

    ``message`` is the stored user message (``None`` for a workflow step);
    every target in ``context.targets.agent_ids`` is prompted with
    ``context`` — the history as it was before the round.
    """

    number: int
    message: ChatMessage | None
    context: ChatContext

    @property
    def agent_ids(self) -> tuple[str, ...]:
        """The agents that answer this round."""
        return self.context.targets.agent_ids


def _role_map_json(role_map: RoleMap | None) -> dict[str, Any] | None:
    if role_map is None:
        return None
    if not isinstance(role_map, Mapping):
        raise ChatError(f"role_map: must be a mapping, got {type(role_map).__name__}")
    return {
        str(node): value if isinstance(value, str) else list(value)
        for node, value in role_map.items()
    }


class ChatSession:
    """A chat session persisted in a store thread.

    The thread's metadata holds the session: ``agents``, ``mode``,
    ``mode_state``, ``role_map``, ``window``, ``rounds`` (how many were
    opened), ``messages`` (how many were stored) and ``updated_at``. Each
    message is an AGENT chunk with the id ``msg-<n>`` (gap-free) and, in its
    ``custom`` metadata under ``"chat"``, its round and (for an agent's
    message) the agent's id.

    :meth:`post` and :meth:`reply` write the message and the metadata it
    changes in one transaction, decided under the thread's write lock, so
    any number of processes may post to one session: no message is lost or
    duplicated, rounds are numbered without gaps, and each workflow round
    gets the node after the previous round's.
    """

    def __init__(self, store: MemoryStore, session_id: str) -> None:
        self.store = store
        self.id = session_id
        self._config(store.thread_metadata(session_id))  # checks it is a session

    # -- creating and opening ----------------------------------------------------------------

    @classmethod
    def create(
        cls,
        store: MemoryStore,
        session_id: str | None = None,
        *,
        agents: Iterable[ChatAgent],
        mode: str = "free_chat",
        role_map: RoleMap | None = None,
        mode_state: ModeState | Mapping[str, Any] | None = None,
        window: int = DEFAULT_WINDOW,
    ) -> ChatSession:
        """Create a session in a new thread (``ThreadExistsError`` if the id is taken).

        Everything is checked before anything is written: the agents (as
        :class:`AgentLookup` does), the mode, the window, and in the
        workflow mode that every node has an agent.
        """
        settings = _new_settings(agents, mode, role_map, mode_state, window)
        thread_id = store.create_thread(session_id)
        _initialise(store, thread_id, settings)
        return cls(store, thread_id)

    @classmethod
    def open(cls, store: MemoryStore, session_id: str) -> ChatSession:
        """The session in thread ``session_id`` (``ChatError`` if the thread holds no session)."""
        return cls(store, session_id)

    @classmethod
    def open_or_create(
        cls,
        store: MemoryStore,
        session_id: str,
        *,
        agents: Iterable[ChatAgent],
        mode: str = "free_chat",
        role_map: RoleMap | None = None,
        mode_state: ModeState | Mapping[str, Any] | None = None,
        window: int = DEFAULT_WINDOW,
    ) -> ChatSession:
        """The session ``session_id``, created with these settings if there is none yet.

        Safe when several processes do it at once: the first one's settings win.
        """
        settings = _new_settings(agents, mode, role_map, mode_state, window)
        store.create_thread(session_id, exist_ok=True)
        _initialise(store, session_id, settings)
        return cls(store, session_id)

    # -- reading ------------------------------------------------------------------------------

    def _config(self, metadata: Mapping[str, Any]) -> dict[str, Any]:
        if "agents" not in metadata or "mode" not in metadata:
            raise ChatError(f"thread {self.id!r} holds no chat session")
        try:
            agents = AgentLookup(ChatAgent.from_dict(a) for a in metadata["agents"])
        except TypeError as exc:
            raise ChatError(f"session {self.id!r}: malformed agents: {exc}") from None
        state = metadata.get("mode_state")
        return {
            "lookup": agents,
            "mode": check_mode(metadata["mode"]),
            "mode_state": None if state is None else ModeState.from_dict(state),
            "role_map": metadata.get("role_map"),
            "window": check_window(metadata.get("window", DEFAULT_WINDOW)),
            "rounds": int(metadata.get("rounds", 0)),
            "messages": int(metadata.get("messages", 0)),
            "updated_at": metadata.get("updated_at"),
        }

    def settings(self) -> dict[str, Any]:
        """The session's current settings, read afresh from the store.

        Keys: ``agents`` (tuple of :class:`ChatAgent`), ``mode``, ``mode_state``
        (:class:`ModeState` or ``None``), ``role_map``, ``window``, ``rounds``,
        ``messages`` and ``updated_at`` (ISO 8601, UTC).
        """
        config = self._config(self.store.thread_metadata(self.id))
        config["agents"] = config.pop("lookup").agents
        return config

    @property
    def agents(self) -> tuple[ChatAgent, ...]:
        """The session's agents."""
        agents: tuple[ChatAgent, ...] = self.settings()["agents"]
        return agents

    def history(self) -> tuple[ChatMessage, ...]:
        """The session's visible messages, in the order they were stored."""
        return tuple(message for message, _ in self._messages())

    def _messages(self) -> list[tuple[ChatMessage, int]]:
        found = []
        for chunk in self.store.get_current_state(self.id):
            read = _read_message(chunk)
            if read is not None:
                found.append(read)
        return found

    # -- writing ------------------------------------------------------------------------------

    def post(self, text: str) -> ChatRound:
        """Store the user's ``text`` as the input of a new round; return the round.

        In one transaction: the message is stored, the round numbered, and in
        the workflow mode the mode state advanced to the next node. The
        round's context holds the history of the earlier rounds only, so
        messages that other processes store meanwhile never show up in it.
        """
        if not isinstance(text, str):
            raise ChatError(f"text: must be a string, got {type(text).__name__}")
        opened: dict[str, Any] = {}

        def make(length: int, metadata: dict[str, Any]) -> tuple[list[Chunk], dict[str, Any]]:
            config = self._config(metadata)
            lookup: AgentLookup = config["lookup"]
            mentions = parse_mentions(text, lookup)
            targets = select_targets(
                config["mode"], mentions, lookup, config["role_map"], config["mode_state"]
            )
            number, seq = config["rounds"] + 1, config["messages"] + 1
            opened.update(config=config, number=number, message_id=f"msg-{seq}")
            chunk = chunks.user(text, id=f"msg-{seq}", custom={CHAT_KEY: {"round": number}})
            update = {"rounds": number, "messages": seq, "updated_at": _now()}
            if config["mode"] == WORKFLOW:
                assert targets.mode_state is not None
                update["mode_state"] = targets.mode_state.to_dict()
            return [chunk], update

        self.store.append_with(self.id, make)
        message = ChatMessage("user", text, id=opened["message_id"])
        return self._round(opened["config"], opened["number"], message)

    def step(self) -> ChatRound:
        """Open a round without new input: the workflow's next node takes its turn.

        Only in the workflow mode (``ChatError`` otherwise). The mode state
        advances in one transaction, as :meth:`post` does.
        """
        opened: dict[str, Any] = {}

        def make(length: int, metadata: dict[str, Any]) -> tuple[list[Chunk], dict[str, Any]]:
            config = self._config(metadata)
            if config["mode"] != WORKFLOW:
                raise ChatError(f"step: only the workflow mode has steps, not {config['mode']}")
            targets = select_targets(
                WORKFLOW, None, config["lookup"], config["role_map"], config["mode_state"]
            )
            assert targets.mode_state is not None
            number = config["rounds"] + 1
            opened.update(config=config, number=number)
            update = {
                "rounds": number,
                "mode_state": targets.mode_state.to_dict(),
                "updated_at": _now(),
            }
            return [], update

        self.store.append_with(self.id, make)
        return self._round(opened["config"], opened["number"], None)

    def _round(self, config: dict[str, Any], number: int, message: ChatMessage | None) -> ChatRound:
        earlier = [m for m, round_ in self._messages() if round_ < number]
        if message is not None:
            earlier.append(message)
        context = build_chat_context(
            message,
            earlier,
            config["lookup"],
            config["mode"],
            role_map=config["role_map"],
            mode_state=config["mode_state"],
            window=config["window"],
        )
        return ChatRound(number, message, context)

    def reply(self, round: ChatRound | int, agent_id: str, text: str) -> ChatMessage:
        """Store ``agent_id``'s answer to ``round`` (a :class:`ChatRound` or its number).

        The agent must be one of the session's agents, and one of the round's
        targets when the round itself is given. Returns the stored message.
        """
        if not isinstance(text, str):
            raise ChatError(f"text: must be a string, got {type(text).__name__}")
        if isinstance(round, ChatRound):
            number = round.number
            if agent_id not in round.agent_ids:
                raise UnknownAgentError(agent_id, round.agent_ids, f"round {number} targets")
        elif isinstance(round, int) and not isinstance(round, bool):
            number = round
        else:
            raise ChatError(f"round: expected a ChatRound or a round number, got {round!r}")
        stored: dict[str, str] = {}

        def make(length: int, metadata: dict[str, Any]) -> tuple[list[Chunk], dict[str, Any]]:
            config = self._config(metadata)
            config["lookup"].agent(agent_id)
            if not 1 <= number <= config["rounds"]:
                raise ChatError(f"round: the session has no round {number}")
            seq = config["messages"] + 1
            stored["id"] = f"msg-{seq}"
            custom = {CHAT_KEY: {"round": number, "agent_id": agent_id}}
            chunk = chunks.assistant(text, id=stored["id"], custom=custom)
            return [chunk], {"messages": seq, "updated_at": _now()}

        self.store.append_with(self.id, make)
        return ChatMessage("assistant", text, agent_id, id=stored["id"])

    def set_mode(
        self,
        mode: str,
        *,
        role_map: RoleMap | None = None,
        mode_state: ModeState | Mapping[str, Any] | None = None,
    ) -> None:
        """Switch the session to ``mode``, with a role map and a state for the workflow.

        Checked as :meth:`create` checks them; the agents and messages stay.
        """
        settings = _new_settings(self.agents, mode, role_map, mode_state, DEFAULT_WINDOW)
        keys = ("mode", "mode_state", "role_map", "updated_at")
        self.store.update_thread_metadata(self.id, {key: settings[key] for key in keys})


def _new_settings(
    agents: Iterable[ChatAgent],
    mode: str,
    role_map: RoleMap | None,
    mode_state: ModeState | Mapping[str, Any] | None,
    window: int,
) -> dict[str, Any]:
    """The metadata of a new session, every setting checked."""
    lookup = AgentLookup(agents)
    check_mode(mode)
    check_window(window)
    state = as_mode_state(mode_state) if mode == WORKFLOW or mode_state is not None else None
    if mode == WORKFLOW:
        for node in WORKFLOW_CHAIN:
            select_targets(mode, None, lookup, role_map, ModeState(node))
    return {
        "agents": [agent.to_dict() for agent in lookup.agents],
        "mode": mode,
        "mode_state": None if state is None else state.to_dict(),
        "role_map": _role_map_json(role_map),
        "window": window,
        "rounds": 0,
        "messages": 0,
        "updated_at": _now(),
    }


def _initialise(store: MemoryStore, thread_id: str, settings: dict[str, Any]) -> None:
    """Write ``settings`` into the thread unless it holds a session already."""

    def make(length: int, metadata: dict[str, Any]) -> tuple[list[Chunk], dict[str, Any] | None]:
        if "agents" in metadata:
            return [], None
        if length:
            raise ChatError(f"thread {thread_id!r} holds chunks but no chat session")
        return [], settings

    store.append_with(thread_id, make)


def _read_message(chunk: Chunk) -> tuple[ChatMessage, int] | None:
    """A stored chunk as (message, round), or None when it is not a chat message."""
    if chunk.type is not ChunkType.AGENT or chunk.role not in ("user", "assistant"):
        return None
    info = chunk.metadata.custom.get(CHAT_KEY)
    if not isinstance(info, Mapping) or not isinstance(info.get("round"), int):
        return None
    agent = info.get("agent_id")
    content = chunk.content if isinstance(chunk.content, str) else str(chunk.content)
    role: ChatRole = "user" if chunk.role == "user" else "assistant"
    return ChatMessage(role, content, agent if isinstance(agent, str) else None, id=chunk.id), int(
        info["round"]
    )
