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
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

import attrs

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
    chunks: Sequence[Chunk], keep_recent_tokens: int, counts: Sequence[int]
) -> CompactionPlan:
    """Choose what a compaction covers (see the module's docstring)."""
    n = len(chunks)
    tail_start = n
    tail_tokens = 0
    while tail_start > 0 and (
        tail_start == n or tail_tokens + counts[tail_start - 1] <= keep_recent_tokens
    ):
        tail_start -= 1
        tail_tokens += counts[tail_start]
    shape = history_shape(chunks)
    covered = []
    for position in range(tail_start):
        if position in shape.protected:
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
    counts = chunk_tokens(builder, state, tok)
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
    chunks = state.chunks
    covered = plan.covered
    if not covered or covered == (plan.previous,):
        return state, _unchanged(plan, "nothing to compact", tok)
    previous = None if plan.previous is None else chunks[plan.previous]
    to_summarise = [chunks[i] for i in covered if i != plan.previous]
    try:
        text = summarizer(to_summarise, None if previous is None else previous.text)
    except CompactionError:
        raise
    except Exception as exc:
        raise CompactionError(f"the summarizer failed: {type(exc).__name__}: {exc}") from exc
    if not isinstance(text, str) or not text.strip():
        raise CompactionError(f"the summarizer must return non-empty text, got {text!r}")
    original_count = len(to_summarise)
    if previous is not None:
        original_count += previous.metadata.original_count or 1
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
    summary_tokens = builder.tokens(summary, tok)
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


@attrs.frozen
class CompactionPolicy:
    """When to compact: check it after every append, tool results included.

    Due when the state's chunks hold more than ``trigger_tokens``; then the
    compaction keeps the newest ``keep_recent_tokens``. When what must stay
    (the kept tail, the protected chunks and the previous summary) is over
    the trigger by itself, compacting cannot help: the policy says so in
    the report's ``reason`` and leaves the state alone, instead of
    summarising again on every append.
    """

    trigger_tokens: int
    keep_recent_tokens: int

    def __attrs_post_init__(self) -> None:
        _check_tokens("trigger_tokens", self.trigger_tokens)
        _check_tokens("keep_recent_tokens", self.keep_recent_tokens)
        if self.keep_recent_tokens >= self.trigger_tokens:
            raise CompactionError(
                f"keep_recent_tokens ({self.keep_recent_tokens}) must be below trigger_tokens "
                f"({self.trigger_tokens}), or every compaction would be due again at once"
            )

    def apply(
        self,
        state: MemoryState,
        summarizer: Summarizer,
        *,
        tokenizer: Tokenizer | None = None,
        builder: ContextBuilder | None = None,
        now: dt.datetime | None = None,
    ) -> tuple[MemoryState, CompactionReport]:
        """Compact ``state`` if it is due; otherwise return it with a report saying why not."""
        _check_arguments(state, summarizer, tokenizer, builder, now)
        builder = builder if builder is not None else default_builder()
        tok = tokenizer if tokenizer is not None else builder.tokenizer
        chunks = state.chunks
        counts = chunk_tokens(builder, state, tok)
        total = sum(counts)
        if total <= self.trigger_tokens:
            plan = CompactionPlan((), None, total, total)
            return state, _unchanged(plan, "under trigger", tok)
        plan = plan_compaction(chunks, self.keep_recent_tokens, counts)
        previous_tokens = 0 if plan.previous is None else counts[plan.previous]
        if plan.must_keep_tokens + previous_tokens >= self.trigger_tokens:
            reason = (
                f"over the trigger ({total} > {self.trigger_tokens} tokens) but what must stay "
                f"is over it by itself ({plan.must_keep_tokens} tokens kept, "
                f"{previous_tokens} in the previous summary): not compacting"
            )
            return state, _unchanged(plan, reason, tok)
        return apply_plan(state, plan, counts, summarizer, tok, builder, now)
