"""The stable selector (strategy ``stable``): a start that stays put, so request prefixes repeat.

A sliding window (``recent``) starts one chunk later on almost every turn
once the history outgrows the budget, so no two requests share a prefix past
the system message and a provider's prompt cache never hits. ``stable``
keeps a *start*: every candidate from the start on is sent, and the start
moves only when what follows it no longer fits — then it jumps forward far
enough that what is left fills only :data:`LOW_WATER` of the room. Between
two jumps, each request is the previous one plus what was appended.

The start is a pure function of the history and the options, so two
processes building the same thread send the same request: it comes from one
pass over the candidates, oldest first, that moves the start whenever the
running total of the candidates after it would exceed the room. The room is
the budget less what every build of this history must send anyway — the
reply priming, the system message with its prompt, and the chunks pinned
for good (SYSTEM chunks, chunks marked ``pinned``, ``pinned_chunk_ids``) seen
so far. Each candidate counts its tokens plus the message overhead it adds:
a chunk of the role of the candidate before it joins that one's message and
adds none, unless it becomes the first after the start (a pinned chunk always
counts its message's). So while the counts add up, the tail's total is what
sending it costs. The builder keeps the pass's progress per history and
options and resumes it after an append; a new process redoes the pass (the
store's persisted counts make it cheap) and finds the same start.

A unit may reach back over the start (a result arriving for an older call);
the build then starts at the nearest cut below it that splits no unit. The
final choice is the newest-first walk over the candidates from there on
(plus the pinned chunks), so every guarantee of ``recent`` holds: units
whole, pins kept, exact count, never over budget. Should the bound ever let
through more than fits (pinned chunks the pass cannot know of, such as a
call still waiting for its result far back), the walk simply stops early.
"""

from __future__ import annotations

from memctx._chunk import Chunk, Role
from memctx._build.selection import SelectionProblem

LOW_WATER = 0.6
"""After a jump, what follows the start fills at most this share of the room."""


class StableStart:
    """The progress of the pass that places the start (see the module docstring)."""

    __slots__ = ("base", "length", "role", "start", "system", "tail", "tail_positions")

    def __init__(self, base: int, *, system: bool) -> None:
        self.length = 0
        """How many chunks of the history the pass has seen."""
        self.start = 0
        """The start: no candidate before it is sent (pinned ones aside)."""
        self.base = base
        """Tokens every build sends anyway, with the permanent pins seen so far."""
        self.tail = 0
        """Tokens of the unpinned candidates from the start on."""
        self.tail_positions: list[tuple[int, int, int]] = []
        """(position, tokens, overhead it adds if it comes first) of those candidates,
        oldest first."""
        self.role: Role | None = None
        """The role of the last candidate outside the system message."""
        self.system = system
        """Whether the base counts a system message (a prompt, or a chunk seen for it)."""

    def copy(self) -> StableStart:
        other = StableStart(self.base, system=self.system)
        other.length, other.start, other.tail = self.length, self.start, self.tail
        other.tail_positions = list(self.tail_positions)
        other.role = self.role
        return other


def permanently_pinned(chunk: Chunk, pinned_ids: frozenset[str]) -> bool:
    """Whether every build of a history holding ``chunk`` pins it (whatever comes after)."""
    return chunk.type.value == "SYSTEM" or chunk.pinned or chunk.id in pinned_ids


def advance(
    progress: StableStart,
    length: int,
    problem: SelectionProblem,
) -> None:
    """Run the pass over the history's chunks ``progress.length`` to ``length``,
    moving the start when needed."""
    assert problem.budget is not None
    costs, candidates, items = problem.costs, problem.candidates, problem.items
    overhead, budget, pinned_ids = costs.overhead, problem.budget, problem.pinned_ids
    for position in range(progress.length, length):
        if not candidates.is_candidate(position):
            continue
        tokens = costs.measure(position)
        role = costs.role(position)
        # The system message opens once, in the base; a body chunk opens a
        # message unless it follows a chunk of its role.
        if role == "system":
            opener, joins = 0, False
            if not progress.system:
                progress.base += overhead["system"]
                progress.system = True
        else:
            opener, joins = overhead[role], role == progress.role
            progress.role = role
        if permanently_pinned(items[position], pinned_ids):
            progress.base += tokens + opener
            continue
        cost, extra = (tokens, opener) if joins else (tokens + opener, 0)
        progress.tail += cost
        progress.tail_positions.append((position, cost, extra))
        room = budget - progress.base
        if progress.tail > room:
            _jump(progress, position, int(room * LOW_WATER))
    progress.length = length


def _jump(progress: StableStart, newest: int, low_water: int) -> None:
    """Move the start forward until the tail is at most ``low_water``."""
    kept = progress.tail_positions
    drop = 0
    tail = progress.tail
    while drop < len(kept) - 1 and tail > low_water:  # the newest candidate stays
        tail -= kept[drop][1]
        drop += 1
    del kept[:drop]
    if kept and kept[0][2]:  # the first after the start now opens its message
        position, cost, extra = kept[0]
        kept[0] = (position, cost + extra, 0)
        tail += extra
    progress.tail = tail
    progress.start = kept[0][0] if kept else newest + 1


def select_start(
    problem: SelectionProblem, remembered: StableStart | None
) -> tuple[int, StableStart]:
    """The start for this build, and the pass's progress to remember."""
    assert problem.budget is not None
    length = problem.candidates.length
    costs = problem.costs
    if remembered is None or remembered.length > length:
        prompt = costs.has_system_prompt
        fixed = costs.overhead["priming"] + problem.reserved
        progress = StableStart(fixed + (costs.system_base if prompt else 0), system=prompt)
    else:
        progress = remembered.copy()
    advance(progress, length, problem)
    # A unit may reach back over the start (a result for an older call):
    # start where no unit is split, as the history is now.
    return problem.units.safe_cut(min(progress.start, length - 1)) if length else 0, progress
