"""Chat messages, the history window and the workflow task prompt."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any, Final, Literal, TypeAlias

import attrs

from memctx._exceptions import ChatError

DEFAULT_WINDOW: Final = 20
"""How many history messages a prompt shows by default."""

FOLLOW_UPS_HEADING: Final = "Follow-up messages from the user, oldest first:"
"""The line between the task and its follow-ups in :func:`workflow_task_prompt`."""

ChatRole: TypeAlias = Literal["user", "assistant"]

_FIELDS: Final = ("role", "content", "agent_id", "id")


def _validate_role(instance: ChatMessage, attribute: attrs.Attribute[str], value: object) -> None:
    if value not in ("user", "assistant"):
        raise ChatError(f"role: must be 'user' or 'assistant', got {value!r}")


def _validate_str(instance: ChatMessage, attribute: attrs.Attribute[str], value: object) -> None:
    if not isinstance(value, str):
        raise ChatError(f"{attribute.name}: must be a string, got {type(value).__name__}")


def _validate_optional_str(
    instance: ChatMessage, attribute: attrs.Attribute[str | None], value: object
) -> None:
    if value is not None and (not isinstance(value, str) or not value):
        raise ChatError(f"{attribute.name}: must be a non-empty string or None, got {value!r}")


@attrs.frozen
class ChatMessage:
    """One message of a chat: a user's (``role="user"``) or an agent's (``"assistant"``).

    ``agent_id`` says which agent wrote an assistant message. ``id`` is
    optional; messages read from a :class:`~memctx.chat.ChatSession` have
    one, and it is what tells the current input apart from an earlier
    message with the same text (see :func:`~memctx.chat.build_chat_context`).
    """

    role: ChatRole = attrs.field(validator=_validate_role)
    content: str = attrs.field(validator=_validate_str)
    agent_id: str | None = attrs.field(default=None, validator=_validate_optional_str)
    id: str | None = attrs.field(default=None, kw_only=True, validator=_validate_optional_str)

    def to_dict(self) -> dict[str, Any]:
        """The message as a dict with the keys :func:`as_message` reads."""
        data: dict[str, Any] = {"role": self.role, "content": self.content}
        if self.agent_id is not None:
            data["agent_id"] = self.agent_id
        if self.id is not None:
            data["id"] = self.id
        return data


def as_message(value: ChatMessage | Mapping[str, Any], where: str = "message") -> ChatMessage:
    """``value`` as a :class:`ChatMessage`; a dict needs ``role`` and ``content``.

    A dict may also have ``agent_id`` and ``id``; any other key raises
    :class:`~memctx.ChatError`, naming it and ``where`` the message was.
    """
    if isinstance(value, ChatMessage):
        return value
    if not isinstance(value, Mapping):
        raise ChatError(f"{where}: expected a ChatMessage or a dict, got {type(value).__name__}")
    unknown = sorted(str(key) for key in value if key not in _FIELDS)
    if unknown:
        raise ChatError(f"{where}: unknown key(s) {', '.join(map(repr, unknown))}")
    missing = [key for key in ("role", "content") if key not in value]
    if missing:
        raise ChatError(f"{where}: missing {' and '.join(map(repr, missing))}")
    try:
        return ChatMessage(
            value["role"], value["content"], value.get("agent_id"), id=value.get("id")
        )
    except ChatError as exc:
        raise ChatError(f"{where}.{exc}") from None


def as_history(history: Iterable[ChatMessage | Mapping[str, Any]]) -> tuple[ChatMessage, ...]:
    """``history`` as a tuple of :class:`ChatMessage` (dicts converted, errors located)."""
    if isinstance(history, (str, bytes, Mapping)) or not isinstance(history, Iterable):
        raise ChatError(f"history: expected a sequence of messages, got {type(history).__name__}")
    return tuple(as_message(item, f"history[{i}]") for i, item in enumerate(history))


def check_window(window: int) -> int:
    """``window`` if it is a usable history window (an int, zero or more)."""
    if isinstance(window, bool) or not isinstance(window, int) or window < 0:
        raise ChatError(f"window: must be an integer >= 0, got {window!r}")
    return window


def prompt_history(
    history: Iterable[ChatMessage | Mapping[str, Any]], window: int = DEFAULT_WINDOW
) -> tuple[ChatMessage, ...]:
    """The last ``window`` messages of ``history`` (all of them when there are fewer)."""
    messages = as_history(history)
    size = check_window(window)
    return messages[max(len(messages) - size, 0) :]


def workflow_task_prompt(history: Iterable[ChatMessage | Mapping[str, Any]]) -> str:
    """The task of a workflow, built from the user's messages in ``history``.

    The first user message is the task; every later one is a follow-up,
    listed under :data:`FOLLOW_UPS_HEADING` as ``1. ...``, ``2. ...`` in the
    order they were sent. Agents' messages are left out, and so are user
    messages that are blank; each message is stripped. No user message
    gives ``""``.
    """
    texts = [m.content.strip() for m in as_history(history) if m.role == "user"]
    texts = [text for text in texts if text]
    if not texts:
        return ""
    task, follow_ups = texts[0], texts[1:]
    if not follow_ups:
        return task
    lines = [task, "", FOLLOW_UPS_HEADING]
    lines.extend(f"{number}. {text}" for number, text in enumerate(follow_ups, start=1))
    return "\n".join(lines)
