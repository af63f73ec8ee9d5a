"""Chat sessions kept in a store thread, safe with several processes posting at once."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any, Final

import attrs

from memctx import chunks
from memctx._chunk import Chunk, ChunkType
from memctx._exceptions import ChatError, UnknownAgentError
from memctx._validators import require_store
from memctx.chat._agents import ChatAgent
from memctx.chat._context import ChatContext, build_chat_context
from memctx.chat._history import DEFAULT_WINDOW, ChatMessage, ChatRole
from memctx.chat._mentions import parse_mentions
from memctx.chat._modes import WORKFLOW, ModeState, RoleMap, select_targets
from memctx.chat._settings import ChatSettings, now

if TYPE_CHECKING:
    from memctx.store import MemoryStore

CHAT_KEY: Final = "chat"
"""The key of a message chunk's ``custom`` metadata that holds its round (and agent)."""


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

    def __init__(self, store: MemoryStore, session_id: str, *, parent: str | None = None) -> None:
        require_store(store)
        self.store = store
        self.id = session_id
        settings = self.settings()  # checks that the thread holds a session
        if parent is not None and settings.parent != parent:
            owner = "no thread" if settings.parent is None else f"thread {settings.parent!r}"
            raise ChatError(f"session {session_id!r} belongs to {owner}, not to {parent!r}")

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
        parent: str | None = None,
    ) -> ChatSession:
        """Create a session in a new thread (``ThreadExistsError`` if the id is taken).

        ``session_id`` is generated (``thread_<hex>``) when not given.
        ``parent`` names what the session belongs to (a conversation thread,
        a project): :meth:`open` with another parent refuses it. Everything
        is checked before anything is written: the agents (as
        :class:`AgentLookup` does), the mode, the window, and in the
        workflow mode that every node has an agent.
        """
        require_store(store)
        settings = ChatSettings.new(agents, mode, role_map, mode_state, window, parent)
        thread_id = store.create_thread(session_id)
        _initialise(store, thread_id, settings)
        return cls(store, thread_id)

    @classmethod
    def open(cls, store: MemoryStore, session_id: str, *, parent: str | None = None) -> ChatSession:
        """The session in thread ``session_id``.

        ``ChatError`` if the thread holds no session, or when ``parent`` is
        given and the session belongs to another one (a session is never
        used across the threads it was not made for).
        """
        return cls(store, session_id, parent=parent)

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
        parent: str | None = None,
    ) -> ChatSession:
        """The session ``session_id``, created with these settings if there is none yet.

        Safe when several processes do it at once: the first one's settings
        win. An existing session of another ``parent`` is refused.
        """
        require_store(store)
        settings = ChatSettings.new(agents, mode, role_map, mode_state, window, parent)
        store.create_thread(session_id, exist_ok=True)
        _initialise(store, session_id, settings)
        return cls(store, session_id, parent=parent)

    # -- reading ------------------------------------------------------------------------------

    def settings(self) -> ChatSettings:
        """The session's settings (agents, mode, mode state, counts), read afresh."""
        return ChatSettings.from_metadata(self.store.thread_metadata(self.id), self.id)

    @property
    def agents(self) -> tuple[ChatAgent, ...]:
        """The session's agents."""
        return self.settings().agents

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
            config = ChatSettings.from_metadata(metadata, self.id)
            mentions = parse_mentions(text, config.lookup)
            targets = select_targets(
                config.mode, mentions, config.lookup, config.role_map, config.mode_state
            )
            number, seq = config.rounds + 1, config.messages + 1
            opened.update(config=config, number=number, message_id=f"msg-{seq}")
            chunk = chunks.user(text, id=f"msg-{seq}", custom={CHAT_KEY: {"round": number}})
            update = {"rounds": number, "messages": seq, "updated_at": now().isoformat()}
            if config.mode == WORKFLOW:
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
            config = ChatSettings.from_metadata(metadata, self.id)
            if config.mode != WORKFLOW:
                raise ChatError(f"step: only the workflow mode has steps, not {config.mode}")
            targets = select_targets(
                WORKFLOW, None, config.lookup, config.role_map, config.mode_state
            )
            assert targets.mode_state is not None
            number = config.rounds + 1
            opened.update(config=config, number=number)
            update = {
                "rounds": number,
                "mode_state": targets.mode_state.to_dict(),
                "updated_at": now().isoformat(),
            }
            return [], update

        self.store.append_with(self.id, make)
        return self._round(opened["config"], opened["number"], None)

    def preview(self, text: str | None = None) -> ChatRound:
        """The round :meth:`post` (``text``) or :meth:`step` (None) would open now, stored
        nowhere: build its prompts first, and a failure writes nothing."""
        config = self.settings()
        message = None
        if text is not None:
            if not isinstance(text, str):
                raise ChatError(f"text: must be a string, got {type(text).__name__}")
            message = ChatMessage("user", text, id=f"msg-{config.messages + 1}")
        elif config.mode != WORKFLOW:
            raise ChatError(f"step: only the workflow mode has steps, not {config.mode}")
        return self._round(config, config.rounds + 1, message)

    def _round(self, config: ChatSettings, number: int, message: ChatMessage | None) -> ChatRound:
        earlier = [m for m, round_ in self._messages() if round_ < number]
        if message is not None:
            earlier.append(message)
        context = build_chat_context(
            message,
            earlier,
            config.lookup,
            config.mode,
            role_map=config.role_map,
            mode_state=config.mode_state,
            window=config.window,
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
            config = ChatSettings.from_metadata(metadata, self.id)
            config.lookup.agent(agent_id)
            if not 1 <= number <= config.rounds:
                raise ChatError(f"round: the session has no round {number}")
            seq = config.messages + 1
            stored["id"] = f"msg-{seq}"
            custom = {CHAT_KEY: {"round": number, "agent_id": agent_id}}
            chunk = chunks.assistant(text, id=stored["id"], custom=custom)
            return [chunk], {"messages": seq, "updated_at": now().isoformat()}

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
        fresh = ChatSettings.new(self.agents, mode, role_map, mode_state, DEFAULT_WINDOW)
        keys = ("mode", "mode_state", "role_map", "updated_at")
        metadata = fresh.to_metadata()
        self.store.update_thread_metadata(self.id, {key: metadata[key] for key in keys})


def _initialise(store: MemoryStore, thread_id: str, settings: ChatSettings) -> None:
    """Write ``settings`` into the thread unless it holds a session already."""

    def make(length: int, metadata: dict[str, Any]) -> tuple[list[Chunk], dict[str, Any] | None]:
        if "agents" in metadata:
            return [], None
        if length:
            raise ChatError(f"thread {thread_id!r} holds chunks but no chat session")
        return [], settings.to_metadata()

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
