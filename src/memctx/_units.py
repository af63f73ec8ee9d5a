"""The units index: which chunks a build keeps or drops together, and which are pinned.

A unit is a tool or skill call and every result with its ``call_id``, or a
``spawn_subagent`` and every ``subagent_result`` of that ``subagent_id``.
The index is extended chunk by chunk (a builder keeps one per shared
history and extends it as the history grows), so an agent that appends and
rebuilds never pays for the whole history again.
"""

from __future__ import annotations

from array import array
from collections.abc import Sequence

from memctx._chunk import Chunk, ChunkType

UnitKey = tuple[str, str]

_CALL_ACTIONS = frozenset({"tool_call", "skill_call"})
_RESULT_ACTIONS = frozenset({"tool_result", "skill_result"})


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
        # cut_blocked[k] > 0: keeping chunks[k:] would split a unit.
        self.cut_blocked: array[int] = array("i")

    def extend_to(self, chunks: Sequence[Chunk], length: int) -> None:
        """Index ``chunks[self.length:length]``; the first ``self.length`` are indexed already."""
        start = self.length
        self.cut_blocked.extend([0] * (length - start))
        for position in range(start, length):
            chunk = chunks[position]
            if chunk.type is ChunkType.SYSTEM:
                self.system_positions.append(position)
            if chunk.metadata.pinned:
                self.pinned_positions.append(position)
            found = unit_role(chunk)
            if found is None:
                continue
            key, is_opener = found
            self.unit_of[position] = key
            if is_opener:
                if key not in self.openers:
                    self.openers[key] = position
                    if key not in self.members:
                        self.pending.add(position)
            else:
                opener = self.openers.get(key)
                if opener is not None:
                    self.pending.discard(opener)
            positions = self.members.get(key)
            if positions is None:
                self.members[key] = [position]
                continue
            # The unit now spans from its first member to this one: no cut in between.
            last = positions[-1]
            blocked = self.cut_blocked
            for k in range(last + 1, position + 1):
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
