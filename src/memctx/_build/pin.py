"""The pin stage: the chunks every build must keep, whole units at a time.

Pinned are SYSTEM chunks, chunks marked ``pinned``, ``pinned_chunk_ids``,
the newest candidate (``pin_newest``) and calls still waiting for a result
(``pin_pending_calls``); a pin covers every candidate of the pinned chunk's
unit. Filtered-out chunks are never pinned.
"""

from __future__ import annotations

from collections.abc import Callable

from memctx._build.filter import Candidates
from memctx._build.options import BuildOptions
from memctx._units import UnitsIndex


def pin(
    candidates: Candidates,
    units: UnitsIndex,
    opts: BuildOptions,
    index_of: Callable[[str], int],
) -> set[int]:
    """Positions of the pinned candidates."""
    seeds: list[int] = []
    seeds.extend(units.system_positions)
    seeds.extend(units.pinned_positions)
    for chunk_id in opts.pinned_chunk_ids:
        seeds.append(index_of(chunk_id))
    if opts.pin_newest:
        newest = next(candidates.positions_desc(), None)
        if newest is not None:
            seeds.append(newest)
    if opts.pin_pending_calls:
        seeds.extend(units.pending_openers())
    pinned: set[int] = set()
    for position in seeds:
        if position in pinned or not candidates.is_candidate(position):
            continue
        members = units.unit_members(position)
        if members is None:
            pinned.add(position)
        else:
            pinned.update(m for m in members if candidates.is_candidate(m))
    return pinned
