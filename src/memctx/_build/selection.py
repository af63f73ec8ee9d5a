"""What a selector is given and what it returns."""

from __future__ import annotations

from collections.abc import Sequence

import attrs

from memctx._build.cost import CostModel
from memctx._build.filter import Candidates
from memctx._chunk import Chunk
from memctx._units import UnitsIndex


@attrs.define
class Selection:
    """What a strategy chose, in state positions."""

    body: list[int]
    """Included chunks of the user/assistant messages, ascending."""
    system: list[int]
    """Included chunks of the leading system message, ascending."""
    used: int
    """Exact tokens of everything chosen, with overhead and reply priming."""
    measured_excluded: list[int] = attrs.field(factory=list)
    """Left-out positions whose tokens were measured."""
    refused: list[int] = attrs.field(factory=list)
    """Left-out positions found over the limit, maybe without a full count."""


@attrs.frozen
class SelectionProblem:
    """Everything a selector needs: the candidates, what they cost, and what is fixed.

    ``fixed`` is the exact cost of the pinned chunks (with their messages'
    overhead and the reply priming); ``budget`` is None when unlimited.
    """

    items: Sequence[Chunk]
    candidates: Candidates
    units: UnitsIndex
    costs: CostModel
    pinned: set[int]
    pinned_body: list[int]
    """Pinned positions outside the system message, ascending."""
    pinned_system: list[int]
    """Pinned positions of the system message, ascending."""
    budget: int | None
    fixed: int
    pinned_ids: frozenset[str] = frozenset()
    """``pinned_chunk_ids`` of the options."""
    reserved: int = 0
    """Tokens of the turns a provider adapter adds (part of ``fixed``)."""

    def units_in_order(self) -> list[list[int]]:
        """Every candidate as a unit (a call with its results, or a single chunk), oldest first."""
        seen: set[int] = set()
        found: list[list[int]] = []
        is_candidate = self.candidates.is_candidate
        for position in self.candidates.positions():
            if position in seen:
                continue
            members = self.units.unit_members(position)
            unit = [position] if members is None else [m for m in members if is_candidate(m)]
            seen.update(unit)
            found.append(unit)
        return found
