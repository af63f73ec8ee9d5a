"""MemoryState: an ordered, immutable collection of chunks."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable, Iterator
from typing import Any, overload

import attrs

from memctx._analysis import StateIndex
from memctx._chunk import Chunk, ChunkType
from memctx._exceptions import ChunkNotFoundError, DuplicateChunkError, InvalidChunkError


def _to_chunk_tuple(chunks: Iterable[Chunk]) -> tuple[Chunk, ...]:
    result = tuple(chunks)
    for index, chunk in enumerate(result):
        if not isinstance(chunk, Chunk):
            raise InvalidChunkError(
                f"chunks[{index}]", f"must be a Chunk, got {type(chunk).__name__}"
            )
    return result


def _validate_thread_id(instance: object, attribute: attrs.Attribute[Any], value: object) -> None:
    if value is not None and (not isinstance(value, str) or not value):
        raise InvalidChunkError("thread_id", f"must be a non-empty string or None, got {value!r}")


class _Lineage:
    """Indexes shared by a state and the states appended to it.

    An agent's history grows by appending: each new state is its parent plus
    a few chunks. The id map and the budget index are extended in place for
    the newest state (``tip``) instead of being rebuilt; entries past a
    state's own length belong to its descendants and are ignored by it. A
    second child of the same parent (a branch) gets its own copy.
    """

    __slots__ = ("budget_index", "ids", "lock", "tip")

    def __init__(self, chunks: tuple[Chunk, ...]) -> None:
        self.lock = threading.Lock()
        self.ids: dict[str, int] = {}
        for position, chunk in enumerate(chunks):
            if chunk.id in self.ids:
                raise DuplicateChunkError(chunk.id)
            self.ids[chunk.id] = position
        self.budget_index = StateIndex()
        self.budget_index.extend_to(chunks)
        self.tip = chunks


@attrs.frozen(eq=False)
class MemoryState:
    """The chunks of one thread, in order. Immutable: changes return a new state.

    Chunk ids are unique within a state (:class:`DuplicateChunkError`
    otherwise). Two states are equal when they hold equal chunks in the same
    order and have the same ``thread_id``. :meth:`append` is cheap: it shares
    the parent's indexes instead of rebuilding them.
    """

    chunks: tuple[Chunk, ...] = attrs.field(default=(), converter=_to_chunk_tuple)
    thread_id: str | None = attrs.field(default=None, validator=_validate_thread_id)
    _lineage: _Lineage = attrs.field(init=False, repr=False, alias="_lineage")
    # A budget index of this state alone, made only if the shared one has
    # moved on to a descendant and this state is built again.
    _private_index: list[StateIndex] = attrs.field(
        init=False, repr=False, factory=list, alias="_private_index"
    )

    def __attrs_post_init__(self) -> None:
        object.__setattr__(self, "_lineage", _Lineage(self.chunks))

    # -- sequence behaviour ---------------------------------------------------

    def __len__(self) -> int:
        return len(self.chunks)

    def __iter__(self) -> Iterator[Chunk]:
        return iter(self.chunks)

    @overload
    def __getitem__(self, key: int) -> Chunk: ...

    @overload
    def __getitem__(self, key: slice) -> MemoryState: ...

    def __getitem__(self, key: int | slice) -> Chunk | MemoryState:
        if isinstance(key, slice):
            return MemoryState(self.chunks[key], thread_id=self.thread_id)
        return self.chunks[key]

    def __contains__(self, item: object) -> bool:
        if isinstance(item, Chunk):
            position = self._position(item.id)
            return position is not None and self.chunks[position] == item
        return isinstance(item, str) and self._position(item) is not None

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, MemoryState):
            return NotImplemented
        return self.thread_id == other.thread_id and self.chunks == other.chunks

    def __hash__(self) -> int:
        return hash((self.thread_id, self.chunks))

    # -- lookups ----------------------------------------------------------------

    def _position(self, chunk_id: str) -> int | None:
        position = self._lineage.ids.get(chunk_id)
        if position is None or position >= len(self.chunks):
            return None
        return position

    @property
    def ids(self) -> tuple[str, ...]:
        """The chunk ids, in order."""
        return tuple(chunk.id for chunk in self.chunks)

    def get(self, chunk_id: str) -> Chunk:
        """Return the chunk with ``chunk_id``; :class:`ChunkNotFoundError` if there is none."""
        return self.chunks[self.index_of(chunk_id)]

    def index_of(self, chunk_id: str) -> int:
        """Return the position of the chunk with ``chunk_id``."""
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
        combined = self.chunks + added
        new = object.__new__(MemoryState)
        object.__setattr__(new, "chunks", combined)
        object.__setattr__(new, "thread_id", self.thread_id)
        object.__setattr__(new, "_private_index", [])
        lineage = self._lineage
        with lineage.lock:
            if lineage.tip is self.chunks:
                start = len(self.chunks)
                for offset, chunk in enumerate(added):
                    lineage.ids[chunk.id] = start + offset
                lineage.budget_index.extend_to(combined)
                lineage.tip = combined
                object.__setattr__(new, "_lineage", lineage)
                return new
        # This state already has a descendant: the new one branches off.
        object.__setattr__(new, "_lineage", _Lineage(combined))
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
        object.__setattr__(self, "chunks", state["chunks"])
        object.__setattr__(self, "thread_id", state["thread_id"])
        object.__setattr__(self, "_lineage", _Lineage(state["chunks"]))
        object.__setattr__(self, "_private_index", [])
