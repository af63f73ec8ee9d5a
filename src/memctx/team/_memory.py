"""Where a team conversation keeps its messages: the protocol, and the in-memory keeper."""

from __future__ import annotations

import threading
from typing import Protocol

from memctx.team._snapshot import next_message_number
from memctx.team._values import Speaker, TeamMessage

__all__ = ["InMemoryMessages", "MessageKeeper"]


class MessageKeeper(Protocol):
    """Holds a conversation's messages, its team task and the next message number.

    ``add`` gives the message the id ``msg-N`` for the next ``N``, so that ids
    stay unique and gap-free however many writers add at once.
    """

    def messages(self) -> tuple[TeamMessage, ...]: ...

    def tail(self, count: int) -> tuple[TeamMessage, ...]:
        """The last ``count`` messages (fewer when there are fewer)."""
        ...

    def add(self, content: str, speaker: Speaker, addressees: tuple[str, ...]) -> TeamMessage: ...

    def team_task(self) -> str | None: ...

    def set_team_task(self, task: str | None) -> None: ...

    def clear(self) -> None:
        """No messages, no team task, numbering from 1 again."""
        ...

    def replace(self, messages: tuple[TeamMessage, ...], team_task: str | None) -> None:
        """Hold exactly ``messages`` and ``team_task``; number on after the highest ``msg-N``."""
        ...


class InMemoryMessages:
    """A list in this process; safe to use from several threads."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._messages: list[TeamMessage] = []
        self._team_task: str | None = None
        self._next = 1

    def messages(self) -> tuple[TeamMessage, ...]:
        with self._lock:
            return tuple(self._messages)

    def tail(self, count: int) -> tuple[TeamMessage, ...]:
        with self._lock:
            return tuple(self._messages[max(len(self._messages) - count, 0) :]) if count > 0 else ()

    def add(self, content: str, speaker: Speaker, addressees: tuple[str, ...]) -> TeamMessage:
        with self._lock:
            message = TeamMessage(f"msg-{self._next}", content, speaker, addressees)
            self._next += 1
            self._messages.append(message)
        return message

    def team_task(self) -> str | None:
        return self._team_task

    def set_team_task(self, task: str | None) -> None:
        self._team_task = task

    def clear(self) -> None:
        with self._lock:
            self._messages, self._team_task, self._next = [], None, 1

    def replace(self, messages: tuple[TeamMessage, ...], team_task: str | None) -> None:
        with self._lock:
            self._messages, self._team_task = list(messages), team_task
            self._next = next_message_number(messages)
