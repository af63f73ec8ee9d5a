"""The select stage: one selector per strategy, looked up by name."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from types import MappingProxyType

import attrs

from memctx._exceptions import BuildOptionError
from memctx._incremental import LastWalk, MessagesByChunks, extend_walk
from memctx._select_greedy import select_by_priority, select_in_order
from memctx._select_newest_first import NewestFirstWalk
from memctx._selection import Selection, SelectionProblem


@attrs.frozen
class Selected:
    """A selector's answer: the selection, and what the next build may reuse."""

    selection: Selection
    walk: NewestFirstWalk | None = None
    """The newest-first walk that made the selection (strategy ``recent``)."""
    reusable_messages: MessagesByChunks | None = None
    """Messages of the last build that hold the same chunks (when its walk was extended)."""


Selector = Callable[[SelectionProblem, LastWalk | None], Selected]


def select_recent(problem: SelectionProblem, last: LastWalk | None) -> Selected:
    """The pinned chunks, then the newest blocks that fit, no holes.

    With ``last`` (the last walk of a shorter state of this history, built
    the same way) the walk covers only what was appended and replays the
    rest; it falls back to a full walk whenever that cannot give the same.
    """

    def new_walk() -> NewestFirstWalk:
        return NewestFirstWalk(
            problem.costs,
            problem.units,
            problem.pinned,
            problem.pinned_body,
            problem.pinned_system,
            problem.budget,
            problem.fixed,
        )

    if last is not None:
        walk = extend_walk(problem, last, new_walk())
        if walk is not None:
            return Selected(walk.selection(), walk, last.messages_by_chunks())
    walk = new_walk()
    walk.walk(problem.candidates.positions_desc())
    return Selected(walk.selection(), walk)


def _greedy(choose: Callable[[SelectionProblem], Selection]) -> Selector:
    def selector(problem: SelectionProblem, last: LastWalk | None) -> Selected:
        return Selected(choose(problem))

    selector.__doc__ = choose.__doc__
    return selector


SELECTORS: Mapping[str, Selector] = MappingProxyType(
    {
        "recent": select_recent,
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
