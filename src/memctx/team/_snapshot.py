"""Team snapshots: the whole conversation as one versioned JSON document.

::

    {"version": 1, "timestamp": 1767225600000, "team_task": "Ship the fix" | null,
     "messages": [{"id": "msg-1", "content": "...",
                   "speaker": {"role_id": "lena", "role_name": "Lena", "type": "human"},
                   "addressees": ["coder"], "created_at": "2026-01-01T00:00:00+00:00"}]}

``timestamp`` is when the snapshot was taken, in milliseconds since the Unix
epoch. On import, ``role_name`` defaults to ``role_id``, ``addressees`` to
none and ``created_at`` to the time of the import; everything else is
required and checked before anything changes.
"""

from __future__ import annotations

import datetime as _dt
import re
import time
from collections.abc import Mapping, Sequence
from typing import Any, Final

from memctx._exceptions import StateFileError, TeamMessageError, UnsupportedVersionError
from memctx._json import JSONTextError, parse_json_text
from memctx.team._values import Speaker, TeamMessage, replace_lone_surrogates

__all__ = ["SNAPSHOT_VERSION", "dump_snapshot", "next_message_number", "parse_snapshot"]

SNAPSHOT_VERSION: Final = 1

_MESSAGE_NUMBER: Final = re.compile(r"msg-([0-9]+)", re.ASCII)


def dump_snapshot(messages: Sequence[TeamMessage], team_task: str | None) -> dict[str, Any]:
    """The snapshot document of a conversation (plain JSON values)."""
    return {
        "version": SNAPSHOT_VERSION,
        "timestamp": time.time_ns() // 1_000_000,
        "team_task": team_task,
        "messages": [message.to_dict() for message in messages],
    }


def next_message_number(messages: Sequence[TeamMessage]) -> int:
    """One more than the highest ``N`` of the ``msg-N`` ids (1 when there is none)."""
    highest = 0
    for message in messages:
        found = _MESSAGE_NUMBER.fullmatch(message.id)
        if found:
            highest = max(highest, int(found.group(1)))
    return highest + 1


def _invalid(detail: str | None = None) -> StateFileError:
    return StateFileError("Invalid snapshot format" + (f": {detail}" if detail else ""))


def _text(value: object, where: str, *, empty: bool = True) -> str:
    if not isinstance(value, str) or (not empty and not value):
        kind = "a string" if empty else "a non-empty string"
        raise _invalid(f"{where} must be {kind}, got {value!r}")
    return replace_lone_surrogates(value)


def _message(item: object, where: str) -> TeamMessage:
    if not isinstance(item, Mapping):
        raise _invalid(f"{where} must be an object, got {type(item).__name__}")
    speaker = item.get("speaker")
    if not isinstance(speaker, Mapping):
        raise _invalid(f"{where}.speaker must be an object, got {speaker!r}")
    role_id = _text(speaker.get("role_id"), f"{where}.speaker.role_id", empty=False)
    role_name = _text(speaker.get("role_name", role_id), f"{where}.speaker.role_name")
    kind: Any = speaker.get("type")
    try:
        who = Speaker(role_id, role_name, kind)
    except TeamMessageError as exc:
        raise _invalid(f"{where}: {exc}") from None
    addressees = item.get("addressees", [])
    if not isinstance(addressees, list):
        raise _invalid(f"{where}.addressees must be an array of strings, got {addressees!r}")
    names = tuple(_text(a, f"{where}.addressees[{i}]") for i, a in enumerate(addressees))
    fields: dict[str, Any] = {}
    if "created_at" in item:
        stamp = _text(item["created_at"], f"{where}.created_at")
        try:
            created_at = _dt.datetime.fromisoformat(stamp)
        except ValueError:
            raise _invalid(f"{where}.created_at is not an ISO 8601 time: {stamp!r}") from None
        if created_at.tzinfo is None:
            raise _invalid(f"{where}.created_at has no time zone: {stamp!r}")
        fields["created_at"] = created_at
    message_id = _text(item.get("id"), f"{where}.id", empty=False)
    if not message_id.strip():  # it becomes a chunk id, which must show
        raise _invalid(f"{where}.id must be a non-empty string, got {message_id!r}")
    return TeamMessage(
        id=message_id,
        content=_text(item.get("content"), f"{where}.content"),
        speaker=who,
        addressees=names,
        **fields,
    )


def parse_snapshot(
    data: Mapping[str, Any] | str | bytes,
) -> tuple[tuple[TeamMessage, ...], str | None]:
    """The messages and team task of a snapshot (a document or its JSON text).

    Raises :class:`~memctx.StateFileError` (``Invalid snapshot format: ...``)
    for anything malformed, :class:`~memctx.UnsupportedVersionError` for a
    version other than 1.
    """
    if isinstance(data, str | bytes):
        try:
            data = parse_json_text(data)
        except JSONTextError as exc:
            raise _invalid(str(exc)) from None
    if not isinstance(data, Mapping):
        raise _invalid()
    version = data.get("version")
    if version != SNAPSHOT_VERSION or isinstance(version, bool):
        if version is None:
            raise _invalid("no version")
        raise UnsupportedVersionError(
            f"Invalid snapshot format: version must be {SNAPSHOT_VERSION}, got {version!r}"
        )
    timestamp = data.get("timestamp")
    if timestamp is not None and (isinstance(timestamp, bool) or not isinstance(timestamp, int)):
        raise _invalid(f"timestamp must be an integer, got {timestamp!r}")
    team_task = data.get("team_task")
    if team_task is not None:
        team_task = _text(team_task, "team_task")
    items = data.get("messages")
    if not isinstance(items, list):
        raise _invalid(f"messages must be an array, got {items!r}")
    messages = tuple(_message(item, f"messages[{i}]") for i, item in enumerate(items))
    seen: set[str] = set()
    for index, message in enumerate(messages):
        if message.id in seen:
            raise _invalid(f"messages[{index}].id: duplicate message id {message.id!r}")
        seen.add(message.id)
    return messages, team_task
