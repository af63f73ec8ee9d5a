"""TeamConversation: several agents and people in one conversation, each agent with its context."""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Mapping
from typing import TYPE_CHECKING, Any, TypeVar, Unpack

from memctx import BuildKwargs, ContextBuilder, ContextBuildResult, create_builder
from memctx._exceptions import BuildOptionError, TeamMessageError
from memctx._validators import require_store
from memctx.team._agent_types import normalize_agent_type
from memctx.team._assemblers import ASSEMBLERS, PlainTextAssembler
from memctx.team._build import AgentView, TeamMessageRenderer
from memctx.team._context import agent_context
from memctx.team._memory import InMemoryMessages, MessageKeeper
from memctx.team._snapshot import dump_snapshot, parse_snapshot
from memctx.team._values import (
    DEFAULT_MAX_BYTES,
    DEFAULT_WINDOW_SIZE,
    MAX_TEAM_TASK_BYTES,
    AgentContext,
    AssembledPrompt,
    Speaker,
    TeamMessage,
    replace_lone_surrogates,
    utf8_prefix,
)

if TYPE_CHECKING:
    from memctx.store import MemoryStore

__all__ = ["TeamConversation"]

logger = logging.getLogger("memctx.team")

MessageHook = Callable[[TeamMessage], object]
TaskHook = Callable[[str | None], object]


def _count(option: str, value: object, minimum: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise BuildOptionError(option, f"must be an int >= {minimum}, got {value!r}")
    return value


def _optional_text(name: str, value: object) -> str | None:
    if value is not None and not isinstance(value, str):
        raise TeamMessageError(f"{name} must be a string or None, got {type(value).__name__}")
    return value


def _clean_speaker(speaker: Speaker) -> Speaker:
    role_id = replace_lone_surrogates(speaker.role_id)
    role_name = replace_lone_surrogates(speaker.role_name)
    if (role_id, role_name) == (speaker.role_id, speaker.role_name):
        return speaker
    return Speaker(role_id, role_name, speaker.type)


def _addressees(addressees: Iterable[str] | None) -> tuple[str, ...]:
    if addressees is None:
        return ()
    if isinstance(addressees, str):
        raise TeamMessageError("Message addressees must be a sequence of names, not one string")
    if isinstance(addressees, bytes | Mapping) or not isinstance(addressees, Iterable):
        raise TeamMessageError(
            f"Message addressees must be a sequence of names, got {type(addressees).__name__}"
        )
    names = tuple(addressees)
    for name in names:
        if not isinstance(name, str):
            raise TeamMessageError(f"Message addressees must be strings, got {name!r}")
    return tuple(replace_lone_surrogates(name) for name in names)


H = TypeVar("H")


def _hook(name: str, hook: H) -> H:
    if hook is not None and not callable(hook):
        raise TeamMessageError(f"{name} must be a function or None, got {type(hook).__name__}")
    return hook


class TeamConversation:
    """A conversation among AI agents and people, and the context each agent gets.

    Messages get the ids ``msg-1``, ``msg-2``, ... in the order they are
    added. :meth:`context_for_agent` gives the agent about to answer the
    latest message the ``window_size`` messages before it (markers stripped,
    an AI's repeat de-duplicated), the team task and its instructions;
    :meth:`assemble_prompt` lays that out for the agent's type within
    ``max_bytes``; :meth:`build_for_agent` gives the same view as a memctx
    build within a token budget.

    ``on_message_added(message)`` is called after each message is stored and
    ``on_team_task_changed(task)`` after the team task is set, cleared (None)
    or imported. An exception from a hook propagates; what was stored stays.

    In memory by default; :meth:`open` keeps the conversation in a store
    thread, shared by every process that opens it.
    """

    def __init__(
        self,
        window_size: int = DEFAULT_WINDOW_SIZE,
        max_bytes: int = DEFAULT_MAX_BYTES,
        on_message_added: MessageHook | None = None,
        on_team_task_changed: TaskHook | None = None,
    ) -> None:
        self._window_size = _count("window_size", window_size, 0)
        self._max_bytes = _count("max_bytes", max_bytes, 1)
        self._on_message_added = _hook("on_message_added", on_message_added)
        self._on_team_task_changed = _hook("on_team_task_changed", on_team_task_changed)
        self._keeper: MessageKeeper = InMemoryMessages()
        self._view = AgentView()
        self._builder: ContextBuilder | None = None

    @classmethod
    def open(
        cls,
        store: MemoryStore,
        thread_id: str,
        *,
        create: bool = True,
        window_size: int = DEFAULT_WINDOW_SIZE,
        max_bytes: int = DEFAULT_MAX_BYTES,
        on_message_added: MessageHook | None = None,
        on_team_task_changed: TaskHook | None = None,
    ) -> TeamConversation:
        """The conversation kept in the store thread ``thread_id`` (created unless ``create``
        is false: then a missing thread raises :class:`~memctx.ThreadNotFoundError`).

        Each message is a chunk of the thread; the team task and the message
        numbering are in the thread's metadata. Every read asks the store, so
        several processes can share one conversation; adding a message takes
        the thread's write lock, so ids stay unique and gap-free. The hooks
        are called in the process that made the change.
        """
        from memctx.team._stored import StoredMessages

        require_store(store)
        team = cls(window_size, max_bytes, on_message_added, on_team_task_changed)
        team._keeper = StoredMessages.open(store, thread_id, create=create)
        return team

    @property
    def window_size(self) -> int:
        """How many messages before the current one an agent's context holds by default."""
        return self._window_size

    @property
    def max_bytes(self) -> int:
        """The largest prompt, in bytes of UTF-8, that :meth:`assemble_prompt` returns."""
        return self._max_bytes

    # -- messages -----------------------------------------------------------------------

    def add_message(
        self,
        content: str,
        *,
        speaker: Speaker | None = None,
        addressees: Iterable[str] | None = (),
    ) -> TeamMessage:
        """Store a message and return it with its id (``msg-N``).

        ``content`` must be a string and ``speaker`` a :class:`Speaker` with a
        ``role_id``; ``addressees`` are the names it is routed to (none: all).
        Raises :class:`~memctx.TeamMessageError` otherwise, storing nothing.
        Lone surrogates (which have no UTF-8 form) become U+FFFD.
        """
        if content is None:
            raise TeamMessageError("Message cannot be null or undefined")
        if not isinstance(content, str):
            raise TeamMessageError("Message content must be a string")
        if speaker is None:
            raise TeamMessageError("Message speaker is required")
        if not isinstance(speaker, Speaker):
            raise TeamMessageError(
                f"Message speaker must be a Speaker, got {type(speaker).__name__}"
            )
        if not speaker.role_id:
            raise TeamMessageError("Message speaker.roleId is required")
        names = _addressees(addressees)
        message = self._keeper.add(replace_lone_surrogates(content), _clean_speaker(speaker), names)
        logger.debug("[TeamConversation] Message added: %s", message.id)
        if self._on_message_added is not None:
            self._on_message_added(message)
        return message

    @property
    def messages(self) -> tuple[TeamMessage, ...]:
        """Every message, oldest first (a tuple of immutable values: changing it changes
        nothing here)."""
        return self._keeper.messages()

    @property
    def latest_message(self) -> TeamMessage | None:
        """The newest message, or None when there is none."""
        last = self._keeper.tail(1)
        return last[0] if last else None

    # -- team task -----------------------------------------------------------------------

    def set_team_task(self, task: str) -> None:
        """Set the team task: at most 5 KB (5,120 bytes) of UTF-8.

        A longer task is cut to the longest prefix that fits, on a character
        boundary, and a warning is logged (logger ``memctx.team``).
        """
        if not isinstance(task, str):
            raise TeamMessageError(f"Team task must be a string, got {type(task).__name__}")
        task = self._capped(replace_lone_surrogates(task))
        self._keeper.set_team_task(task)
        if self._on_team_task_changed is not None:
            self._on_team_task_changed(task)

    @staticmethod
    def _capped(task: str) -> str:
        size = len(task.encode("utf-8"))
        if size <= MAX_TEAM_TASK_BYTES:
            return task
        cut = utf8_prefix(task, MAX_TEAM_TASK_BYTES)
        logger.warning(
            "[TeamConversation] TeamTask exceeded 5KB limit (%d bytes), truncated to %d bytes",
            size,
            len(cut.encode("utf-8")),
        )
        return cut

    @property
    def team_task(self) -> str | None:
        """The team task, or None when none was set."""
        return self._keeper.team_task()

    # -- contexts and prompts ------------------------------------------------------------

    def context_for_agent(
        self,
        agent_id: str,
        agent_type: str,
        *,
        window_size: int | None = None,
        system_instruction: str | None = None,
        instruction_file_text: str | None = None,
    ) -> AgentContext:
        """The context of ``agent_id`` (of type ``agent_type``) answering the latest message.

        The latest message is the current one (markers stripped); the context
        messages are the ``window_size`` (default: the conversation's)
        messages before it, each as ``PromptMessage(from_, to, content)`` with
        markers stripped; when the current message is an AI's and the last
        context message repeats it (same id, or same speaker and text), that
        one is left out. With no messages: no context messages and an empty
        current message. The team task, the instructions and ``max_bytes``
        are passed on.
        """
        if not isinstance(agent_id, str):
            raise TeamMessageError(f"agent_id must be a string, got {type(agent_id).__name__}")
        normalize_agent_type(agent_type)
        size = self._window_size if window_size is None else _count("window_size", window_size, 0)
        return agent_context(
            self._keeper.tail(size + 1),
            window_size=size,
            team_task=self._keeper.team_task(),
            system_instruction=_optional_text("system_instruction", system_instruction),
            instruction_file_text=_optional_text("instruction_file_text", instruction_file_text),
            max_bytes=self._max_bytes,
        )

    def assemble_prompt(self, agent_type: str, ctx: AgentContext) -> AssembledPrompt:
        """``ctx`` laid out for ``agent_type`` (``claude``/``claude-code``,
        ``codex``/``openai-codex``, ``gemini``/``google-gemini``, any case).

        An unknown type gets plain text, with a warning logged. The prompt is
        at most ``ctx.max_bytes`` bytes: the oldest context messages are left
        out first (see :mod:`memctx.team`).
        """
        if not isinstance(ctx, AgentContext):
            raise TeamMessageError(f"ctx must be an AgentContext, got {type(ctx).__name__}")
        normalized = normalize_agent_type(agent_type)
        assembler = ASSEMBLERS.get(normalized)
        if assembler is None:
            logger.warning(
                '[TeamConversation] Unknown agentType "%s" (normalized: "%s"), '
                "using PlainTextAssembler",
                agent_type,
                normalized,
            )
            assembler = PlainTextAssembler()
        return assembler.assemble(ctx)

    def build_for_agent(
        self,
        agent_id: str,
        max_tokens: int | None = None,
        **options: Unpack[BuildKwargs],
    ) -> ContextBuildResult:
        """``agent_id``'s view of the whole conversation as a memctx build.

        The team task is a SYSTEM chunk (``team-task``), each message a chunk
        with the message's id: the agent's own as ``assistant``, the others'
        as ``user``, with ``from``, ``from_type`` and ``to`` attributes.
        Markers are stripped and an AI's repeat is de-duplicated, as in
        :meth:`context_for_agent`; the budget replaces the window. ``options``
        are those of :meth:`memctx.ContextBuilder.build`.
        """
        if not isinstance(agent_id, str):
            raise TeamMessageError(f"agent_id must be a string, got {type(agent_id).__name__}")
        state = self._view.state(self._keeper.messages(), agent_id, self._keeper.team_task())
        if self._builder is None:
            self._builder = create_builder(renderers=[TeamMessageRenderer()])
        return self._builder.build(state, max_tokens, **options)

    # -- lifecycle -----------------------------------------------------------------------

    def clear(self) -> None:
        """Remove every message and the team task; ids start at ``msg-1`` again."""
        self._keeper.clear()
        self._view.forget()
        if self._on_team_task_changed is not None:
            self._on_team_task_changed(None)

    def export_snapshot(self) -> dict[str, Any]:
        """The conversation as a JSON-ready document (``version`` 1, a ``timestamp`` in
        milliseconds, the ``team_task`` and the ``messages``)."""
        return dump_snapshot(self._keeper.messages(), self._keeper.team_task())

    def import_snapshot(self, snapshot: Mapping[str, Any] | str | bytes) -> None:
        """Replace the conversation with a snapshot's (a document or its JSON text).

        The whole snapshot is checked first: an invalid one raises
        :class:`~memctx.StateFileError` (``Invalid snapshot format: ...``) and
        changes nothing. The next id continues after the highest ``msg-N``.
        """
        messages, task = parse_snapshot(snapshot)
        if task is not None:
            task = self._capped(task)
        self._keeper.replace(messages, task)
        self._view.forget()
        if self._on_team_task_changed is not None:
            self._on_team_task_changed(task)

    def __repr__(self) -> str:
        return f"TeamConversation(window_size={self._window_size}, max_bytes={self._max_bytes})"
