"""What a paged build's result holds of the rows it did not read: its filters over the
light columns, and the ids and types of every visible row, read when first asked for
(:class:`PagedRows`). See :mod:`._paged`."""

from __future__ import annotations

import bisect
import threading
from collections.abc import Callable

from memctx._build.options import BuildOptions
from memctx._chunk import Chunk, ChunkType
from memctx._exceptions import StoreError
from memctx._result import (
    ContextBuildResult,
    ExclusionReason,
    Exclusions,
    LeftOutFilter,
    ReportDict,
)
from memctx._state import MemoryState
from memctx.store._paged_thread import PagedThread


class Filters:
    """The build's filters over the light index (as :class:`memctx._build.filter.Candidates`)."""

    def __init__(self, thread: PagedThread, options: BuildOptions) -> None:
        excluded = {t.value for t in options.exclude_types}
        if not options.include_system:
            excluded.add(ChunkType.SYSTEM.value)
        if not options.include_environment:
            excluded.add(ChunkType.ENVIRONMENT.value)
        self.excluded = excluded
        self.include_system = options.include_system
        self.include_environment = options.include_environment
        self.only = (
            None if options.include_only_chunk_ids is None else set(options.include_only_chunk_ids)
        )
        self.ids, self.types = thread.ids, thread.types

    def is_candidate(self, i: int) -> bool:
        if self.only is not None and self.ids[i] not in self.only:
            return False
        return self.types[i] not in self.excluded

    def left_out_filter(self) -> LeftOutFilter:
        """These filters as a value a result holds."""
        return LeftOutFilter(
            only=None if self.only is None else frozenset(self.only),
            excluded_types=frozenset(ChunkType(kind) for kind in self.excluded),
            include_system=self.include_system,
            include_environment=self.include_environment,
        )

    def reason(self, i: int) -> ExclusionReason:
        """Why a row outside the reach is left out."""
        if self.only is not None and self.ids[i] not in self.only:
            return ExclusionReason.NOT_SELECTED
        kind = self.types[i]
        if kind not in self.excluded:
            return ExclusionReason.OVER_BUDGET
        if kind == ChunkType.SYSTEM.value and not self.include_system:
            return ExclusionReason.SYSTEM_EXCLUDED
        if kind == ChunkType.ENVIRONMENT.value and not self.include_environment:
            return ExclusionReason.ENVIRONMENT_EXCLUDED
        return ExclusionReason.TYPE_EXCLUDED


Lister = Callable[[object, int, int], tuple[list[str], list[str]]]
"""``(created_at, batch, length)`` -> the ids and types of a build's visible rows."""


class PagedRows:
    """The rows of a paged build: its reach (the chunks it read), and the ids and types of
    every other visible row, read from the database when first asked for."""

    def __init__(
        self,
        length: int,
        reach: MemoryState,
        reach_index: tuple[int, ...],
        listed: Callable[[], tuple[list[str], list[str]]],
    ) -> None:
        self._length = length
        self.reach = reach
        self.reach_index = reach_index
        self._listed = listed
        self._lock = threading.Lock()
        self._ids: list[str] | None = None
        self._types: list[str] = []
        self._positions: dict[str, int] | None = None

    def __len__(self) -> int:
        return self._length

    def _rows(self) -> tuple[list[str], list[str]]:
        with self._lock:
            if self._ids is None:
                ids, types = self._listed()
                if len(ids) != self._length:
                    raise StoreError("the thread's rows changed after this build")
                self._ids, self._types = ids, types
            return self._ids, self._types

    def id_at(self, position: int) -> str:
        chunk = self.chunk_at(position)
        return chunk.id if chunk is not None else self._rows()[0][position]

    def type_at(self, position: int) -> ChunkType:
        chunk = self.chunk_at(position)
        return chunk.type if chunk is not None else ChunkType(self._rows()[1][position])

    def chunk_at(self, position: int) -> Chunk | None:
        found = bisect.bisect_left(self.reach_index, position)
        if found < len(self.reach_index) and self.reach_index[found] == position:
            return self.reach[found]
        return None

    def position_of(self, chunk_id: str) -> int | None:
        if chunk_id in self.reach:
            return self.reach_index[self.reach.index_of(chunk_id)]
        if self._positions is None:
            ids = self._rows()[0]
            self._positions = dict(zip(ids, range(len(ids)), strict=True))
        return self._positions.get(chunk_id)


def paged_exclusions(
    thread: PagedThread,
    filters: Filters,
    inner: ContextBuildResult,
    listed: Callable[[], tuple[list[str], list[str]]],
) -> Exclusions:
    """The left-out chunks of a paged build: those of the reach's build and every row
    outside the reach."""
    reach_index = tuple(thread.reach_index)
    sent = frozenset(reach_index[inner.state.index_of(i)] for i in inner.included_chunk_ids)
    left_out = inner.exclusions
    if isinstance(left_out, Exclusions):  # what the build measured, without estimating the rest
        measured = dict(left_out.measured)
    else:
        measured = {
            i: e.tokens
            for i, e in left_out.items()
            if e.tokens is not None and not e.tokens_estimated
        }
    ids, n = thread.ids, len(thread)
    for position, tokens in thread.counts.items():
        if position not in sent and position < n:
            measured.setdefault(ids[position], tokens)
    rows = PagedRows(n, inner.state, reach_index, listed)
    return Exclusions(rows, sent, filters.left_out_filter(), ReportDict(measured))
