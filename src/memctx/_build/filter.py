"""The filter stage: which chunks a build may use at all, and why the others may not."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence

from memctx._build.options import BuildOptions
from memctx._chunk import Chunk, ChunkType
from memctx._result import ExclusionReason


class Candidates:
    """The chunks of ``items[:length]`` that pass the build's filters.

    ``only`` holds the positions ``include_only_chunk_ids`` named (ascending),
    or None when every position may be a candidate.
    """

    __slots__ = (
        "excluded_types",
        "include_environment",
        "include_system",
        "items",
        "length",
        "only",
        "only_set",
    )

    def __init__(
        self, items: Sequence[Chunk], length: int, opts: BuildOptions, only: list[int] | None
    ) -> None:
        self.items = items
        self.length = length
        self.include_system = opts.include_system
        self.include_environment = opts.include_environment
        excluded = set(opts.exclude_types)
        if not opts.include_system:
            excluded.add(ChunkType.SYSTEM)
        if not opts.include_environment:
            excluded.add(ChunkType.ENVIRONMENT)
        self.excluded_types = frozenset(excluded)
        self.only = only
        self.only_set = None if only is None else frozenset(only)

    def reason(self, position: int) -> ExclusionReason | None:
        """Why the chunk at ``position`` is filtered out, or None if it is a candidate."""
        if self.only_set is not None and position not in self.only_set:
            return ExclusionReason.NOT_SELECTED
        ctype = self.items[position].type
        if ctype not in self.excluded_types:
            return None
        if ctype is ChunkType.SYSTEM and not self.include_system:
            return ExclusionReason.SYSTEM_EXCLUDED
        if ctype is ChunkType.ENVIRONMENT and not self.include_environment:
            return ExclusionReason.ENVIRONMENT_EXCLUDED
        return ExclusionReason.TYPE_EXCLUDED

    def is_candidate(self, position: int) -> bool:
        if self.only_set is not None and position not in self.only_set:
            return False
        return self.items[position].type not in self.excluded_types

    def positions_desc(self, below: int | None = None) -> Iterator[int]:
        """Candidate positions below ``below`` (default: all), newest first, lazily."""
        items, excluded = self.items, self.excluded_types
        top = self.length if below is None else below
        if self.only is not None:
            for position in reversed(self.only):
                if position < top and items[position].type not in excluded:
                    yield position
            return
        if not excluded:
            yield from range(top - 1, -1, -1)
            return
        for position in range(top - 1, -1, -1):
            if items[position].type not in excluded:
                yield position

    def positions(self) -> Iterator[int]:
        """Candidate positions, oldest first."""
        source = self.only if self.only is not None else range(self.length)
        return (p for p in source if self.is_candidate(p))


def filter_candidates(
    items: Sequence[Chunk], length: int, opts: BuildOptions, index_of: Callable[[str], int]
) -> Candidates:
    """The candidates of a build of ``items[:length]`` with ``opts``.

    ``index_of`` gives a chunk id's position (:meth:`MemoryState.index_of`).
    """
    only: list[int] | None = None
    if opts.include_only_chunk_ids is not None:
        only = sorted({index_of(chunk_id) for chunk_id in opts.include_only_chunk_ids})
    return Candidates(items, length, opts, only)
