"""The units index: which chunks a build keeps or drops together, and which are pinned.

A unit is a tool or skill call and every result with its ``call_id``, or a
``spawn_subagent`` and every ``subagent_result`` of that ``subagent_id``.
Builds keep or drop units whole; compression and compaction replace or cover
them whole, and never touch a *protected* chunk (:func:`history_shape`).
The index describes the chunk list and nothing else (no builder's
configuration enters it), so the shared history owns it and extends it as
chunks are added: an agent that appends and rebuilds never pays for the
whole history again, and a first build does not pay for it either.
"""

from __future__ import annotations

from array import array
from collections.abc import Iterable, Sequence

import attrs

from memctx._chunk import Chunk, ChunkType

UnitKey = tuple[str, str]

_CALL_ACTIONS = frozenset({"tool_call", "skill_call"})
_RESULT_ACTIONS = frozenset({"tool_result", "skill_result"})
_DELEGATION_ACTIONS = frozenset({"spawn_subagent", "subagent_result"})
_MEDIA_ACTIONS = frozenset({"image", "document"})


def unit_role(chunk: Chunk) -> tuple[UnitKey, bool] | None:
    """Return ``(unit key, is_opener)`` for a chunk that belongs to an atomic unit."""
    ctype = chunk.type
    if ctype is ChunkType.WORKFLOW and chunk.action in _CALL_ACTIONS:
        call_id = chunk.metadata.call_id
        return (("call", call_id), True) if call_id else None
    if ctype is ChunkType.ENVIRONMENT and chunk.action in _RESULT_ACTIONS:
        call_id = chunk.metadata.call_id
        return (("call", call_id), False) if call_id else None
    if ctype is ChunkType.DELEGATION:
        agent = chunk.metadata.subagent_id
        if agent and chunk.action == "spawn_subagent":
            return ("agent", agent), True
        if agent and chunk.action == "subagent_result":
            return ("agent", agent), False
    return None


class UnitsIndex:
    """Units, pinned and SYSTEM chunks of the first ``length`` chunks of a history."""

    __slots__ = (
        "cut_blocked",
        "length",
        "media",
        "members",
        "openers",
        "pending",
        "pinned_positions",
        "system_positions",
        "unit_of",
    )

    def __init__(self) -> None:
        self.length = 0  # how many chunks are indexed
        self.system_positions: list[int] = []
        self.pinned_positions: list[int] = []
        self.unit_of: dict[int, UnitKey] = {}
        self.members: dict[UnitKey, list[int]] = {}
        self.openers: dict[UnitKey, int] = {}
        self.pending: set[int] = set()  # openers with no result yet
        self.media: set[int] = set()  # images and documents: their cost is not their XML's
        # cut_blocked[k] > 0: keeping chunks[k:] would split a unit.
        self.cut_blocked: array[int] = array("i")

    def extend_to(self, chunks: Sequence[Chunk], length: int) -> None:
        """Index ``chunks[self.length:length]``; the first ``self.length`` are indexed already."""
        start = self.length
        blocked = self.cut_blocked
        blocked.frombytes(bytes(blocked.itemsize * (length - start)))
        system, workflow, environment, delegation = (
            ChunkType.SYSTEM,
            ChunkType.WORKFLOW,
            ChunkType.ENVIRONMENT,
            ChunkType.DELEGATION,
        )
        pinned_positions, system_positions = self.pinned_positions, self.system_positions
        agent_type, media = ChunkType.AGENT, self.media
        unit_of, members, openers, pending = self.unit_of, self.members, self.openers, self.pending
        for position in range(start, length):
            chunk = chunks[position]
            ctype = chunk.type
            metadata = chunk.metadata
            if metadata.pinned:
                pinned_positions.append(position)
            # unit_role, inlined: this loop runs once per chunk of every history.
            if ctype is workflow:
                if chunk.action not in _CALL_ACTIONS or not metadata.call_id:
                    continue
                key: UnitKey = ("call", metadata.call_id)
                is_opener = True
            elif ctype is environment:
                if chunk.action not in _RESULT_ACTIONS or not metadata.call_id:
                    continue
                key, is_opener = ("call", metadata.call_id), False
            elif ctype is delegation:
                agent = metadata.subagent_id
                if not agent or chunk.action not in _DELEGATION_ACTIONS:
                    continue
                key, is_opener = ("agent", agent), chunk.action == "spawn_subagent"
            else:
                if ctype is system:
                    system_positions.append(position)
                elif ctype is agent_type and chunk.action in _MEDIA_ACTIONS:
                    media.add(position)
                continue
            unit_of[position] = key
            if is_opener:
                if key not in openers:
                    openers[key] = position
                    if key not in members:
                        pending.add(position)
            else:
                opener = openers.get(key)
                if opener is not None:
                    pending.discard(opener)
            positions = members.get(key)
            if positions is None:
                members[key] = [position]
                continue
            # The unit now spans from its first member to this one: no cut in between.
            for k in range(positions[-1] + 1, position + 1):
                blocked[k] += 1
            positions.append(position)
        self.length = length

    def safe_cut(self, position: int) -> int:
        """The largest ``k <= position`` where keeping ``chunks[k:]`` splits no unit."""
        blocked = self.cut_blocked
        while position > 0 and blocked[position]:
            position -= 1
        return position

    def unit_members(self, position: int) -> list[int] | None:
        """All positions of the unit ``position`` belongs to, or None."""
        key = self.unit_of.get(position)
        return None if key is None else self.members[key]

    def pending_openers(self) -> list[int]:
        """Positions of calls and spawns that have no result yet."""
        return sorted(self.pending)


@attrs.frozen
class HistoryShape:
    """The units and protected positions of a sequence of chunks, as compression sees them.

    *Protected* chunks are never dropped, changed or covered: SYSTEM chunks,
    pinned chunks, and calls or spawns still waiting for their result, each
    with its whole unit.
    """

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
    """The units, the calls still waiting and the protected chunks of ``chunks``,
    read from their :class:`UnitsIndex`."""
    index = UnitsIndex()
    index.extend_to(chunks, len(chunks))
    members = {key: tuple(positions) for key, positions in index.members.items()}
    shape = HistoryShape(dict(index.unit_of), members, frozenset(index.pending), frozenset())
    seeds = [*index.system_positions, *index.pinned_positions, *index.pending]
    return attrs.evolve(shape, protected=frozenset(shape.closure(seeds)))
