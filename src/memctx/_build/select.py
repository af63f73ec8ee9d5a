"""The select stage: one selector per strategy, looked up by name."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from itertools import takewhile
from types import MappingProxyType

import attrs

from memctx._build.incremental import LastWalk, MessagesByChunks, extend_walk
from memctx._build.select_greedy import select_by_priority, select_in_order
from memctx._build.select_recent import NewestFirstWalk
from memctx._build.select_stable import REACH_SHARE, select_start
from memctx._build.selection import Selection, SelectionProblem
from memctx._exceptions import BuildOptionError


@attrs.frozen
class Selected:
    """A selector's answer: the selection, and what the next build may reuse."""

    selection: Selection
    walk: NewestFirstWalk | None = None
    """The newest-first walk that made the selection (strategy ``recent``)."""
    reusable_messages: MessagesByChunks | None = None
    """Messages of the last build that hold the same chunks (when its walk was extended)."""
    memory: object | None = None
    """What the selector keeps for the next build of this history with these options."""


Selector = Callable[[SelectionProblem, object | None], Selected]
"""``(problem, what the selector kept last time or None) -> Selected``."""


def _new_walk(problem: SelectionProblem) -> NewestFirstWalk:
    return NewestFirstWalk(
        problem.costs,
        problem.units,
        problem.pinned,
        problem.pinned_body,
        problem.pinned_system,
        problem.budget,
        problem.fixed,
    )


def _count_ahead(problem: SelectionProblem, share: float = 1.0) -> None:
    """Have what a newest-first walk will likely measure counted in batches (on several
    threads where that pays): the candidates newest first within ``share`` of the room
    left by what is fixed, or all of them without a budget."""
    budget = problem.budget
    room = None if budget is None else int((budget - problem.fixed) * share)
    problem.costs.count_ahead(problem.candidates.positions_desc(), room)


def select_recent(problem: SelectionProblem, remembered: object | None) -> Selected:
    """The pinned chunks, then the newest blocks that fit, no holes.

    With ``last`` (the last walk of a shorter state of this history, built
    the same way) the walk covers only what was appended and replays the
    rest; it falls back to a full walk whenever that cannot give the same.
    """
    last = remembered if isinstance(remembered, LastWalk) else None
    if last is not None and last.length <= problem.candidates.length:
        walk = extend_walk(problem, last, _new_walk(problem))
        if walk is not None:
            return Selected(walk.selection(), walk, last.messages_by_chunks())
    _count_ahead(problem)
    walk = _new_walk(problem)
    walk.walk(problem.candidates.positions_desc())
    return Selected(walk.selection(), walk)


def select_stable(problem: SelectionProblem, remembered: object | None) -> Selected:
    """Every candidate from a start that moves only by blocks (see ``select_stable``).

    The start is found anew from the newest chunks on every build (it depends
    on nothing else), so a fresh builder and a warm one choose alike.
    """
    if problem.budget is None:
        return select_recent(problem, None)
    _count_ahead(problem, 1 + REACH_SHARE)  # it reads a reach beyond the room
    found = select_start(problem)
    start = found.start
    walk = _new_walk(problem)
    walk.walk(takewhile(lambda p: p >= start, problem.candidates.positions_desc()))
    return Selected(walk.selection(), memory=found)


def _greedy(choose: Callable[[SelectionProblem], Selection]) -> Selector:
    def selector(problem: SelectionProblem, remembered: object | None) -> Selected:
        if problem.budget is None:  # each candidate is measured
            _count_ahead(problem)
        return Selected(choose(problem))

    selector.__doc__ = choose.__doc__
    return selector


SELECTORS: Mapping[str, Selector] = MappingProxyType(
    {
        "recent": select_recent,
        "stable": select_stable,
        "priority": _greedy(select_by_priority),
        "in_order": _greedy(select_in_order),
    }
)
"""Strategy names and their selectors."""


def selector_for(strategy: str) -> Selector:
    """The selector of ``strategy``; :class:`BuildOptionError` listing the valid names."""
    found = SELECTORS.get(strategy)
    if found is None:
        raise BuildOptionError(
            "strategy", f"unknown strategy {strategy!r}; choose one of {', '.join(SELECTORS)}"
        )
    return found
