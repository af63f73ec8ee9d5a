"""Choosing which chunks fit: the three strategies, with exact incremental totals.

Every strategy starts from the *pinned* chunks (they must fit, or the build
fails) and adds atomic units. The total is kept exact as chunks are added:
the content of a message is its chunks' segments (XML plus newline) whose
token counts add up, and each message adds the chat format's overhead for
its role. When a chunk lands between two included chunks, the number of
messages changes only with its two neighbours' roles (:func:`overhead_delta`).
"""

from __future__ import annotations

import bisect
from collections.abc import Callable, Iterable, Sequence

import attrs

from memctx._analysis import StateIndex
from memctx._chunk import Role


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


@attrs.define
class CostModel:
    """Per-position role and token count, and the per-message overheads."""

    role: Callable[[int], Role]
    measure: Callable[[int], int]
    measure_within: Callable[[int, int], int | None]
    """``measure(p)`` if it is at most the given limit, else None (maybe without a full count)."""
    overhead: dict[str, int]
    system_base: int
    """Tokens of the system message before any chunk: its overhead and the system prompt."""
    has_system_prompt: bool


def overhead_delta(
    overhead: dict[str, int], prev_role: Role | None, next_role: Role | None, role: Role
) -> int:
    """Tokens of message overhead added by putting a ``role`` chunk between two neighbours."""
    if prev_role is not None and prev_role == next_role:
        # The neighbours share one message; a different role splits it in three.
        return 0 if role == prev_role else overhead[role] + overhead[prev_role]
    if role in (prev_role, next_role):
        return 0
    return overhead[role]


def pinned_cost(costs: CostModel, body: Sequence[int], system: Sequence[int]) -> int:
    """Exact tokens of the system message and the pinned body chunks, grouped by role."""
    total = 0
    if system or costs.has_system_prompt:
        total += costs.system_base + sum(costs.measure(p) for p in system)
    previous: Role | None = None
    for position in body:
        role = costs.role(position)
        total += costs.measure(position)
        if role != previous:
            total += costs.overhead[role]
            previous = role
    return total


class BlockRecord:
    """One block a newest-first walk evaluated: enough to replay it on a longer history.

    A child state (the same chunks plus appended ones) walked with the same
    options meets the same blocks below the appended chunks; when it reaches
    one in the same situation (``head_before``, ``system_before``), its cost
    is the same, so the child can add it without looking at its chunks.
    """

    __slots__ = (
        "accepted",
        "added_body",
        "added_system",
        "block",
        "cost",
        "head_before",
        "skip_head",
        "system_before",
    )

    def __init__(
        self,
        block: Sequence[int],
        skip_head: Role | None,
        head_before: Role | None,
        system_before: bool,
    ) -> None:
        self.block = block
        """Positions of the block, newest first (pinned ones among them included)."""
        self.skip_head = skip_head
        """Role of the last pinned body chunk skipped just before the block, if any."""
        self.head_before = head_before
        self.system_before = system_before
        self.cost = 0
        """Tokens the block added (when accepted)."""
        self.added_body: Sequence[int] = ()
        """The block's unpinned body positions, newest first (when accepted)."""
        self.added_system: Sequence[int] = ()
        """The block's unpinned system-role positions, newest first (when accepted)."""
        self.accepted = False

    def after_skip(self, skip_head: Role | None) -> BlockRecord:
        """This record, as met after a pinned chunk of role ``skip_head`` was skipped."""
        if skip_head == self.skip_head:
            return self
        copy = BlockRecord(self.block, skip_head, self.head_before, self.system_before)
        copy.cost, copy.accepted = self.cost, self.accepted
        copy.added_body, copy.added_system = self.added_body, self.added_system
        return copy


class RecentWalk:
    """The ``recent`` strategy: pinned chunks, then the newest blocks that fit, no holes.

    Candidates are walked newest first in blocks that split no unit
    (:meth:`StateIndex.safe_cut`); the walk stops at the first block that
    does not fit. Every evaluated block is recorded (:class:`BlockRecord`).
    """

    def __init__(
        self,
        costs: CostModel,
        index: StateIndex,
        pinned: set[int],
        pinned_body: list[int],
        pinned_system: list[int],
        budget: int | None,
        used: int,
    ) -> None:
        self.costs = costs
        self.index = index
        self.pinned = pinned
        self.pinned_body = pinned_body
        self.budget = budget
        self.used = used
        self.body = list(pinned_body)
        self.system = list(pinned_system)
        self.has_system = bool(pinned_system) or costs.has_system_prompt
        self.head_role: Role | None = None  # role of the nearest included body chunk above
        self.measured: list[int] = []
        self.records: list[BlockRecord] = []
        # Role of the last pinned body chunk skipped after the last block, when
        # the candidates ran out right after it (the next walk's seam needs it).
        self.pending_skip: Role | None = None

    def selection(self) -> Selection:
        return Selection(sorted(self.body), sorted(self.system), self.used, self.measured)

    def walk(self, candidates_desc: Iterable[int]) -> bool:
        """Walk ``candidates_desc`` (newest first); False once a block did not fit."""
        role, pinned, index = self.costs.role, self.pinned, self.index
        iterator = iter(candidates_desc)
        pending: list[int] = []  # candidates read ahead that belong to the next block
        skip_head: Role | None = None
        while True:
            if pending:
                position = pending.pop()
            else:
                position = next(iterator, -1)
                if position < 0:
                    self.pending_skip = skip_head
                    return True
            if position in pinned:
                if role(position) != "system":
                    self.head_role = skip_head = role(position)
                continue
            floor = index.safe_cut(position)
            block = [position]
            while True:
                nxt = next(iterator, -1)
                if nxt < 0:
                    break
                if nxt < floor:
                    pending.append(nxt)
                    break
                block.append(nxt)
            record = BlockRecord(tuple(block), skip_head, self.head_role, self.has_system)
            if not self.evaluate(record):
                return False
            skip_head = None

    def evaluate(self, record: BlockRecord) -> bool:
        """Measure the block of ``record`` and add it if it fits; False if it does not."""
        costs, pinned, budget = self.costs, self.pinned, self.budget
        role, overhead = costs.role, costs.overhead
        self.records.append(record)
        cost = 0
        head = self.head_role
        has_system = self.has_system
        measured: list[int] = []
        for p in record.block:
            if p in pinned:
                if role(p) != "system":
                    head = role(p)
                continue
            chunk_role = role(p)
            if budget is not None:
                tokens = costs.measure_within(p, budget - self.used - cost)
                if tokens is None:
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
            cost += overhead_delta(overhead, prev_role, head, chunk_role)
            head = chunk_role
        if budget is not None and self.used + cost > budget:
            return self._stop(measured)
        record.cost = cost
        record.accepted = True
        body = [p for p in record.block if p not in pinned and role(p) != "system"]
        # Most blocks add all of their chunks to the body: share the tuple then.
        record.added_body = record.block if len(body) == len(record.block) else tuple(body)
        if len(body) + len(pinned.intersection(record.block)) < len(record.block):
            record.added_system = tuple(
                p for p in record.block if p not in pinned and role(p) == "system"
            )
        self.used += cost
        self.head_role = head
        self.has_system = has_system
        self.body.extend(record.added_body)
        self.system.extend(record.added_system)
        return True

    def reuse(self, record: BlockRecord, after: BlockRecord | None) -> bool:
        """Add a block another walk accepted in the same situation, by its recorded cost.

        ``after`` is the record that walk evaluated next (its situation is
        this walk's after the block); None when it evaluated none.
        """
        if self.budget is not None and self.used + record.cost > self.budget:
            retry = BlockRecord(record.block, record.skip_head, self.head_role, self.has_system)
            return self.evaluate(retry)
        self.records.append(record)
        self.used += record.cost
        if after is not None:
            self.head_role, self.has_system = after.head_before, after.system_before
        self.body.extend(record.added_body)
        self.system.extend(record.added_system)
        return True

    def _stop(self, measured: list[int]) -> bool:
        self.measured.extend(measured)
        return False


def select_greedy(
    costs: CostModel,
    units: Iterable[list[int]],
    pinned: set[int],
    pinned_body: list[int],
    pinned_system: list[int],
    budget: int | None,
    used: int,
) -> Selection:
    """Add whole units in the given order, each one that still fits (holes allowed)."""
    overhead = costs.overhead
    body = sorted(pinned_body)
    system = list(pinned_system)
    has_system = bool(system) or costs.has_system_prompt
    measured: list[int] = []
    for unit in units:
        if any(p in pinned for p in unit):
            continue
        cost = 0
        inserted: list[int] = []
        added_system: list[int] = []
        unit_system = has_system
        for p in unit:
            role = costs.role(p)
            cost += costs.measure(p)
            if role == "system":
                if not unit_system:
                    cost += costs.system_base
                    unit_system = True
                added_system.append(p)
                continue
            at = bisect.bisect_left(body, p)
            prev_role = costs.role(body[at - 1]) if at > 0 else None
            next_role = costs.role(body[at]) if at < len(body) else None
            cost += overhead_delta(overhead, prev_role, next_role, role)
            body.insert(at, p)
            inserted.append(p)
        if budget is not None and used + cost > budget:
            for p in inserted:
                del body[bisect.bisect_left(body, p)]
            measured.extend(unit)
            continue
        used += cost
        has_system = unit_system
        system.extend(added_system)
    return Selection(body, sorted(system), used, measured)
