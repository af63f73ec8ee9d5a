"""The values of a team conversation: speakers, messages, an agent's context, a prompt."""

from __future__ import annotations

import datetime as _dt
import re
from collections.abc import Iterable
from typing import Any, Final, Literal, TypeAlias

import attrs

from memctx._exceptions import TeamMessageError

__all__ = [
    "DEFAULT_MAX_BYTES",
    "DEFAULT_WINDOW_SIZE",
    "MAX_TEAM_TASK_BYTES",
    "AgentContext",
    "AssembledPrompt",
    "PromptMessage",
    "Speaker",
    "SpeakerType",
    "TeamMessage",
    "format_addressees",
    "replace_lone_surrogates",
    "utf8_prefix",
]

DEFAULT_WINDOW_SIZE: Final = 5
"""Messages before the current one that an agent's context holds, unless told otherwise."""

DEFAULT_MAX_BYTES: Final = 768 * 1024
"""The largest prompt (UTF-8 bytes) an assembler returns, unless told otherwise."""

MAX_TEAM_TASK_BYTES: Final = 5 * 1024
"""The team task is cut to this many UTF-8 bytes."""

SpeakerType: TypeAlias = Literal["human", "ai"]

_SURROGATE: Final = re.compile("[\ud800-\udfff]")


def replace_lone_surrogates(text: str) -> str:
    """``text`` with every surrogate code point replaced by U+FFFD.

    A lone surrogate has no UTF-8 form; this is what encoding it from a
    JavaScript string gives.
    """
    return _SURROGATE.sub("\ufffd", text) if _SURROGATE.search(text) else text


def utf8_prefix(text: str, max_bytes: int) -> str:
    """The longest prefix of ``text`` whose UTF-8 form fits ``max_bytes`` bytes.

    Cut on a character boundary: never half of a multi-byte character.
    ``text`` must not hold lone surrogates (see :func:`replace_lone_surrogates`).
    """
    encoded = text.encode("utf-8")
    if len(encoded) <= max_bytes:
        return text
    # Only the last character can be cut in half; "ignore" drops its leading bytes.
    return encoded[:max_bytes].decode("utf-8", errors="ignore")


def format_addressees(addressees: Iterable[str] | None) -> str:
    """``all`` for none (a broadcast), the name for one, ``a, b, c`` for several."""
    names = tuple(addressees or ())
    if not names:
        return "all"
    return ", ".join(names)


def _check_str(field: str) -> Any:
    def check(instance: object, attribute: attrs.Attribute[Any], value: object) -> None:
        if not isinstance(value, str):
            raise TeamMessageError(f"Message {field} must be a string, got {type(value).__name__}")

    return check


def _check_required(instance: object, attribute: attrs.Attribute[Any], value: str) -> None:
    if not value:
        raise TeamMessageError("Message speaker.roleId is required")


def _check_type(instance: object, attribute: attrs.Attribute[Any], value: object) -> None:
    if value not in ("human", "ai"):
        raise TeamMessageError(f"Message speaker.type must be 'human' or 'ai', got {value!r}")


def _default_name(speaker: Speaker) -> str:
    return speaker.role_id


@attrs.frozen(cache_hash=True)
class Speaker:
    """Who wrote a message: ``role_id`` (how the team addresses them), a display
    ``role_name`` (``role_id`` when not given) and whether they are a ``human``
    or an ``ai`` agent."""

    role_id: str = attrs.field(validator=[_check_str("speaker.roleId"), _check_required])
    role_name: str = attrs.field(
        default=attrs.Factory(_default_name, takes_self=True),
        validator=_check_str("speaker.roleName"),
    )
    type: SpeakerType = attrs.field(default="human", validator=_check_type)

    def to_dict(self) -> dict[str, str]:
        """The speaker as JSON: ``role_id``, ``role_name``, ``type``."""
        return {"role_id": self.role_id, "role_name": self.role_name, "type": self.type}


@attrs.frozen(cache_hash=True)
class TeamMessage:
    """One message of a team conversation, as it was written (markers included).

    ``addressees`` are the names the message was routed to (none: everyone).
    """

    id: str
    content: str
    speaker: Speaker
    addressees: tuple[str, ...] = ()
    created_at: _dt.datetime = attrs.field(factory=lambda: _dt.datetime.now(_dt.UTC))

    def to_dict(self) -> dict[str, Any]:
        """The message as JSON (the form snapshots hold)."""
        return {
            "id": self.id,
            "content": self.content,
            "speaker": self.speaker.to_dict(),
            "addressees": list(self.addressees),
            "created_at": self.created_at.isoformat(),
        }


@attrs.frozen
class PromptMessage:
    """A message as an agent's context shows it: who wrote it (``from_``), to whom
    (``to``: ``all``, one name, or ``a, b``) and its text without routing markers."""

    from_: str
    to: str
    content: str


@attrs.frozen
class AgentContext:
    """What one agent is given to answer: the messages before the current one
    (de-duplicated, markers stripped), the current message, the team task, the
    agent's instructions, and the largest prompt its assembler may return."""

    context_messages: tuple[PromptMessage, ...]
    current_message: str
    team_task: str | None
    system_instruction: str | None = None
    instruction_file_text: str | None = None
    max_bytes: int = DEFAULT_MAX_BYTES


@attrs.frozen
class AssembledPrompt:
    """The text to send an agent, and what to pass with its command line's
    system-prompt flag (``None`` when the instructions are in the prompt)."""

    prompt: str
    system_flag: str | None = None
