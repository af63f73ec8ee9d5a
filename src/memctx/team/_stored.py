"""A team conversation kept in a store thread, shared by every process that opens it.

Each message is one chunk of the thread: ``chunks.custom("team_message", text)``
with the message's id, speaker and addressees in ``metadata.custom``. The
thread's metadata holds the team task (``team_task``), the next message
number (``team_next_message_id``) and the generation (``team_generation``).

A message is added inside the thread's write lock (``store.append_with``): its
number is read and advanced in the same transaction that stores it, so ids
stay unique and gap-free whatever the number of writers. Clearing and
importing start a new generation, atomically too: only the current
generation's messages are shown, and the older ones stay in the thread's
history (the store never deletes). The chunk id of a message is its id
(``msg-3``) in generation 0 and ``msg-3@2`` in generation 2, since a thread
never reuses a chunk id.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Final

from memctx import Chunk, ChunkType, StateFileError, TeamThreadError, ThreadNotFoundError, chunks
from memctx.team._snapshot import next_message_number
from memctx.team._values import Speaker, TeamMessage

if TYPE_CHECKING:
    from memctx.store import MemoryStore

__all__ = ["MESSAGE_KIND", "StoredMessages"]

MESSAGE_KIND: Final = "team_message"
"""The ``subtype`` (kind) of the chunks holding team messages."""

TASK_KEY: Final = "team_task"
NEXT_KEY: Final = "team_next_message_id"
GENERATION_KEY: Final = "team_generation"


def _generation(metadata: Mapping[str, Any]) -> int:
    value = metadata.get(GENERATION_KEY, 0)
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


def _next_number(metadata: Mapping[str, Any]) -> int:
    value = metadata.get(NEXT_KEY, 1)
    return value if isinstance(value, int) and not isinstance(value, bool) else 1


def message_chunk(message: TeamMessage, generation: int) -> Chunk:
    """The chunk that stores ``message`` in ``generation``."""
    chunk_id = message.id if generation == 0 else f"{message.id}@{generation}"
    return chunks.custom(
        MESSAGE_KIND,
        message.content,
        id=chunk_id,
        created_at=message.created_at,
        custom={
            MESSAGE_KIND: {
                "id": message.id,
                "speaker": message.speaker.to_dict(),
                "addressees": list(message.addressees),
                "generation": generation,
            }
        },
    )


def message_from_chunk(chunk: Chunk) -> TeamMessage:
    """The message a chunk made by :func:`message_chunk` stores."""
    info = chunk.metadata.custom[MESSAGE_KIND]
    try:
        speaker = info["speaker"]
        return TeamMessage(
            id=str(info["id"]),
            content=chunk.text,
            speaker=Speaker(speaker["role_id"], speaker["role_name"], speaker["type"]),
            addressees=tuple(info["addressees"]),
            created_at=chunk.created_at,
        )
    except (KeyError, TypeError) as exc:
        raise StateFileError(f"chunk {chunk.id!r} is not a valid team message: {exc}") from None


def _is_message(chunk: Chunk, generation: int) -> bool:
    if chunk.type is not ChunkType.CUSTOM or chunk.subtype != MESSAGE_KIND:
        return False
    info = chunk.metadata.custom.get(MESSAGE_KIND)
    return isinstance(info, Mapping) and info.get("generation") == generation


def check_team_thread(store: MemoryStore, thread_id: str) -> None:
    """:class:`~memctx.TeamThreadError` unless the thread holds a team conversation (or nothing).

    A team thread's metadata has team keys once anything was written; a
    thread without them may hold nothing: no chunk and no metadata.
    """
    metadata = store.thread_metadata(thread_id)
    if any(key in metadata for key in (TASK_KEY, NEXT_KEY, GENERATION_KEY)):
        return
    if metadata or store.thread_info(thread_id).chunk_count:
        raise TeamThreadError(
            thread_id, "it holds chunks or metadata of something else (not team messages)"
        )


class StoredMessages:
    """The :class:`~memctx.team._memory.MessageKeeper` of a store thread."""

    def __init__(self, store: MemoryStore, thread_id: str) -> None:
        self.store = store
        self.thread_id = thread_id

    @classmethod
    def open(cls, store: MemoryStore, thread_id: str, *, create: bool) -> StoredMessages:
        """The thread's conversation; a thread holding anything else is refused, unchanged."""
        if store.has_thread(thread_id):
            check_team_thread(store, thread_id)
        elif create:
            store.create_thread(thread_id, exist_ok=True)
        else:
            raise ThreadNotFoundError(thread_id)
        return cls(store, thread_id)

    def messages(self) -> tuple[TeamMessage, ...]:
        # The generation first: a clear between the two reads then shows the
        # messages of the generation it ended, never a mix.
        generation = _generation(self.store.thread_metadata(self.thread_id))
        state = self.store.get_current_state(self.thread_id)
        return tuple(message_from_chunk(c) for c in state if _is_message(c, generation))

    def tail(self, count: int) -> tuple[TeamMessage, ...]:
        if count <= 0:
            return ()
        found = self.messages()
        return found[max(len(found) - count, 0) :]

    def add(self, content: str, speaker: Speaker, addressees: tuple[str, ...]) -> TeamMessage:
        made: list[TeamMessage] = []

        def make(length: int, metadata: Mapping[str, Any]) -> tuple[list[Chunk], dict[str, Any]]:
            number = _next_number(metadata)
            message = TeamMessage(f"msg-{number}", content, speaker, addressees)
            made[:] = [message]
            return [message_chunk(message, _generation(metadata))], {NEXT_KEY: number + 1}

        self.store.append_with(self.thread_id, make)
        return made[0]

    def team_task(self) -> str | None:
        task = self.store.thread_metadata(self.thread_id).get(TASK_KEY)
        return task if isinstance(task, str) else None

    def set_team_task(self, task: str | None) -> None:
        self.store.update_thread_metadata(self.thread_id, {TASK_KEY: task})

    def clear(self) -> None:
        def make(length: int, metadata: Mapping[str, Any]) -> tuple[list[Chunk], dict[str, Any]]:
            return [], {GENERATION_KEY: _generation(metadata) + 1, NEXT_KEY: 1, TASK_KEY: None}

        self.store.append_with(self.thread_id, make)

    def replace(self, messages: tuple[TeamMessage, ...], team_task: str | None) -> None:
        def make(length: int, metadata: Mapping[str, Any]) -> tuple[list[Chunk], dict[str, Any]]:
            generation = _generation(metadata) + 1
            update = {
                GENERATION_KEY: generation,
                NEXT_KEY: next_message_number(messages),
                TASK_KEY: team_task,
            }
            return [message_chunk(m, generation) for m in messages], update

        self.store.append_with(self.thread_id, make)
