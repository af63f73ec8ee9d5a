"""MemoryState: an ordered, immutable collection of chunks."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from typing import Any, overload

import attrs

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


def _build_index(chunks: tuple[Chunk, ...], base: dict[str, int] | None = None) -> dict[str, int]:
    index = dict(base) if base else {}
    start = len(index)
    for position in range(start, len(chunks)):
        chunk_id = chunks[position].id
        if chunk_id in index:
            raise DuplicateChunkError(chunk_id)
        index[chunk_id] = position
    return index


@attrs.frozen(eq=False)
class MemoryState:
    """The chunks of one thread, in order. Immutable: changes return a new state.

    Chunk ids are unique within a state (:class:`DuplicateChunkError`
    otherwise). Two states are equal when they hold equal chunks in the same
    order and have the same ``thread_id``.
    """

    chunks: tuple[Chunk, ...] = attrs.field(default=(), converter=_to_chunk_tuple)
    thread_id: str | None = None
    _index: dict[str, int] = attrs.field(init=False, repr=False, alias="_index")
    # [StateIndex or None, the parent's chunks it may be extended from]; see _analysis.
    _index_cell: list[Any] = attrs.field(init=False, repr=False, alias="_index_cell")

    def __attrs_post_init__(self) -> None:
        object.__setattr__(self, "_index", _build_index(self.chunks))
        object.__setattr__(self, "_index_cell", [None, None])

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
            position = self._index.get(item.id)
            return position is not None and self.chunks[position] == item
        return item in self._index

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, MemoryState):
            return NotImplemented
        return self.thread_id == other.thread_id and self.chunks == other.chunks

    def __hash__(self) -> int:
        return hash((self.thread_id, self.chunks))

    # -- lookups ----------------------------------------------------------------

    @property
    def ids(self) -> tuple[str, ...]:
        """The chunk ids, in order."""
        return tuple(chunk.id for chunk in self.chunks)

    def get(self, chunk_id: str) -> Chunk:
        """Return the chunk with ``chunk_id``; :class:`ChunkNotFoundError` if there is none."""
        try:
            return self.chunks[self._index[chunk_id]]
        except KeyError:
            raise ChunkNotFoundError(chunk_id) from None

    def index_of(self, chunk_id: str) -> int:
        """Return the position of the chunk with ``chunk_id``."""
        try:
            return self._index[chunk_id]
        except KeyError:
            raise ChunkNotFoundError(chunk_id) from None

    def of_type(self, *types: ChunkType | str) -> tuple[Chunk, ...]:
        """Return the chunks of any of ``types``, in order."""
        wanted = {ChunkType(t) for t in types}
        return tuple(chunk for chunk in self.chunks if chunk.type in wanted)

    # -- changes (each returns a new state) ---------------------------------------

    def append(self, *chunks: Chunk) -> MemoryState:
        """Return a new state with ``chunks`` added at the end."""
        return self.extend(chunks)

    def extend(self, chunks: Iterable[Chunk]) -> MemoryState:
        """Return a new state with ``chunks`` added at the end."""
        added = _to_chunk_tuple(chunks)
        new = object.__new__(MemoryState)
        combined = self.chunks + added
        object.__setattr__(new, "chunks", combined)
        object.__setattr__(new, "thread_id", self.thread_id)
        object.__setattr__(new, "_index", _build_index(combined, self._index))
        # Share the budget index: the new state extends it with its own chunks.
        object.__setattr__(new, "_index_cell", [self._index_cell[0], self.chunks])
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
        object.__setattr__(self, "_index", _build_index(state["chunks"]))
        object.__setattr__(self, "_index_cell", [None, None])
