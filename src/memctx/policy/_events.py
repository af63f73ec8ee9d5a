"""The events of a policy step: clearing, compaction and trimming, each done only when it pays.

A change breaks the prompt cache after its first changed chunk: what follows is written
again (Anthropic: 1.25x input) instead of read (0.1x). Under the budget an event is done
only when the reads it saves over the requests until the next one outweigh that write
(:func:`worth`); over the budget it is done anyway. Each function takes the state, its
per-chunk counts and total, and returns them after the event (or unchanged), appending a
:class:`~memctx.policy.PolicyReport` of what it did or why it did not.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Generator, Sequence
from typing import TYPE_CHECKING, Final

import attrs

from memctx._build.builder import counts_of
from memctx._build.compress_step import apply_compressors
from memctx._build.counts import chunk_tokens
from memctx._chunk import Chunk, ChunkType
from memctx._state import MemoryState
from memctx.compress._compaction import (
    CompactionPlan,
    is_compaction_summary,
    place_summary,
    plan_compaction,
)
from memctx.compress._compressors import TrimToolOutputs
from memctx.policy._profiles import ModelProfile
from memctx.policy._step import PolicyReport

if TYPE_CHECKING:
    from memctx.policy._policy import ContextPolicy

_CHARS_PER_TOKEN: Final = 4
_NEW_SUMMARY_TOKENS: Final = 400
"""What a compaction's new summary is guessed to add, before it is made."""
GAP: Final = 0.25
"""After a forced event the request is brought this fraction of the budget below it."""
_FOLD_RESERVE: Final = 0.3
"""A fold leaves this share of the budget free below the compaction trigger (beside the
system prompt and the task) for the turns after it and the summaries stacked later."""
_FOLD_SHARE: Final = 0.75
"""A fold's summary may take this share of the summaries' cap: stacking can go on after it
before the next fold."""

Counted = tuple[MemoryState, int, list[int]]
"""A state, its total tokens (with the request's overhead) and its per-chunk counts."""


@attrs.frozen
class Summarize:
    """A request from the step to its driver: summarise these chunks (``known``: the
    earlier summaries the new one is stacked after; ``max_chars``: its size allowance;
    both for summarizers that take them, see :func:`summarizer_options`)."""

    chunks: tuple[Chunk, ...]
    previous: str | None
    known: str | None = None
    max_chars: int | None = None


def task_position(chunks: Sequence[Chunk]) -> int | None:
    """The position of the task: the first user turn."""
    for position, chunk in enumerate(chunks):
        if chunk.type is ChunkType.AGENT and chunk.role == "user":
            return position
    return None


def _summary_input(
    chunks: Sequence[Chunk], plan: CompactionPlan
) -> tuple[list[Chunk], str | None] | None:
    """The chunks to summarise and the earlier summaries' text (``None``: nothing to do;
    folding two summaries or more into one is something)."""
    covered = [chunks[i] for i in plan.covered]
    new = [chunk for chunk in covered if not is_compaction_summary(chunk)]
    earlier = [chunk.text for chunk in covered if is_compaction_summary(chunk)]
    if not new and len(earlier) < 2:
        return None
    return new, "\n\n".join(earlier) if earlier else None


def worth(
    profile: ModelProfile, saved: int, rewritten: int, after: int, trigger: int, growth: float
) -> bool:
    """Whether the reads saved until the next event outweigh the cache write now."""
    read = profile.cache_read_multiplier
    write = max(profile.cache_write_multiplier, 1.0)
    requests = max(1.0, (trigger - after) / max(growth, 1.0))
    return requests * saved * read >= rewritten * (write - read)


def clear(
    policy: ContextPolicy,
    state: MemoryState,
    counts: list[int],
    total: int,
    overhead: int,
    force: bool,
    growth: float,
    reports: list[PolicyReport],
    why: str | None = None,
) -> Counted:
    """Clear every old tool output the policy's :class:`ClearToolUses` may, at once
    (``why``: the reason to report, when it is not the trigger or the budget)."""
    rule = policy.clear_tool_uses
    assert rule is not None
    assert policy.clear_trigger is not None
    positions = rule.candidates(state.chunks)
    if not positions:
        return state, total, counts
    new, report = apply_compressors(
        state, [rule], tokenizer=policy.tokenizer, counter=counts_of(policy.builder)
    )
    if not report.changed:
        return state, total, counts
    saved = report.tokens_before - report.tokens_after
    after = total - saved
    first = positions[0]
    rewritten = after - overhead - sum(counts[:first])
    if saved <= 0 or saved < rule.clear_at_least:
        reason = f"clearing would save {saved} tokens, under clear_at_least={rule.clear_at_least}"
        reports.append(PolicyReport("skipped", reason, total, total))
        return state, total, counts
    if not force and not worth(
        policy.profile, saved, rewritten, after, policy.clear_trigger, growth
    ):
        reason = (
            f"clearing would save {saved} tokens a request but write {rewritten} again "
            "to the cache: not worth it yet"
        )
        reports.append(PolicyReport("skipped", reason, total, total))
        return state, total, counts
    if why is None:
        why = "over the budget" if force else f"over the trigger of {policy.clear_trigger} tokens"
    reason = f"{why}: cleared {len(report.replaced_ids)} old tool outputs"
    reports.append(PolicyReport("cleared", reason, total, after, report))
    return new, after, chunk_tokens(counts_of(policy.builder), new, policy.tokenizer)


def compact(
    policy: ContextPolicy,
    state: MemoryState,
    counts: list[int],
    total: int,
    overhead: int,
    keep_tokens: int,
    must: bool,
    limit: int,
    growth: float,
    reports: list[PolicyReport],
    now: dt.datetime | None,
) -> Generator[Summarize, str | None, Counted]:
    """Summarise all but the newest ``keep_tokens`` (asks its driver for the summary)."""
    chunks = state.chunks
    summaries = [i for i, chunk in enumerate(chunks) if is_compaction_summary(chunk)]
    # Anchored: a new summary is appended after the earlier ones, which stay as they are
    # (and in the cache), until together they outgrow their share of the budget, or the
    # request cannot get far enough under it without folding them; then they are folded
    # into one, as large as the room the fold leaves allows (so that it keeps every fact
    # it can: the summarizer drops prose first).
    merge = bool(summaries) and sum(counts[i] for i in summaries) > policy.summary_cap
    while True:
        outcome = yield from _compact_once(
            policy, state, counts, total, overhead, keep_tokens, must, limit, growth, merge, now
        )
        if outcome is not None:
            counted, report = outcome
            if report is not None:
                reports.append(report)
            return counted
        merge = True  # the summaries kept as they are leave the request over the budget


def _fixed_front(chunks: Sequence[Chunk], counts: Sequence[int], task: int | None) -> int:
    """The tokens of what every request holds whatever is compacted: the system prompt,
    the task and pinned chunks."""
    return sum(
        count
        for i, (chunk, count) in enumerate(zip(chunks, counts, strict=True))
        if i == task or chunk.type is ChunkType.SYSTEM or chunk.pinned
    )


def _fold_chars(
    policy: ContextPolicy,
    chunks: Sequence[Chunk],
    counts: Sequence[int],
    summaries: Sequence[int],
    room: int,
) -> int | None:
    """The size allowance in characters of a fold that may take ``room`` tokens, at most
    :data:`_FOLD_SHARE` of the summaries' cap (counted in the characters a token of the
    summaries so far; ``None``: no room, the summarizer's own cap)."""
    held = sum(counts[i] for i in summaries)
    if room <= 0 or not held:
        return None
    per_token = sum(len(chunks[i].text) for i in summaries) / held
    return int(min(room, _FOLD_SHARE * policy.summary_cap) * per_token)


def _compact_once(
    policy: ContextPolicy,
    state: MemoryState,
    counts: list[int],
    total: int,
    overhead: int,
    keep_tokens: int,
    must: bool,
    limit: int,
    growth: float,
    merge: bool,
    now: dt.datetime | None,
) -> Generator[Summarize, str | None, tuple[Counted, PolicyReport | None] | None]:
    """One try of :func:`compact`; ``None`` when it must be tried again with ``merge``."""
    assert policy.compaction_tokens is not None
    trigger = policy.compaction_tokens[0]
    chunks = state.chunks
    task = task_position(chunks)
    summaries = [i for i, chunk in enumerate(chunks) if is_compaction_summary(chunk)]
    unchanged = (state, total, counts)
    while True:
        keep_summaries = [] if merge else summaries
        keep = ([] if task is None else [task]) + keep_summaries
        plan = plan_compaction(chunks, keep_tokens, counts, keep=keep)
        given = _summary_input(chunks, plan)
        covered = sum(counts[i] for i in plan.covered)
        previous_tokens = sum(counts[i] for i in plan.covered if is_compaction_summary(chunks[i]))
        estimate = min(previous_tokens + _NEW_SUMMARY_TOKENS, covered)
        after = plan.must_keep_tokens + estimate + overhead
        if merge or not summaries:
            break
        if not must or after + _NEW_SUMMARY_TOKENS <= limit:
            break
        merge = True  # kept as they are, the summaries would leave too little room
    if given is None:
        return unchanged, None
    saved = total - after
    if saved <= 0 and not must:
        return unchanged, None
    first = plan.covered[0]
    rewritten = after - overhead - sum(counts[:first])
    if not must and not worth(policy.profile, saved, rewritten, after, min(trigger, limit), growth):
        reason = (
            f"compaction would save about {saved} tokens a request but write {rewritten} "
            "again to the cache: not worth it yet"
        )
        return unchanged, PolicyReport("skipped", reason, total, total)
    # What stays in front of the new summary (the task, the earlier summaries kept as
    # they are) is known: the summary does not repeat it.
    known = "\n\n".join(chunks[i].text for i in ([] if task is None else [task]) + keep_summaries)
    if merge:
        room = min(trigger, limit) - _fixed_front(chunks, counts, task) - overhead
        allowance = _fold_chars(
            policy, chunks, counts, summaries, room - int(_FOLD_RESERVE * policy.budget)
        )
        ask = Summarize(tuple(given[0]), given[1], known=known, max_chars=allowance)
    else:
        ask = Summarize(tuple(given[0]), given[1], known=known)
    text = yield ask
    assert text is not None
    new, report = place_summary(state, plan, text, policy.tokenizer, policy.builder, now)
    new_counts = chunk_tokens(counts_of(policy.builder), new, policy.tokenizer)
    new_total = sum(new_counts) + overhead
    if not merge and summaries and new_total > limit:
        return None
    if new_total >= total:
        reason = f"a compaction would not make the request smaller ({new_total} tokens)"
        return unchanged, PolicyReport("skipped", reason, total, total)
    why = "over the budget" if must else f"over the trigger of {trigger} tokens"
    reason = (
        f"{why}: {len(report.covered_ids)} chunks summarised, the newest {keep_tokens} tokens "
        "kept" + (", the earlier summaries folded in" if merge else "")
    )
    return (new, new_total, new_counts), PolicyReport("compacted", reason, total, new_total, report)


def trim(
    policy: ContextPolicy,
    state: MemoryState,
    counts: list[int],
    total: int,
    overhead: int,
    limit: int,
    reports: list[PolicyReport],
) -> Counted:
    """Cut outputs too large for the budget to a preview (the last resort)."""
    max_chars = max(200, limit * _CHARS_PER_TOKEN // 4)
    rule = TrimToolOutputs(keep_recent=0, max_chars=max_chars)
    new, report = apply_compressors(
        state, [rule], tokenizer=policy.tokenizer, counter=counts_of(policy.builder)
    )
    if not report.changed:
        return state, total, counts
    new_counts = chunk_tokens(counts_of(policy.builder), new, policy.tokenizer)
    new_total = sum(new_counts) + overhead
    reason = (
        f"still over the budget of {limit}: {len(report.replaced_ids)} outputs cut to a preview"
    )
    reports.append(PolicyReport("trimmed", reason, total, new_total, report))
    return new, new_total, new_counts
