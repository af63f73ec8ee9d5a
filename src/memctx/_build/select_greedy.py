"""The greedy selectors (strategies ``priority`` and ``in_order``): whole units, holes allowed."""

from __future__ import annotations

import bisect
from collections.abc import Iterable

from memctx._build.cost import CostModel, overhead_delta
from memctx._build.selection import Selection, SelectionProblem


def select_in_order(problem: SelectionProblem) -> Selection:
    """Oldest first, each unit that still fits."""
    return add_units_that_fit(problem, problem.units_in_order())


def select_by_priority(problem: SelectionProblem) -> Selection:
    """Highest ``priority`` first (a unit counts its highest), then the newest."""
    items = problem.items
    units = problem.units_in_order()
    units.sort(key=lambda u: (-max(items[p].priority for p in u), -u[-1]))
    return add_units_that_fit(problem, units)


def add_units_that_fit(problem: SelectionProblem, units: Iterable[list[int]]) -> Selection:
    """Add whole units in the given order after the pinned ones, each one that still fits."""
    costs: CostModel = problem.costs
    overhead, pinned, budget = costs.overhead, problem.pinned, problem.budget
    used = problem.fixed
    body = sorted(problem.pinned_body)
    system = list(problem.pinned_system)
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
