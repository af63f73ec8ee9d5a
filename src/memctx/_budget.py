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


def select_recent(
    costs: CostModel,
    index: StateIndex,
    candidates_desc: Iterable[int],
    pinned: set[int],
    pinned_body: list[int],
    pinned_system: list[int],
    budget: int | None,
    used: int,
) -> Selection:
    """Pinned chunks, then the newest candidates that fit, in blocks that split no unit."""
    overhead = costs.overhead
    body = list(pinned_body)
    system = list(pinned_system)
    has_system = bool(system) or costs.has_system_prompt
    head_role: Role | None = None  # role of the nearest included body chunk above
    measured: list[int] = []
    iterator = iter(candidates_desc)
    pending: list[int] = []  # candidates read ahead that belong to the next block
    while True:
        if pending:
            position = pending.pop()
        else:
            position = next(iterator, -1)
            if position < 0:
                return Selection(sorted(body), sorted(system), used, measured)
        if position in pinned:
            if costs.role(position) != "system":
                head_role = costs.role(position)
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
        cost = 0
        block_head = head_role
        block_system = has_system
        overflow = False
        block_measured: list[int] = []
        for p in block:
            if p in pinned:
                if costs.role(p) != "system":
                    block_head = costs.role(p)
                continue
            role = costs.role(p)
            if budget is not None:
                tokens = costs.measure_within(p, budget - used - cost)
                if tokens is None:
                    overflow = True
                    break
                block_measured.append(p)
                cost += tokens
            else:
                cost += costs.measure(p)
            if role == "system":
                if not block_system:
                    cost += costs.system_base
                    block_system = True
                continue
            below = bisect.bisect_left(pinned_body, p) - 1
            prev_role = costs.role(pinned_body[below]) if below >= 0 else None
            cost += overhead_delta(overhead, prev_role, block_head, role)
            block_head = role
        if overflow or (budget is not None and used + cost > budget):
            measured.extend(block_measured)
            return Selection(sorted(body), sorted(system), used, measured)
        used += cost
        head_role = block_head
        has_system = block_system
        for p in block:
            if p not in pinned:
                (system if costs.role(p) == "system" else body).append(p)


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
