"""MemoryState: an ordered, immutable collection of chunks."""

from __future__ import annotations

import threading
import weakref
from collections.abc import Callable, Iterable, Iterator
from itertools import islice
from operator import attrgetter
from typing import Any, Final, overload

import attrs

from memctx._chunk import Chunk, ChunkType
from memctx._exceptions import (
    ArgumentError,
    ChunkNotFoundError,
    DuplicateChunkError,
    InvalidChunkError,
    StateIndexError,
)
from memctx._units import UnitsIndex
from memctx._validators import MAX_THREAD_ID_LENGTH, non_empty_str, optional

_id_of = attrgetter("id")
_CHUNK_TYPE: Final = frozenset({Chunk})


def _to_chunk_tuple(chunks: Iterable[Chunk]) -> tuple[Chunk, ...]:
    if isinstance(chunks, Chunk | str | bytes) or not isinstance(chunks, Iterable):
        raise InvalidChunkError("chunks", f"must be Chunks, got {type(chunks).__name__}")
    result = tuple(chunks)
    if set(map(type, result)) <= _CHUNK_TYPE:  # checked at C speed; the loop finds the culprit
        return result
    for index, chunk in enumerate(result):
        if not isinstance(chunk, Chunk):
            raise InvalidChunkError(
                f"chunks[{index}]", f"must be a Chunk, got {type(chunk).__name__}"
            )
    return result


_thread_id = optional(non_empty_str(InvalidChunkError, max_length=MAX_THREAD_ID_LENGTH))


def _validate_thread_id(value: object) -> None:
    _thread_id.check(value, "thread_id")


class SharedHistory:
    """The chunk list shared by a state and the states appended to it.

    An agent's history grows by appending: each new state is its parent plus
    a few chunks. The list and the id map are extended in place for the
    newest state (the one whose length is ``len(items)``) instead of being
    copied; entries past a state's own length belong to its descendants and
    are ignored by it. A second child of the same parent (a branch) gets a
    history of its own. Positions never change, so builders key their caches
    by this object (weakly) and by position.

    The :class:`~memctx._units.UnitsIndex` (which chunks are kept or dropped
    together, pinned, or SYSTEM) is part of the list's structure, like the id
    map: it depends on the chunks alone and is extended with them, for the
    newest state (a builder indexes an older state itself).
    """

    __slots__ = ("__weakref__", "caches", "ids", "items", "lock", "units")

    def __init__(self, chunks: Iterable[Chunk]) -> None:
        self.lock = threading.RLock()
        """Held while the history grows, and by a build while it reads."""
        self.caches: weakref.WeakKeyDictionary[object, object] | None = None
        """What builders keep about this history, by builder (weakly), made on first use.
        Held here, not by the builder, so that a cached result (which holds its state, and
        so this history) lets the history be collected with it."""
        items: list[Chunk] = list(chunks)
        ids: dict[str, int] = dict(zip(map(_id_of, items), range(len(items)), strict=True))
        if len(ids) != len(items):
            seen: set[str] = set()
            for chunk in items:
                if chunk.id in seen:
                    raise DuplicateChunkError(chunk.id)
                seen.add(chunk.id)
        self.items = items
        self.ids = ids
        self.units = UnitsIndex()
        self.units.extend_to(items, len(items))


class MemoryState:
    """The chunks of one thread, in order. Immutable: changes return a new state.

    Chunk ids are unique within a state (:class:`DuplicateChunkError`
    otherwise). Two states are equal when they hold equal chunks in the same
    order and have the same ``thread_id``. :meth:`append` costs only the
    appended chunks: the new state shares its parent's chunk list
    (:attr:`shared_history`) instead of copying it. A state holds nothing
    else: what a build remembers belongs to the builder.
    """

    __slots__ = ("_chunks", "_history", "_length", "thread_id")

    thread_id: str | None
    """The thread this state belongs to, if any."""
    _history: SharedHistory
    _length: int
    _chunks: tuple[Chunk, ...] | None

    def __init__(self, chunks: Iterable[Chunk] = (), thread_id: str | None = None) -> None:
        items = _to_chunk_tuple(chunks)
        _validate_thread_id(thread_id)
        self._init(SharedHistory(items), len(items), thread_id)
        object.__setattr__(self, "_chunks", items)

    def _init(self, history: SharedHistory, length: int, thread_id: str | None) -> None:
        object.__setattr__(self, "_history", history)
        object.__setattr__(self, "_length", length)
        object.__setattr__(self, "thread_id", thread_id)
        object.__setattr__(self, "_chunks", None)

    @property
    def shared_history(self) -> SharedHistory:
        """The chunk list this state shares with the states appended to it.

        Its first ``len(self)`` items are this state's chunks and never
        change; builders key their caches by it.
        """
        return self._history

    def __setattr__(self, name: str, value: object) -> None:
        raise attrs.exceptions.FrozenInstanceError()

    def __delattr__(self, name: str) -> None:
        raise attrs.exceptions.FrozenInstanceError()

    @property
    def chunks(self) -> tuple[Chunk, ...]:
        """The chunks, in order (made on first access after an append, then kept)."""
        found: tuple[Chunk, ...] | None = self._chunks
        if found is None:
            found = tuple(islice(self._history.items, self._length))
            object.__setattr__(self, "_chunks", found)
        return found

    def __repr__(self) -> str:
        return f"MemoryState(chunks={self.chunks!r}, thread_id={self.thread_id!r})"

    # -- sequence behaviour ---------------------------------------------------

    def __len__(self) -> int:
        return self._length

    def __iter__(self) -> Iterator[Chunk]:
        return islice(self._history.items, self._length)

    @overload
    def __getitem__(self, key: int) -> Chunk: ...

    @overload
    def __getitem__(self, key: slice) -> MemoryState: ...

    def __getitem__(self, key: int | slice) -> Chunk | MemoryState:
        if type(key) is int:  # the usual case, checked first: builds index states often
            position = key
        else:
            if isinstance(key, slice):
                return MemoryState(self.chunks[key], thread_id=self.thread_id)
            if isinstance(key, bool) or not hasattr(key, "__index__"):
                hint = "; state.get(chunk_id) finds a chunk by id" if isinstance(key, str) else ""
                raise ArgumentError(
                    f"a MemoryState index is an int or a slice, got {type(key).__name__}{hint}",
                    argument="index",
                )
            position = key.__index__()
        if position < 0:
            position += self._length
        if not 0 <= position < self._length:
            raise StateIndexError(key, self._length)
        return self._history.items[position]

    def __contains__(self, item: object) -> bool:
        if isinstance(item, Chunk):
            position = self._position(item.id)
            return position is not None and self._history.items[position] == item
        return isinstance(item, str) and self._position(item) is not None

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, MemoryState):
            return NotImplemented
        if self is other:
            return True
        return (
            self.thread_id == other.thread_id
            and self._length == other._length
            and self.chunks == other.chunks
        )

    def __hash__(self) -> int:
        return hash((self.thread_id, self.chunks))

    # -- lookups ----------------------------------------------------------------

    def _position(self, chunk_id: str) -> int | None:
        position = self._history.ids.get(chunk_id)
        if position is None or position >= self._length:
            return None
        return position

    @property
    def ids(self) -> tuple[str, ...]:
        """The chunk ids, in order."""
        return tuple(chunk.id for chunk in self.chunks)

    def get(self, chunk_id: str) -> Chunk:
        """Return the chunk with ``chunk_id``; :class:`ChunkNotFoundError` if there is none."""
        return self._history.items[self.index_of(chunk_id)]

    def index_of(self, chunk_id: str) -> int:
        """Return the position of the chunk with ``chunk_id``."""
        if not isinstance(chunk_id, str):
            raise ArgumentError(
                f"must be a str, got {type(chunk_id).__name__}", argument="chunk_id"
            )
        position = self._position(chunk_id)
        if position is None:
            raise ChunkNotFoundError(chunk_id)
        return position

    def of_type(self, *types: ChunkType | str) -> tuple[Chunk, ...]:
        """Return the chunks of any of ``types``, in order."""
        wanted = {ChunkType(t) for t in types}
        return tuple(chunk for chunk in self.chunks if chunk.type in wanted)

    # -- changes (each returns a new state) ---------------------------------------

    def append(self, *chunks: Chunk) -> MemoryState:
        """Return a new state with ``chunks`` added at the end."""
        return self.extend(chunks)

    def extend(self, chunks: Iterable[Chunk]) -> MemoryState:
        """Return a new state with ``chunks`` added at the end.

        Raises :class:`DuplicateChunkError` (and changes nothing) when an id
        is already in the state or repeated among ``chunks``.
        """
        added = _to_chunk_tuple(chunks)
        seen: set[str] = set()
        for chunk in added:
            if chunk.id in seen or self._position(chunk.id) is not None:
                raise DuplicateChunkError(chunk.id)
            seen.add(chunk.id)
        new = object.__new__(MemoryState)
        length = self._length + len(added)
        history = self._history
        with history.lock:
            items = history.items
            if len(items) == self._length:
                # This state is the newest of its history: grow the shared list.
                start = self._length
                items.extend(added)
                for offset, chunk in enumerate(added):
                    history.ids[chunk.id] = start + offset
                history.units.extend_to(items, length)
                new._init(history, length, self.thread_id)
                return new
        # This state already has a descendant: the new one branches off.
        new._init(SharedHistory((*self.chunks, *added)), length, self.thread_id)
        return new

    def filter(self, predicate: Callable[[Chunk], bool]) -> MemoryState:
        """Return a new state with only the chunks for which ``predicate`` is true."""
        return MemoryState((c for c in self.chunks if predicate(c)), thread_id=self.thread_id)

    def with_thread_id(self, thread_id: str | None) -> MemoryState:
        """Return the same chunks under another ``thread_id``."""
        return MemoryState(self.chunks, thread_id=thread_id)

    def __getstate__(self) -> dict[str, Any]:
        return {"chunks": self.chunks, "thread_id": self.thread_id}

    def __setstate__(self, state: dict[str, Any]) -> None:
        chunks = state["chunks"]
        self._init(SharedHistory(chunks), len(chunks), state["thread_id"])
        object.__setattr__(self, "_chunks", chunks)
