"""The agent loop's fast path: build a grown history from the last walk of a shorter one.

An agent builds its state, appends a chunk or two, and builds again with
the same options. A newest-first build of the longer state meets, below the
appended chunks, the same blocks the last walk met, in the same order:
where it reaches one in the same situation (the role above it, whether a
system message exists), that block costs what it cost last time, so it is
added by arithmetic, without touching its chunks. Messages whose chunks did
not change are reused as they are.

Every shortcut here gives exactly what a full build gives (a property test
compares them); whenever the longer state differs in a way the shortcut
does not cover, it declines and the full build runs.
"""

from __future__ import annotations

from memctx._build.select_recent import NewestFirstWalk, WalkedBlock
from memctx._build.selection import SelectionProblem
from memctx._chunk import ContextMessage
from memctx._result import ContextBuildResult

MessagesByChunks = dict[tuple[str, ...], ContextMessage]
"""A build's messages by the ids of the chunks they hold."""


class LastWalk:
    """What an exact newest-first build leaves in its builder's cache for the next build."""

    __slots__ = ("length", "pinned", "result", "walked")

    def __init__(self, length: int, walk: NewestFirstWalk, result: ContextBuildResult) -> None:
        self.length = length
        self.result = result
        self.pinned = frozenset(walk.pinned)
        self.walked = tuple(walk.walked)

    def messages_by_chunks(self) -> MessagesByChunks:
        """The messages of the last build, to reuse those that hold the very same chunks.

        Ids are unique in a history and positions never change, so the same
        ids mean the same chunks, the same role and the same content (the
        system prompt is part of the options, which are the same).
        """
        return {message.chunk_ids: message for message in self.result.messages}


def extend_walk(
    problem: SelectionProblem, last: LastWalk, walk: NewestFirstWalk
) -> NewestFirstWalk | None:
    """Finish ``walk`` (pinned chunks only so far) for a history grown from ``last``'s.

    The appended chunks are walked as usual; below them, the last walk's
    blocks are met again. Returns None (the caller walks in full) when that
    does not hold: a chunk older than the appended ones gained a pin; the
    last walk walked a chunk that has since lost its pin, or one above it;
    or an appended chunk completes a unit reaching back over chunks the last
    walk walked (a result whose call is not pinned with it, or unpinned
    chunks between the call and the result).
    """
    old, new = last.length, problem.candidates.length
    units, items = problem.units, problem.items
    excluded = problem.candidates.excluded_types
    pinned = problem.pinned
    previous = last.pinned
    kept = {p for p in pinned if p < old}
    if kept - previous:
        # The replay below needs the same pins as last time under the seam;
        # a pin may only have been lost (the last newest chunk, a closed call).
        return None
    for position in range(old, new):
        members = units.unit_members(position)
        if members is None or members[0] >= old:
            continue  # the unit, if any, lies among the appended chunks
        if any(m not in pinned for m in members):
            return None
        for between in range(members[0] + 1, old):
            if between not in pinned and items[between].type not in excluded:
                return None
    # Chunks that lost their pin are walked again here, down to the lowest one.
    # No unit may span across it (pins cover whole units, but a call whose
    # result is filtered out still spans the chunks between them, so a block
    # started there would reach below it), and the last walk must not have
    # walked any of them or anything above them.
    lost = previous - kept
    low = min(lost, default=old)
    if low < old and units.cut_blocked[low]:
        return None
    walked = last.walked
    if walked and walked[0].positions[0] >= low:
        return None
    top = range(new - 1, low - 1, -1)
    if not walk.walk(p for p in top if items[p].type not in excluded):
        return walk
    # A pinned chunk the walk above skipped last comes right before the first
    # block, unless that block's own walk skipped one nearer to it.
    pending = walk.trailing_skipped_pin_role
    for number, met in enumerate(walked):
        block = met if met.skipped_pin_role is not None else met.after_skipped_pin(pending)
        pending = None
        if block.skipped_pin_role is not None:
            walk.role_above = block.skipped_pin_role
        if (
            block.accepted
            and block.role_above == walk.role_above
            and block.had_system_message == walk.has_system_message
        ):
            after = walked[number + 1] if number + 1 < len(walked) else None
            if not walk.replay(block, after):
                return walk
            continue
        retry = WalkedBlock(
            block.positions, block.skipped_pin_role, walk.role_above, walk.has_system_message
        )
        if not walk.evaluate(retry):
            return walk
        if not block.accepted:
            # More fits than last time below the appended chunks: not a
            # case the walked blocks cover (they stop there); walk in full.
            return None
    return walk
