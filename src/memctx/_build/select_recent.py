"""The newest-first selector (strategy ``recent``): pinned chunks, then the newest that fit.

Invariants of :class:`NewestFirstWalk`, true before and after every block:

- ``used`` is the exact cost of ``body`` and ``system`` as messages: their
  segments, one overhead per run of same-role body chunks, the system
  message's overhead and prompt when it exists, and the reply priming.
- ``body`` holds the pinned body chunks and every accepted block's body
  chunks; together they form one suffix of the candidates (no holes) plus
  the pinned chunks below it.
- ``role_above`` is the role of the nearest included body chunk above the
  next position to walk (a pinned one skipped counts), or None when none is
  included above it. It is what a chunk added next is grouped with.
- ``has_system_message`` says whether the request has a system message yet
  (a system prompt or an included SYSTEM-role chunk).

Why blocks: candidates are walked newest first in *blocks* that split no
unit — a block runs from a position down to the nearest cut
(:meth:`UnitsIndex.safe_cut`) below which no unit reaches — so a call and
its results are added or refused together. The walk stops at the first
block that does not fit: ``recent`` never leaves a hole.

Every evaluated block is kept as a :class:`WalkedBlock` with the situation
it was met in (``role_above``, ``had_system_message``, the role of a pinned
chunk skipped just before it). A longer history built with the same options
meets the same blocks below its appended chunks; in the same situation a
block costs the same, so :mod:`memctx._build.incremental` replays it by arithmetic.
"""

from __future__ import annotations

import bisect
from collections.abc import Iterable, Sequence

from memctx._build.cost import CostModel, overhead_delta
from memctx._build.selection import Selection
from memctx._chunk import Role
from memctx._units import UnitsIndex


class WalkedBlock:
    """One block a newest-first walk evaluated: enough to replay it on a longer history."""

    __slots__ = (
        "accepted",
        "added_body",
        "added_system",
        "cost",
        "had_system_message",
        "positions",
        "role_above",
        "skipped_pin_role",
    )

    def __init__(
        self,
        positions: Sequence[int],
        skipped_pin_role: Role | None,
        role_above: Role | None,
        had_system_message: bool,
    ) -> None:
        self.positions = positions
        """Positions of the block, newest first (pinned ones among them included)."""
        self.skipped_pin_role = skipped_pin_role
        """Role of the last pinned body chunk skipped just before the block, if any."""
        self.role_above = role_above
        self.had_system_message = had_system_message
        self.cost = 0
        """Tokens the block added (when accepted)."""
        self.added_body: Sequence[int] = ()
        """The block's unpinned body positions, newest first (when accepted)."""
        self.added_system: Sequence[int] = ()
        """The block's unpinned system-role positions, newest first (when accepted)."""
        self.accepted = False

    def after_skipped_pin(self, skipped_pin_role: Role | None) -> WalkedBlock:
        """This block, as met after a pinned chunk of role ``skipped_pin_role`` was skipped."""
        if skipped_pin_role == self.skipped_pin_role:
            return self
        copy = WalkedBlock(
            self.positions, skipped_pin_role, self.role_above, self.had_system_message
        )
        copy.cost, copy.accepted = self.cost, self.accepted
        copy.added_body, copy.added_system = self.added_body, self.added_system
        return copy


class NewestFirstWalk:
    """The state of a newest-first walk (see the module's invariants)."""

    def __init__(
        self,
        costs: CostModel,
        units: UnitsIndex,
        pinned: set[int],
        pinned_body: list[int],
        pinned_system: list[int],
        budget: int | None,
        used: int,
    ) -> None:
        self.costs = costs
        self.units = units
        self.pinned = pinned
        self.pinned_body = pinned_body
        self.budget = budget
        self.used = used
        self.body = list(pinned_body)
        self.system = list(pinned_system)
        self.has_system_message = bool(pinned_system) or costs.has_system_prompt
        self.role_above: Role | None = None
        self.measured: list[int] = []
        self.refused: list[int] = []  # where a block was refused: the chunk over the limit
        self.walked: list[WalkedBlock] = []
        # Role of the last pinned body chunk skipped after the last block, when
        # the candidates ran out right after it (a longer history's seam needs it).
        self.trailing_skipped_pin_role: Role | None = None

    def selection(self) -> Selection:
        return Selection(
            sorted(self.body), sorted(self.system), self.used, self.measured, self.refused
        )

    def walk(self, candidates_desc: Iterable[int]) -> bool:
        """Walk ``candidates_desc`` (newest first); False once a block did not fit."""
        role, pinned, units = self.costs.role, self.pinned, self.units
        iterator = iter(candidates_desc)
        pending: list[int] = []  # candidates read ahead that belong to the next block
        skipped_pin_role: Role | None = None
        while True:
            if pending:
                position = pending.pop()
            else:
                position = next(iterator, -1)
                if position < 0:
                    self.trailing_skipped_pin_role = skipped_pin_role
                    return True
            if position in pinned:
                if role(position) != "system":
                    self.role_above = skipped_pin_role = role(position)
                continue
            floor = units.safe_cut(position)
            block = [position]
            while True:
                nxt = next(iterator, -1)
                if nxt < 0:
                    break
                if nxt < floor:
                    pending.append(nxt)
                    break
                block.append(nxt)
            met = WalkedBlock(
                tuple(block), skipped_pin_role, self.role_above, self.has_system_message
            )
            if not self.evaluate(met):
                return False
            skipped_pin_role = None

    def evaluate(self, block: WalkedBlock) -> bool:
        """Measure ``block`` and add it if it fits; False if it does not."""
        costs, pinned, budget = self.costs, self.pinned, self.budget
        role, overhead = costs.role, costs.overhead
        self.walked.append(block)
        cost = 0
        above = self.role_above
        has_system = self.has_system_message
        measured: list[int] = []
        for p in block.positions:
            if p in pinned:
                if role(p) != "system":
                    above = role(p)
                continue
            chunk_role = role(p)
            if budget is not None:
                tokens = costs.measure_within(p, budget - self.used - cost)
                if tokens is None:
                    self.refused.append(p)
                    return self._stop(measured)
                measured.append(p)
                cost += tokens
            else:
                cost += costs.measure(p)
            if chunk_role == "system":
                if not has_system:
                    cost += costs.system_base
                    has_system = True
                continue
            below = bisect.bisect_left(self.pinned_body, p) - 1
            prev_role = role(self.pinned_body[below]) if below >= 0 else None
            cost += overhead_delta(overhead, prev_role, above, chunk_role)
            above = chunk_role
        if budget is not None and self.used + cost > budget:
            return self._stop(measured)
        block.cost = cost
        block.accepted = True
        positions = block.positions
        body = [p for p in positions if p not in pinned and role(p) != "system"]
        # Most blocks add all of their chunks to the body: share the tuple then.
        block.added_body = positions if len(body) == len(positions) else tuple(body)
        if len(body) + len(pinned.intersection(positions)) < len(positions):
            block.added_system = tuple(
                p for p in positions if p not in pinned and role(p) == "system"
            )
        self.used += cost
        self.role_above = above
        self.has_system_message = has_system
        self.body.extend(block.added_body)
        self.system.extend(block.added_system)
        return True

    def replay(self, block: WalkedBlock, after: WalkedBlock | None) -> bool:
        """Add a block another walk accepted in the same situation, by its recorded cost.

        ``after`` is the block that walk evaluated next (its situation is
        this walk's after the block); None when it evaluated none.
        """
        if self.budget is not None and self.used + block.cost > self.budget:
            retry = WalkedBlock(
                block.positions, block.skipped_pin_role, self.role_above, self.has_system_message
            )
            return self.evaluate(retry)
        self.walked.append(block)
        self.used += block.cost
        if after is not None:
            self.role_above, self.has_system_message = after.role_above, after.had_system_message
        self.body.extend(block.added_body)
        self.system.extend(block.added_system)
        return True

    def _stop(self, measured: list[int]) -> bool:
        self.measured.extend(measured)
        return False
