"""compact(): replace everything older than the kept tail by one summary chunk.

Covered are the chunks before the kept tail except protected ones (SYSTEM,
pinned, calls or spawns still waiting, with their units) and except units
that reach into the tail: a unit is covered whole or not at all. The
summary takes the place of the newest covered chunk, so everything kept
before it is older than what it summarises.
"""

from __future__ import annotations

import datetime as dt
import hashlib
from collections.abc import Collection, Mapping, Sequence
from typing import TYPE_CHECKING, Any

import attrs

from memctx._build.builder import counts_of
from memctx._build.counts import chunk_tokens
from memctx._build.default import default_builder
from memctx._chunk import Chunk, ChunkType
from memctx._exceptions import CompactionError
from memctx._state import MemoryState
from memctx._units import history_shape
from memctx._validators import check_counting_tools
from memctx.chunks import progress_summary
from memctx.typing import Summarizer, Tokenizer

if TYPE_CHECKING:
    from memctx._build.builder import ContextBuilder

_EPOCH = dt.datetime(1970, 1, 1, tzinfo=dt.UTC)


def is_compaction_summary(chunk: Chunk) -> bool:
    """Whether ``chunk`` is a summary made by a compaction (it names what it covers)."""
    return (
        chunk.type is ChunkType.WORKING_FLOW
        and chunk.subtype == "PROGRESS_SUMMARY"
        and chunk.metadata.derived_from is not None
    )


@attrs.frozen
class CompactionReport:
    """What a compaction did, or why it did not.

    ``compacted`` is false when nothing was covered; ``reason`` then says why
    (``"nothing to compact"``, ``"under trigger"``, or that what must stay is
    over the trigger). Tokens are sums of the chunks' rendered XML as the
    builder counts them with ``tokenizer``.
    """

    compacted: bool
    reason: str
    covered_ids: tuple[str, ...]
    summary_id: str | None
    original_count: int
    tokens_before: int
    tokens_after: int
    kept_tokens: int
    summary_tokens: int
    tokenizer: str

    def to_event(self) -> dict[str, Any]:
        """The payload of a ``context.compacted`` event (plain JSON)."""
        return {
            "compacted": self.compacted,
            "reason": self.reason,
            "covered_ids": list(self.covered_ids),
            "covered": len(self.covered_ids),
            "summary_id": self.summary_id,
            "original_count": self.original_count,
            "tokens_before": self.tokens_before,
            "tokens_after": self.tokens_after,
            "kept_tokens": self.kept_tokens,
            "summary_tokens": self.summary_tokens,
            "tokenizer": self.tokenizer,
        }

    @classmethod
    def from_event(cls, payload: Mapping[str, Any]) -> CompactionReport:
        """The report a ``context.compacted`` event was made from (see :meth:`to_event`)."""
        try:
            summary_id = payload["summary_id"]
            return cls(
                compacted=bool(payload["compacted"]),
                reason=str(payload["reason"]),
                covered_ids=tuple(str(i) for i in payload["covered_ids"]),
                summary_id=None if summary_id is None else str(summary_id),
                original_count=int(payload["original_count"]),
                tokens_before=int(payload["tokens_before"]),
                tokens_after=int(payload["tokens_after"]),
                kept_tokens=int(payload["kept_tokens"]),
                summary_tokens=int(payload["summary_tokens"]),
                tokenizer=str(payload["tokenizer"]),
            )
        except (KeyError, TypeError, ValueError) as exc:
            raise CompactionError(f"not a context.compacted payload: {exc!r}") from None

    def summary(self) -> str:
        """One readable line."""
        if not self.compacted:
            return f"not compacted: {self.reason} ({self.tokens_before} tokens, {self.tokenizer})"
        return (
            f"compacted {len(self.covered_ids)} chunks into {self.summary_id} "
            f"({self.summary_tokens} tokens; {self.original_count} original chunks in all): "
            f"{self.tokens_before} -> {self.tokens_after} tokens ({self.tokenizer})"
        )


@attrs.frozen
class CompactionPlan:
    """Which positions a compaction would cover, and the tokens of what stays."""

    covered: tuple[int, ...]
    previous: int | None  # position of the previous summary among the covered, if any
    tokens: int
    must_keep_tokens: int  # what stays whatever the summary says: the tail and protected chunks


def _check_tokens(name: str, value: object) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise CompactionError(f"{name} must be a non-negative int, got {value!r}")
    return value


def plan_compaction(
    chunks: Sequence[Chunk],
    keep_recent_tokens: int,
    counts: Sequence[int],
    keep: Collection[int] = (),
) -> CompactionPlan:
    """Choose what a compaction covers (see the module's docstring); the positions in
    ``keep`` (and their units) are never covered either."""
    n = len(chunks)
    tail_start = n
    tail_tokens = 0
    while tail_start > 0 and (
        tail_start == n or tail_tokens + counts[tail_start - 1] <= keep_recent_tokens
    ):
        tail_start -= 1
        tail_tokens += counts[tail_start]
    shape = history_shape(chunks)
    kept = shape.protected | shape.closure(keep)
    covered = []
    for position in range(tail_start):
        if position in kept:
            continue
        if any(p >= tail_start for p in shape.unit_members(position)):
            continue
        covered.append(position)
    previous = None
    for position in covered:
        if is_compaction_summary(chunks[position]):
            previous = position
    covered_set = set(covered)
    total = sum(counts)
    must_keep = sum(c for i, c in enumerate(counts) if i not in covered_set)
    return CompactionPlan(tuple(covered), previous, total, must_keep)


def _check_arguments(
    state: object, summarizer: object, tokenizer: object, builder: object, now: object
) -> None:
    """What :func:`compact` and :meth:`CompactionPolicy.apply` check before any work."""
    if not isinstance(state, MemoryState):
        raise CompactionError(f"state must be a MemoryState, got {type(state).__name__}")
    if not callable(summarizer):
        raise CompactionError(f"{summarizer!r} is not a summarizer (chunks, previous) -> str")
    check_counting_tools(tokenizer, builder, CompactionError)
    if now is not None:
        _now_ms(now)  # type: ignore[arg-type]


def _now_ms(now: dt.datetime | None) -> int:
    if now is not None and not isinstance(now, dt.datetime):
        raise CompactionError(f"now must be a timezone-aware datetime, got {type(now).__name__}")
    moment = now if now is not None else dt.datetime.now(dt.UTC)
    if moment.tzinfo is None:
        raise CompactionError("now must be a timezone-aware datetime")
    return (moment - _EPOCH) // dt.timedelta(milliseconds=1)


def compact(
    state: MemoryState,
    summarizer: Summarizer,
    *,
    keep_recent_tokens: int,
    tokenizer: Tokenizer | None = None,
    builder: ContextBuilder | None = None,
    now: dt.datetime | None = None,
) -> tuple[MemoryState, CompactionReport]:
    """Replace the chunks older than the newest ``keep_recent_tokens`` by one summary.

    The newest chunk is always kept. The summary is a ``progress_summary``
    chunk with ``compacted_at`` (``now``, epoch milliseconds),
    ``original_count`` (how many original chunks it stands for, counting
    those an earlier summary it folds in stood for) and
    ``metadata.derived_from`` (the ids it covers). An earlier summary among
    the covered chunks is passed to ``summarizer`` as ``previous`` and
    folded in. When nothing can be covered the state is returned as is.
    """
    _check_tokens("keep_recent_tokens", keep_recent_tokens)
    _check_arguments(state, summarizer, tokenizer, builder, now)
    builder = builder if builder is not None else default_builder()
    tok = tokenizer if tokenizer is not None else builder.tokenizer
    chunks = state.chunks
    counts = chunk_tokens(counts_of(builder), state, tok)
    plan = plan_compaction(chunks, keep_recent_tokens, counts)
    return apply_plan(state, plan, counts, summarizer, tok, builder, now)


def _unchanged(plan: CompactionPlan, reason: str, tok: Tokenizer) -> CompactionReport:
    return CompactionReport(
        compacted=False,
        reason=reason,
        covered_ids=(),
        summary_id=None,
        original_count=0,
        tokens_before=plan.tokens,
        tokens_after=plan.tokens,
        kept_tokens=plan.must_keep_tokens,
        summary_tokens=0,
        tokenizer=tok.name,
    )


def summary_input(
    state: MemoryState, plan: CompactionPlan
) -> tuple[list[Chunk], str | None] | None:
    """What the summarizer gets for ``plan``: the covered chunks (without the previous
    summary) and the previous summary's text; ``None`` when there is nothing to compact."""
    chunks = state.chunks
    if not plan.covered or plan.covered == (plan.previous,):
        return None
    previous = None if plan.previous is None else chunks[plan.previous].text
    return [chunks[i] for i in plan.covered if i != plan.previous], previous


def check_summary(text: object) -> str:
    """The summarizer's answer, if it is usable text."""
    if not isinstance(text, str) or not text.strip():
        raise CompactionError(f"the summarizer must return non-empty text, got {text!r}")
    return text


def place_summary(
    state: MemoryState,
    plan: CompactionPlan,
    text: str,
    tok: Tokenizer,
    builder: ContextBuilder,
    now: dt.datetime | None,
) -> tuple[MemoryState, CompactionReport]:
    """Put one summary holding ``text`` in place of the chunks ``plan`` covers."""
    chunks = state.chunks
    covered = plan.covered
    original_count = sum(
        (chunks[i].metadata.original_count or 1) if is_compaction_summary(chunks[i]) else 1
        for i in covered
    )
    covered_ids = tuple(chunks[i].id for i in covered)
    compacted_at = _now_ms(now)
    digest = hashlib.sha256(
        "\0".join([*covered_ids, str(compacted_at), text]).encode("utf-8", "surrogatepass")
    ).hexdigest()[:12]
    newest = chunks[covered[-1]]
    summary = progress_summary(
        text,
        original_count=original_count,
        compacted_at=compacted_at,
        id=f"summary_{digest}",
        created_at=newest.created_at,
    )
    summary = attrs.evolve(
        summary, metadata=attrs.evolve(summary.metadata, derived_from=covered_ids)
    )
    covered_set = set(covered)
    last = covered[-1]
    result: list[Chunk] = []
    for position, chunk in enumerate(chunks):
        if position == last:
            result.append(summary)
        elif position not in covered_set:
            result.append(chunk)
    new_state = MemoryState(result, thread_id=state.thread_id)
    summary_tokens = counts_of(builder).tokens(summary, tok)
    report = CompactionReport(
        compacted=True,
        reason="compacted",
        covered_ids=covered_ids,
        summary_id=summary.id,
        original_count=original_count,
        tokens_before=plan.tokens,
        tokens_after=plan.must_keep_tokens + summary_tokens,
        kept_tokens=plan.must_keep_tokens,
        summary_tokens=summary_tokens,
        tokenizer=tok.name,
    )
    return new_state, report


def apply_plan(
    state: MemoryState,
    plan: CompactionPlan,
    counts: Sequence[int],
    summarizer: Summarizer,
    tok: Tokenizer,
    builder: ContextBuilder,
    now: dt.datetime | None,
) -> tuple[MemoryState, CompactionReport]:
    """Summarise the planned chunks and put the summary in their place."""
    given = summary_input(state, plan)
    if given is None:
        return state, _unchanged(plan, "nothing to compact", tok)
    try:
        text = summarizer(*given)
    except CompactionError:
        raise
    except Exception as exc:
        raise CompactionError(f"the summarizer failed: {type(exc).__name__}: {exc}") from exc
    return place_summary(state, plan, check_summary(text), tok, builder, now)


def _check_amount(name: str, value: object) -> float | int:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise CompactionError(
            f"{name} must be a fraction of the budget (a float in (0, 1]) or a token count "
            f"(an int), got {value!r}"
        )
    if isinstance(value, float) and not 0 < value <= 1:
        raise CompactionError(
            f"{name} as a fraction of the budget must be in (0, 1], got {value!r}"
        )
    if isinstance(value, int) and value < 0:
        raise CompactionError(f"{name} as a token count must be >= 0, got {value!r}")
    return value


@attrs.frozen
class CompactionPolicy:
    """When to compact, and how much to keep: check it after every append.

    ``trigger``: compaction is due when the state's chunks hold more than this;
    ``keep_recent``: the newest part kept as it is. Each is a fraction of the
    budget (a float in (0, 1]: ``trigger=0.8, keep_recent=0.3``, the defaults) or a
    token count (an int). Fractions need the budget: :meth:`apply` takes it, and a
    :class:`~memctx.policy.ContextPolicy` passes its own. When what must stay (the
    kept tail, the protected chunks and the previous summary) is over the trigger by
    itself, compacting cannot help: the policy says so in the report's ``reason`` and
    leaves the state alone, instead of summarising again on every append.
    """

    trigger: float | int = 0.8
    keep_recent: float | int = 0.3

    def __attrs_post_init__(self) -> None:
        _check_amount("trigger", self.trigger)
        _check_amount("keep_recent", self.keep_recent)
        if type(self.trigger) is type(self.keep_recent) and self.keep_recent >= self.trigger:
            raise CompactionError(
                f"keep_recent ({self.keep_recent}) must be below trigger ({self.trigger}), "
                "or every compaction would be due again at once"
            )

    def tokens(self, budget: int | None) -> tuple[int, int]:
        """``(trigger, keep_recent)`` in tokens for ``budget`` (needed for fractions)."""
        if budget is not None and (
            isinstance(budget, bool) or not isinstance(budget, int) or budget < 1
        ):
            raise CompactionError(f"budget must be a token count (an int >= 1), got {budget!r}")
        if budget is None and (
            isinstance(self.trigger, float) or isinstance(self.keep_recent, float)
        ):
            raise CompactionError(
                f"trigger={self.trigger!r}, keep_recent={self.keep_recent!r}: a fraction needs "
                "the budget (apply(..., budget=N)), or give both in tokens (ints)"
            )
        trigger, keep = (
            int(v * budget) if isinstance(v, float) and budget is not None else int(v)
            for v in (self.trigger, self.keep_recent)
        )
        if keep >= trigger:
            raise CompactionError(
                f"keep_recent ({keep} tokens) must be below trigger ({trigger} tokens)"
            )
        return trigger, keep

    @property
    def params(self) -> dict[str, Any]:
        """The settings, as a store batch records them."""
        return {"trigger": self.trigger, "keep_recent": self.keep_recent}

    def apply(
        self,
        state: MemoryState,
        summarizer: Summarizer,
        *,
        budget: int | None = None,
        tokenizer: Tokenizer | None = None,
        builder: ContextBuilder | None = None,
        now: dt.datetime | None = None,
    ) -> tuple[MemoryState, CompactionReport]:
        """Compact ``state`` if it is due; otherwise return it with a report saying why not."""
        _check_arguments(state, summarizer, tokenizer, builder, now)
        trigger, keep = self.tokens(budget)
        builder = builder if builder is not None else default_builder()
        tok = tokenizer if tokenizer is not None else builder.tokenizer
        chunks = state.chunks
        counts = chunk_tokens(counts_of(builder), state, tok)
        total = sum(counts)
        if total <= trigger:
            plan = CompactionPlan((), None, total, total)
            return state, _unchanged(plan, "under trigger", tok)
        plan = plan_compaction(chunks, keep, counts)
        previous_tokens = 0 if plan.previous is None else counts[plan.previous]
        if plan.must_keep_tokens + previous_tokens >= trigger:
            reason = (
                f"over the trigger ({total} > {trigger} tokens) but what must stay "
                f"is over it by itself ({plan.must_keep_tokens} tokens kept, "
                f"{previous_tokens} in the previous summary): not compacting"
            )
            return state, _unchanged(plan, reason, tok)
        return apply_plan(state, plan, counts, summarizer, tok, builder, now)
