"""What compression and compaction must keep together or leave alone.

A *unit* is a tool or skill call with every result of its ``call_id``, or a
``spawn_subagent`` with every ``subagent_result`` of its ``subagent_id``;
units are kept, replaced or covered as a whole. *Protected* chunks are never
dropped, changed or covered: SYSTEM chunks, pinned chunks, and calls or
spawns still waiting for their result — with the whole unit of each.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import attrs

from memctx._chunk import Chunk, ChunkType
from memctx._units import UnitKey, unit_role


@attrs.frozen
class HistoryShape:
    """The units and protected positions of a sequence of chunks."""

    unit_of: dict[int, UnitKey]
    members: dict[UnitKey, tuple[int, ...]]
    pending: frozenset[int]
    protected: frozenset[int]

    def unit_members(self, position: int) -> tuple[int, ...]:
        """Every position of ``position``'s unit (itself alone when it is in none)."""
        key = self.unit_of.get(position)
        return (position,) if key is None else self.members[key]

    def closure(self, positions: Iterable[int]) -> set[int]:
        """``positions`` with every other member of their units."""
        found: set[int] = set()
        for position in positions:
            found.update(self.unit_members(position))
        return found


def history_shape(chunks: Sequence[Chunk]) -> HistoryShape:
    """Find the units, the calls still waiting and the protected chunks of ``chunks``."""
    unit_of: dict[int, UnitKey] = {}
    members: dict[UnitKey, list[int]] = {}
    openers: dict[UnitKey, int] = {}
    answered: set[UnitKey] = set()
    for position, chunk in enumerate(chunks):
        found = unit_role(chunk)
        if found is None:
            continue
        key, is_opener = found
        unit_of[position] = key
        members.setdefault(key, []).append(position)
        if is_opener:
            openers.setdefault(key, position)
        else:
            answered.add(key)
    # As the builder sees it: a call or spawn is waiting while its unit has no result.
    pending = frozenset(opener for key, opener in openers.items() if key not in answered)
    frozen = {key: tuple(positions) for key, positions in members.items()}
    shape = HistoryShape(unit_of, frozen, pending, frozenset())
    seeds = [
        position
        for position, chunk in enumerate(chunks)
        if chunk.type is ChunkType.SYSTEM or chunk.metadata.pinned or position in pending
    ]
    return attrs.evolve(shape, protected=frozenset(shape.closure(seeds)))
