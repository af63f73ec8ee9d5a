"""One policy step as a pipeline: calibrate, count, clear, compact, trim, build, request.

The step is a generator so that one body serves both drivers: when a compaction needs a
summary it yields a :class:`~memctx.policy._events.Summarize` and is sent the text back
(:meth:`ContextPolicy.step` calls the summarizer, :meth:`ContextPolicy.astep` awaits it).
What a policy remembers of a thread between steps (:class:`Memory`) is passed in and
updated in place; the policy stores it when the step ends.
"""

from __future__ import annotations

import datetime as dt
import math
from collections.abc import Generator, Mapping
from typing import TYPE_CHECKING, Any, Final

import attrs

from memctx._build.builder import counts_of
from memctx._build.counts import chunk_tokens
from memctx._chunk import Chunk, ChunkType
from memctx._exceptions import BudgetExceededError, PolicyError
from memctx._result import ContextBuildResult
from memctx._state import MemoryState
from memctx.compress._compaction import is_compaction_summary
from memctx.policy._events import GAP, Summarize, clear, compact, task_position, trim
from memctx.policy._request import provider_request
from memctx.policy._step import PolicyReport, PolicyStep

if TYPE_CHECKING:
    from memctx.policy._policy import ContextPolicy

_ROOM_REQUESTS: Final = 5
"""A clearing alone must leave room for this many requests before compaction is due."""


@attrs.define
class Memory:
    """What a policy remembers of one thread between steps."""

    ratio: float = 1.0
    last_count: int | None = None
    last_total: int | None = None
    growth: float | None = None
    overhead: float | None = None


def usage_tokens(usage: object) -> int:
    """The input tokens a provider reports: Anthropic (input + cache read + cache
    write), OpenAI (``prompt_tokens`` / ``input_tokens``, cached included) or Gemini
    (``prompt_token_count``), from the SDK's usage object or a dict."""

    def get(name: str) -> int:
        value = usage.get(name) if isinstance(usage, Mapping) else getattr(usage, name, None)
        if isinstance(value, bool) or not isinstance(value, int | float) or value < 0:
            return 0
        return int(value)

    for name in ("prompt_tokens", "prompt_token_count"):
        if get(name):
            return get(name)
    total = get("input_tokens")
    total += get("cache_read_input_tokens") + get("cache_creation_input_tokens")
    if not total:
        raise PolicyError(
            "usage",
            f"found no input token count in {usage!r} (expected input_tokens, prompt_tokens "
            "or prompt_token_count)",
        )
    return total


def _record(
    reports: list[PolicyReport],
    stages: list[tuple[PolicyReport, MemoryState]],
    state: MemoryState,
) -> None:
    """Note the state after the newest report, if that report changed something."""
    if (
        reports
        and reports[-1].kind != "skipped"
        and (not stages or stages[-1][0] is not reports[-1])
    ):
        stages.append((reports[-1], state))


def advance(
    run: Generator[Summarize, str | None, PolicyStep], answer: str | None
) -> Summarize | PolicyStep:
    """Run the step on to its next question, or to its end (a StopIteration cannot cross
    into an asyncio future, so the end is returned)."""
    try:
        return run.send(answer)
    except StopIteration as done:
        step: PolicyStep = done.value
        return step


def run_step(
    policy: ContextPolicy,
    state: MemoryState,
    memory: Memory,
    usage: object,
    overflowed: bool,
    now: dt.datetime | None,
) -> Generator[Summarize, str | None, PolicyStep]:
    """The step of :meth:`ContextPolicy.step` (rules in :mod:`memctx.policy._policy`)."""
    events: list[str] = []
    if usage is not None:
        reported = usage_tokens(usage)
        if memory.last_count:
            memory.ratio = min(max(reported / memory.last_count, 0.5), 4.0)
            events.append("calibrated")
    budget = policy.budget
    if overflowed:
        events.append("overflowed")
        # The provider refused what it counted above its window; memctx had counted
        # ``seen``. Aim below as if the provider counts that much more from now on.
        window = policy.profile.context_window if policy.max_tokens is None else budget
        seen = memory.last_count or budget
        memory.ratio = min(max(memory.ratio * 1.25, 1.05 * window / max(seen, 1)), 4.0)
    limit = max(1, min(budget, math.floor(budget / max(memory.ratio, 1.0))))
    tok, builder = policy.tokenizer, policy.builder
    counts = chunk_tokens(counts_of(builder), state, tok)
    prompt = tok.count(policy.system_prompt) if policy.system_prompt else 0
    per_chunk = memory.overhead if memory.overhead is not None else 4.0
    overhead = prompt + math.ceil(per_chunk * len(state)) + 8
    total = sum(counts) + overhead
    if memory.last_total is not None and total > memory.last_total:
        grown = total - memory.last_total
        memory.growth = grown if memory.growth is None else 0.7 * memory.growth + 0.3 * grown
    growth = memory.growth if memory.growth is not None else budget / 20
    target = int(limit * (1 - GAP))
    first_total, first_counts = total, counts
    for attempt in range(2):
        # The estimate can be a little low: when the build still leaves chunks out,
        # the step is done again as over the budget.
        force = overflowed or total > limit or attempt == 1
        reports: list[PolicyReport] = []
        stages: list[tuple[PolicyReport, MemoryState]] = []
        current, total, counts = state, first_total, first_counts
        clear_trigger = policy.clear_trigger
        if clear_trigger is not None and (force or total > min(clear_trigger, limit)):
            tried: list[PolicyReport] = []
            cleared = clear(policy, current, counts, total, overhead, force, growth, tried)
            due = policy.compaction_tokens is not None and (
                force or total > min(policy.compaction_tokens[0], limit)
            )
            if not due or cleared[1] <= _low_water(policy, limit, growth):
                current, total, counts = cleared
                reports.extend(tried)
                _record(reports, stages, current)
            # else: compaction is due too, and clearing alone would leave the next one a
            # few requests away: compact now, and clear what it keeps in the same step.
        if policy.compaction_tokens is not None:
            trigger, keep = policy.compaction_tokens
            must = overflowed or total > limit or (force and total > target)
            if must or total > min(trigger, limit):
                done = len(reports)
                current, total, counts = yield from compact(
                    policy,
                    current,
                    counts,
                    total,
                    overhead,
                    keep,
                    must,
                    limit,
                    growth,
                    reports,
                    now,
                )
                _record(reports, stages, current)
                if clear_trigger is not None and any(r.kind == "compacted" for r in reports[done:]):
                    # Right after a compaction a clearing is free: the cache breaks there
                    # anyway.
                    current, total, counts = clear(
                        policy,
                        current,
                        counts,
                        total,
                        overhead,
                        True,
                        growth,
                        reports,
                        "with the compaction (no second cache break)",
                    )
                    _record(reports, stages, current)
        if total > limit:
            current, total, counts = trim(policy, current, counts, total, overhead, limit, reports)
            _record(reports, stages, current)
        result, limit, _task = build(policy, current, limit)
        if force or stages or not result.excluded_for("over_budget"):
            break
    request = provider_request(
        policy.profile.provider,
        result,
        stable_prefix(current, result),
        builder,
        policy.tools,
        policy.stable_ttl,
    )
    included = set(result.included_chunk_ids)
    content = sum(c for ch, c in zip(current, counts, strict=True) if ch.id in included)
    extra = max(0, result.token_count - content - prompt - 8)
    memory.overhead = extra / max(len(included), 1)
    memory.last_count = result.token_count
    memory.last_total = sum(counts) + prompt + math.ceil(memory.overhead * len(current)) + 8
    events.extend(r.kind for r in reports)
    return PolicyStep(
        state=current,
        result=result,
        request=request,
        reports=tuple(reports),
        events=tuple(events),
        budget=limit,
        stages=tuple(stages),
    )


def _low_water(policy: ContextPolicy, limit: int, growth: float) -> float:
    """How small clearing alone must make the request to be done instead of a compaction
    that is due too: room for :data:`_ROOM_REQUESTS` requests before its trigger."""
    assert policy.compaction_tokens is not None
    return min(policy.compaction_tokens[0], limit) - _ROOM_REQUESTS * growth


def stable_prefix(state: MemoryState, result: ContextBuildResult) -> list[Chunk]:
    """The chunks a compaction leaves in front, in order: everything sent up to the newest
    summary (the task, pinned chunks, calls still waiting, the summaries), or the task
    alone before the first compaction. Between two events none of them changes, whether a
    call among them is answered meanwhile or not."""
    included = set(result.included_chunk_ids)
    sent = [
        (position, chunk)
        for position, chunk in enumerate(state.chunks)
        if chunk.type is not ChunkType.SYSTEM and chunk.id in included
    ]
    last = max((p for p, chunk in sent if is_compaction_summary(chunk)), default=None)
    if last is None:
        task = task_position(state.chunks)
        return [chunk for position, chunk in sent[:1] if position == task]
    return [chunk for position, chunk in sent if position <= last]


def build(
    policy: ContextPolicy, current: MemoryState, limit: int
) -> tuple[ContextBuildResult, int, int | None]:
    """Build ``current`` within ``limit``, the task and the summaries pinned (the summaries
    only while they fit beside the task); the limit is raised (up to the budget) when
    what must stay needs more."""
    options: dict[str, Any] = {
        "tokenizer": policy.tokenizer,
        "strategy": policy.strategy,
        "provider": policy.profile.provider,
    }
    if policy.system_prompt is not None:
        options["system_prompt"] = policy.system_prompt
    task = task_position(current.chunks)
    tasks = [] if task is None else [current.chunks[task].id]
    summaries = [c.id for c in current.chunks if is_compaction_summary(c)]
    for pinned in (tasks + summaries, tasks + summaries[:1], tasks):
        if pinned:
            options["pinned_chunk_ids"] = tuple(pinned)
        else:
            options.pop("pinned_chunk_ids", None)
        try:
            return policy.builder.build(current, max_tokens=limit, **options), limit, task
        except BudgetExceededError as exc:
            if exc.needed <= policy.budget:
                limit = exc.needed  # what must stay needs more than the calibrated budget
                return policy.builder.build(current, max_tokens=limit, **options), limit, task
            if pinned == tasks:
                raise
    raise AssertionError("unreachable")  # pragma: no cover
