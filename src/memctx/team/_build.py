"""One agent's view of a team conversation as a memctx state, and the renderer it needs.

The view holds the team task as a SYSTEM chunk (id ``team-task``; always kept,
like every SYSTEM chunk), then every message in order, markers stripped, with
the message's id as the chunk id: the agent's own messages as ``assistant``
chunks, everyone else's as ``user`` chunks. An AI's message that repeats the
one before it (same id, or same speaker and stripped text) leaves that one out.

Who spoke and to whom are XML attributes written by :class:`TeamMessageRenderer`
with :func:`memctx.xml.render_element`, so they are escaped like all memctx
XML: no message text can close its element or pose as another speaker (the
``role`` attribute, the message's own role, is written only in the ``"seed"``
attribute mode)::

    <user_message id="msg-1" from="Lena" from_type="human" to="coder">
    Please fix the retry cap.
    </user_message>
"""

from __future__ import annotations

import datetime as _dt
import threading
from collections.abc import Sequence
from typing import Final

from memctx import Chunk, ChunkType, MemoryState, Role, chunks
from memctx.team._context import deduplicate
from memctx.team._markers import strip_markers
from memctx.team._values import PromptMessage, TeamMessage, format_addressees
from memctx.xml import lean_attributes, render_element

__all__ = ["TEAM_TASK_CHUNK_ID", "AgentView", "TeamMessageRenderer"]

TEAM_TASK_CHUNK_ID: Final = "team-task"
"""The id of the chunk holding the team task in :meth:`TeamConversation.build_for_agent`."""

ATTRIBUTION_KEY: Final = "team_message"
"""The ``metadata.custom`` key holding a message's speaker and addressees."""

_EPOCH: Final = _dt.datetime(1970, 1, 1, tzinfo=_dt.UTC)


class TeamMessageRenderer:
    """Renders the message chunks of a team view, with who spoke and to whom.

    Claims AGENT chunks whose ``metadata.custom`` holds ``team_message``
    (``from``, ``from_type``, ``to``): ``<user_message>`` for others' messages,
    ``<assistant_response>`` for the agent's own.
    """

    def can_render(self, chunk: Chunk) -> bool:
        return chunk.type is ChunkType.AGENT and ATTRIBUTION_KEY in chunk.metadata.custom

    def get_role(self, chunk: Chunk) -> Role:
        return "assistant" if chunk.role == "assistant" else "user"

    def render(self, chunk: Chunk) -> str:
        who = chunk.metadata.custom[ATTRIBUTION_KEY]
        tag = "assistant_response" if chunk.role == "assistant" else "user_message"
        return render_element(
            tag,
            [
                ("id", chunk.id),
                ("role", None if lean_attributes() else self.get_role(chunk)),
                ("from", str(who["from"])),
                ("from_type", str(who["from_type"])),
                ("to", str(who["to"])),
            ],
            chunk.text,
        )

    def __repr__(self) -> str:
        return "TeamMessageRenderer()"


class AgentView:
    """Makes the per-agent states, reusing each message's chunk from one build to the next.

    An agent's new state extends its last one when the conversation only
    grew, so a builder renders and counts just the new messages (its caches
    are kept per state history) and rebuilds incrementally.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._chunks: dict[tuple[TeamMessage, bool], Chunk] = {}
        self._task: tuple[str, Chunk] | None = None
        self._last: dict[str, tuple[tuple[Chunk, ...], MemoryState]] = {}

    def forget(self) -> None:
        """Drop the chunks and states of messages that are gone (after a clear or an import)."""
        with self._lock:
            self._chunks.clear()
            self._last.clear()

    def _chunk(self, message: TeamMessage, own: bool) -> Chunk:
        key = (message, own)
        found = self._chunks.get(key)
        if found is None:
            make = chunks.assistant if own else chunks.user
            attribution = {
                "from": message.speaker.role_name,
                "from_type": message.speaker.type,
                "to": format_addressees(message.addressees),
            }
            found = make(
                strip_markers(message.content),
                id=message.id,
                custom={ATTRIBUTION_KEY: attribution},
                created_at=message.created_at,
            )
            with self._lock:
                self._chunks[key] = found
        return found

    def _task_chunk(self, team_task: str) -> Chunk:
        task = self._task
        if task is None or task[0] != team_task:
            task = (team_task, chunks.system(team_task, id=TEAM_TASK_CHUNK_ID, created_at=_EPOCH))
            self._task = task
        return task[1]

    def state(
        self, messages: Sequence[TeamMessage], agent_id: str, team_task: str | None
    ) -> MemoryState:
        """``agent_id``'s view of ``messages`` under ``team_task``."""
        shown = list(messages)
        if len(shown) >= 2:
            before, latest = shown[-2], shown[-1]
            entry = PromptMessage(before.speaker.role_name, "", strip_markers(before.content))
            if not deduplicate([(entry, before.id)], latest):
                del shown[-2]
        items = [self._chunk(m, m.speaker.role_id == agent_id) for m in shown]
        if team_task:
            items.insert(0, self._task_chunk(team_task))
        chunks_now = tuple(items)
        with self._lock:
            last = self._last.get(agent_id)
        if last is not None and chunks_now == last[0]:
            return last[1]
        if last is not None and _extends(chunks_now, last[0]):
            state = last[1].extend(chunks_now[len(last[0]) :])
        else:
            state = MemoryState(chunks_now)
        with self._lock:
            self._last[agent_id] = (chunks_now, state)
        return state


def _extends(items: tuple[Chunk, ...], prefix: tuple[Chunk, ...]) -> bool:
    """Whether ``items`` starts with the very chunks of ``prefix``."""
    return len(items) >= len(prefix) and all(a is b for a, b in zip(prefix, items, strict=False))
