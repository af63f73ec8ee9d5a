"""The agent loop's fast path: build a history from the last build of a shorter one.

An agent builds its state, appends a chunk or two, and builds again with
the same options. A ``recent`` build of the longer state meets, below the
appended chunks, the same blocks the last build walked, in the same order:
where it reaches one in the same situation (the role of the message above
it, whether a system message exists), that block costs what it cost last
time, so it is added by arithmetic, without touching its chunks. Messages
whose chunks did not change are reused as they are.

Every shortcut here gives exactly what a full build gives (a property test
compares them); whenever the longer state differs in a way the shortcut
does not cover, it declines and the full build runs.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from memctx._budget import BlockRecord, RecentWalk
from memctx._result import ContextBuildResult, ContextMessage

if TYPE_CHECKING:
    from memctx._build_run import BuildRun

MessagesByChunks = dict[tuple[str, ...], ContextMessage]
"""A build's messages by the ids of the chunks they hold."""


class BuildPlan:
    """What an exact ``recent`` build leaves on its history for the next build."""

    __slots__ = (
        "count_key",
        "length",
        "opts",
        "pinned",
        "records",
        "render_key",
        "result",
    )

    def __init__(self, run: BuildRun, walk: RecentWalk, result: ContextBuildResult) -> None:
        self.length = run.length
        self.opts = run.opts
        self.render_key = run.render_key
        self.count_key = run.count_key
        self.result = result
        self.pinned = walk.pinned
        self.records = walk.records

    def messages_by_chunks(self) -> MessagesByChunks:
        """The messages of the last build, to reuse those that hold the very same chunks.

        Ids are unique in a lineage and positions never change, so the same
        ids mean the same chunks, the same role and the same content (the
        system prompt is part of the options, which are the same).
        """
        return {message.chunk_ids: message for message in self.result.messages}

    def applies_to(self, run: BuildRun) -> bool:
        """Whether ``run`` builds this plan's state, or one appended to it, the same way."""
        return (
            self.length <= run.length
            and self.render_key is run.render_key
            and self.count_key == run.count_key
            and (self.opts is run.opts or self.opts == run.opts)
        )


def extend_walk(
    run: BuildRun, plan: BuildPlan, pinned: set[int], walk: RecentWalk
) -> RecentWalk | None:
    """Finish ``walk`` (pinned chunks only so far) for a state ``plan``'s state grew into.

    The appended chunks are walked as usual; below them, the last build's
    blocks are met again. Returns None (the caller builds in full) when
    that does not hold: a chunk older than the appended ones gained a pin;
    the last build walked a chunk that has since lost its pin, or one above
    it; or an appended chunk completes a unit reaching back over chunks the
    last build walked (a result whose call is not pinned with it, or
    unpinned chunks between the call and the result).
    """
    old, new = plan.length, run.length
    index, chunks, excluded = run.index, run.chunks, run.excluded_types
    previous = plan.pinned
    kept = {p for p in pinned if p < old}
    if kept - previous:
        # The replay below needs the same pins as last time under the seam;
        # a pin may only have been lost (the last newest chunk, a closed call).
        return None
    for position in range(old, new):
        members = index.unit_members(position)
        if members is None or members[0] >= old:
            continue  # the unit, if any, lies among the appended chunks
        if any(m not in pinned for m in members):
            return None
        for between in range(members[0] + 1, old):
            if between not in pinned and chunks[between].type not in excluded:
                return None
    # Chunks that lost their pin are walked again here, down to the lowest one.
    # No unit may span across it (pins cover whole units, but a call whose
    # result is filtered out still spans the chunks between them, so a block
    # started there would reach below it), and the last walk must not have
    # walked any of them or anything above them.
    lost = previous - kept
    low = min(lost, default=old)
    if low < old and index.cut_blocked[low]:
        return None
    records = plan.records
    if records and records[0].block[0] >= low:
        return None
    top = range(new - 1, low - 1, -1)
    if not walk.walk(p for p in top if chunks[p].type not in excluded):
        return walk
    # A pinned chunk the walk above skipped last comes right before the first
    # record, unless that record's own walk skipped one nearer to it.
    pending = walk.pending_skip
    for number, met in enumerate(records):
        record = met if met.skip_head is not None else met.after_skip(pending)
        pending = None
        if record.skip_head is not None:
            walk.head_role = record.skip_head
        if (
            record.accepted
            and record.head_before == walk.head_role
            and record.system_before == walk.has_system
        ):
            after = records[number + 1] if number + 1 < len(records) else None
            if not walk.reuse(record, after):
                return walk
            continue
        retry = BlockRecord(record.block, record.skip_head, walk.head_role, walk.has_system)
        if not walk.evaluate(retry):
            return walk
        if not record.accepted:
            # More fits than last time below the appended chunks: not a
            # case the records cover (they stop there); build in full.
            return None
    return walk
