"""The stable selector (strategy ``stable``): a start that stays put, so request prefixes repeat.

A sliding window (``recent``) starts one chunk later on almost every turn
once the history outgrows the budget, so no two requests share a prefix past
the system message and a provider's prompt cache never hits. ``stable``
sends every candidate from a *start* on, and the start may only be a
*boundary*: a position fixed by the chunks around it, never by the end of
the history. So the start is the first boundary from which what follows
fits, and it moves only when the history outgrows it — then to the next
boundary, a block further on.

What fits: the *room* is the budget less what every build of this history
sends anyway (the reply priming, the system message with its prompt, the
chunks pinned for good: SYSTEM chunks, chunks marked ``pinned``,
``pinned_chunk_ids``). The *tail* from a position is what sending every
other candidate from there on costs: its tokens, plus a message overhead for
each chunk whose role differs from the candidate's before it, and for the
first one. Walking back from the newest chunk, the first position where the
tail exceeds the room is the *limit*: the start is the first boundary above
it (the first chunk, when the whole history fits). That reads about what a
``recent`` build reads.

The boundaries: each chunk has a *rank*, a hash of its id. A chunk is a
boundary when its rank is higher than that of every chunk near it, near
meaning that what lies strictly between the two costs at most a *reach*
(a quarter of the room, rounded down to a power of 2^(1/4) so that a new
pin rarely changes it); a chunk costs its tokens and its message's overhead
(nothing if it is not a candidate, or pinned for good). So two boundaries
are more than a reach apart, and on average about two reaches: the start
moves about half the room at a time (the tail then fills what is left).
And the boundaries have what ``stable`` needs:

- appending chunks adds no boundary below the newest ones, and takes one
  away only within a reach of the end (a newer chunk of a higher rank
  arrives near it); and the limit only moves forward. So the start stays
  put until what follows it outgrows the room, whatever builds were made in
  between (or none);
- deciding whether a chunk is a boundary looks a reach around it, so a
  build reads and counts at most a reach's worth of chunks below the limit.
  The start is a pure function of the state and the options: a builder that
  saw earlier states, a fresh one and a store that reads only the newest
  rows find the same one. In the rare window of the room holding no
  boundary, the build starts right above the limit, as ``recent`` would.

A unit may reach back over the start (a result arriving for an older call);
the build then starts at the nearest cut below it that splits no unit. The
final choice is the newest-first walk over the candidates from there on
(plus the pinned chunks), so every guarantee of ``recent`` holds: units
whole, pins kept, exact count, never over budget. Should the room let
through more than fits (pinned chunks it does not count, such as a call
still waiting for its result far back), the walk simply stops early.
"""

from __future__ import annotations

import math
from hashlib import blake2b

from memctx._build.selection import SelectionProblem
from memctx._chunk import Chunk

REACH_SHARE = 0.25
"""The reach is at most this share of the room (rounded down to a power of 2^(1/4))."""


class StableStart:
    """What a stable selection found: its start, and how far back it looked."""

    __slots__ = ("boundary", "limit", "lowest", "reach", "start")

    def __init__(self, start: int, boundary: int, limit: int, lowest: int, reach: int) -> None:
        self.start = start
        """Where the walk starts: the boundary, or the cut below it that splits no unit."""
        self.boundary = boundary
        """The boundary the start derives from."""
        self.limit = limit
        """The newest position whose tail exceeds the room (-1: none does)."""
        self.lowest = lowest
        """The lowest position whose chunk the selection read (the start depends on
        nothing below it but the pinned chunks)."""
        self.reach = reach


def permanently_pinned(chunk: Chunk, pinned_ids: frozenset[str]) -> bool:
    """Whether every build of a history holding ``chunk`` pins it (whatever comes after)."""
    return chunk.type.value == "SYSTEM" or chunk.pinned or chunk.id in pinned_ids


def rank(chunk_id: str) -> int:
    """The rank of a chunk: a hash of its id, the same in every process."""
    return int.from_bytes(blake2b(chunk_id.encode(), digest_size=8).digest(), "little")


def reach_of(room: int) -> int:
    """The reach of ``room``: at most a quarter of it, a power of 2^(1/4) (at least 1)."""
    share = room * REACH_SHARE
    if share < 1:
        return 1
    return max(1, int(2 ** (math.floor(4 * math.log2(share)) / 4)))


class _Reader:
    """The per-position facts the selection reads, each once, with the lowest one read."""

    def __init__(self, problem: SelectionProblem, cap: int) -> None:
        self.problem = problem
        self.cap = cap
        self.costs: dict[int, int] = {}
        self.ranks: dict[int, int] = {}
        self.lowest = problem.candidates.length

    def facts(self, position: int) -> tuple[str | None, bool, int]:
        """``(role or None if not a candidate, permanently pinned, tokens capped)``."""
        problem = self.problem
        if position < self.lowest:
            self.lowest = position
        if not problem.candidates.is_candidate(position):
            return None, False, 0
        if permanently_pinned(problem.items[position], problem.pinned_ids):
            return problem.costs.role(position), True, 0
        found = problem.costs.measure_within(position, self.cap)
        return problem.costs.role(position), False, self.cap + 1 if found is None else found

    def cost(self, position: int) -> int:
        """What ``position`` adds to a cell: its tokens and its message's overhead."""
        found = self.costs.get(position)
        if found is None:
            role, permanent, tokens = self.facts(position)
            found = 0 if role is None or permanent else tokens + self.problem.costs.overhead[role]
            self.costs[position] = found
        return found

    def rank(self, position: int) -> int:
        found = self.ranks.get(position)
        if found is None:
            if position < self.lowest:
                self.lowest = position
            found = self.ranks[position] = rank(self.problem.items[position].id)
        return found


def room_of(problem: SelectionProblem) -> tuple[int, bool]:
    """The room (the budget less what every build of this history sends anyway), and
    whether that includes a system message."""
    assert problem.budget is not None
    costs, items, pinned_ids = problem.costs, problem.items, problem.pinned_ids
    overhead = costs.overhead
    base = overhead["priming"] + problem.reserved
    system = costs.has_system_prompt
    if system:
        base += costs.system_base
    for position in sorted(problem.pinned):
        if not permanently_pinned(items[position], pinned_ids):
            continue
        role = costs.role(position)
        base += costs.measure(position)
        if role != "system":
            base += overhead[role]
        elif not system:
            base += overhead["system"]
            system = True
    return problem.budget - base, system


def find_limit(reader: _Reader, room: int, system: bool) -> int:
    """The newest position from which the tail exceeds ``room``; -1 if none does."""
    overhead = reader.problem.costs.overhead
    settled = 0  # contributions of the non-permanent body chunks above the open one
    open_role: str | None = None  # the lowest body candidate seen: its role
    open_cost: int | None = None  # and, when it is not pinned, its tokens and overhead
    first_extra = 0  # the overhead the lowest unpinned body chunk saved by joining
    system_tokens, system_open = 0, 0
    for position in range(reader.problem.candidates.length - 1, -1, -1):
        role, permanent, tokens = reader.facts(position)
        if role is None:
            continue
        if role == "system":
            if not permanent:
                system_tokens += tokens
                system_open = 0 if system else overhead["system"]
        else:
            if open_role is not None and open_cost is not None:
                joined = open_role == role
                ov = overhead[open_role]
                settled += open_cost - (ov if joined else 0)
                first_extra = ov if joined else 0
            open_role = role
            open_cost = None if permanent else tokens + overhead[role]
        tail = settled + system_tokens + system_open
        tail += open_cost if open_cost is not None else first_extra
        if tail > room:
            return position
    return -1


def is_boundary(reader: _Reader, position: int, reach: int) -> bool:
    """Whether ``position`` outranks every chunk within ``reach`` of it."""
    length = reader.problem.candidates.length
    own = reader.rank(position)
    between, right = 0, position + 1
    while right < length and between <= reach:
        if reader.rank(right) > own:
            return False
        between += reader.cost(right)
        right += 1
    between, left = 0, position - 1
    while left >= 0 and between <= reach:
        if reader.rank(left) > own:
            return False
        between += reader.cost(left)
        left -= 1
    return True


def select_start(problem: SelectionProblem) -> StableStart:
    """The start of a stable build of ``problem`` (see the module docstring)."""
    length = problem.candidates.length
    if length == 0:
        return StableStart(0, 0, -1, 0, 1)
    room, system = room_of(problem)
    reach = reach_of(room)
    reader = _Reader(problem, max(room, 0) + reach)
    limit = find_limit(reader, room, system)
    if limit < 0:
        boundary = 0
    else:
        boundary = next(
            (p for p in range(limit + 1, length) if is_boundary(reader, p, reach)),
            min(limit + 1, length - 1),
        )
    # A unit may reach back over the boundary (a result for an older call):
    # start where no unit is split, as the history is now.
    start = problem.units.safe_cut(boundary)
    return StableStart(start, boundary, limit, min(reader.lowest, start), reach)
