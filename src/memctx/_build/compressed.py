"""Builds with compression: compressors before the budget, cheaper renditions to fit it.

``compressors`` are applied to the state first; the build is then an
ordinary build of the compressed state (exact, within the budget).
``compress_to_fit`` is used only when that build would leave chunks out for
the budget: the chunks it would shorten are replaced by their shorter
rendition, oldest first, as few as needed for nothing to be left out (or
all of them, when even that is not enough); each choice is in the result's
``compression`` report, and the build is again an ordinary, exact build.

Chunk ids in the options name the chunks of the state given: the chunks
``pinned_chunk_ids`` names are kept unchanged by every compressor (as chunks
pinned by their metadata are), and ``include_only_chunk_ids`` follows each
chunk to the chunk that stands for it (``derived_from``); a dropped one is
gone from the compressed state, and the report says so.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import TYPE_CHECKING, Any

import attrs

from memctx._build.compress_report import CompressionReport, compressor_name
from memctx._build.compress_step import apply_compressors
from memctx._build.counts import TokenCounter
from memctx._build.options import parse_build_options
from memctx._chunk import Chunk
from memctx._exceptions import BudgetExceededError, BuildOptionError
from memctx._result import ContextBuildResult, ExclusionReason
from memctx._state import MemoryState
from memctx.typing import Compressor, Tokenizer

if TYPE_CHECKING:
    from memctx._build.builder import ContextBuilder


@attrs.frozen
class _OnlyFor:
    """``compressor``, but replacing only the chunks ``ids`` (one chunk for one)."""

    compressor: Compressor
    ids: frozenset[str]

    @property
    def params(self) -> dict[str, Any]:
        return {"name": f"{compressor_name(self.compressor)} (to fit the budget)"}

    def __call__(self, state: MemoryState) -> MemoryState:
        replacement: dict[str, Chunk] = {}
        for chunk in self.compressor(state):
            sources = chunk.metadata.derived_from
            if sources and len(sources) == 1 and sources[0] in self.ids and chunk.id not in state:
                replacement[sources[0]] = chunk
        if not replacement:
            return state
        return MemoryState((replacement.get(c.id, c) for c in state), thread_id=state.thread_id)


def _fits(result: ContextBuildResult) -> bool:
    return not result.excluded_for(ExclusionReason.OVER_BUDGET)


@attrs.frozen
class _Pins:
    """The chunks pinned by the option, marked pinned while compressors run, then restored."""

    originals: Mapping[str, Chunk]

    @classmethod
    def of(cls, state: MemoryState, ids: Iterable[str]) -> _Pins:
        wanted = set(ids)
        return cls({c.id: c for c in state if c.id in wanted and not c.metadata.pinned})

    def mark(self, state: MemoryState) -> MemoryState:
        if not self.originals:
            return state
        return MemoryState(
            (
                attrs.evolve(c, metadata=attrs.evolve(c.metadata, pinned=True))
                if c.id in self.originals
                else c
                for c in state
            ),
            thread_id=state.thread_id,
        )

    def restore(self, state: MemoryState) -> MemoryState:
        if not self.originals:
            return state
        return MemoryState((self.originals.get(c.id, c) for c in state), thread_id=state.thread_id)


def _follow(
    ids: tuple[str, ...] | None, replaced: Mapping[str, str], dropped: frozenset[str]
) -> tuple[str, ...] | None:
    """``ids`` of the input, each as the id of the chunk that stands for it now."""
    if ids is None or not (replaced or dropped):
        return ids
    found = []
    for chunk_id in ids:
        if chunk_id in dropped:
            continue
        while chunk_id in replaced:  # an input chunk, cut, then given a cheaper rendition
            chunk_id = replaced[chunk_id]
        found.append(chunk_id)
    return tuple(dict.fromkeys(found))


def build_compressed(
    builder: ContextBuilder,
    counter: TokenCounter,
    state: MemoryState,
    max_tokens: int | None,
    options: dict[str, Any],
    compressors: Iterable[Compressor] | None,
    compress_to_fit: Compressor | None,
) -> ContextBuildResult:
    """Build ``state`` compressed (see the module's docstring); ``counter`` counts chunks."""
    if compressors is None:
        steps: list[Compressor] = []
    elif isinstance(compressors, str) or not isinstance(compressors, Iterable):
        raise BuildOptionError("compressors", f"must be a list of compressors, got {compressors!r}")
    else:
        steps = list(compressors)
    if compress_to_fit is not None and not callable(compress_to_fit):
        raise BuildOptionError(
            "compress_to_fit", f"must be a compressor (state -> state), got {compress_to_fit!r}"
        )
    opts = parse_build_options(max_tokens, options)
    if not isinstance(state, MemoryState):
        raise BuildOptionError("state", f"must be a MemoryState, got {type(state).__name__}")
    tokenizer = opts.tokenizer if opts.tokenizer is not None else builder.tokenizer
    pins = _Pins.of(state, opts.pinned_chunk_ids)
    marked = pins.mark(state)

    def build(
        compressed: MemoryState, report: CompressionReport, also: Mapping[str, str] | None = None
    ) -> ContextBuildResult:
        replaced = {**report.replaced_ids, **(also or {})}
        only = _follow(opts.include_only_chunk_ids, replaced, frozenset(report.dropped_ids))
        final = attrs.evolve(opts, include_only_chunk_ids=only)
        return builder.build(pins.restore(compressed), options=final)

    base, report = apply_compressors(marked, steps, tokenizer=tokenizer, counter=counter)
    if compress_to_fit is None:
        return attrs.evolve(build(base, report), compression=report)
    try:
        result: ContextBuildResult | None = build(base, report)
    except BudgetExceededError:
        result = None  # what must be kept does not fit whole: maybe its renditions do
    if result is not None and _fits(result):
        return attrs.evolve(result, compression=report)
    candidates = _candidates(base, compress_to_fit, tokenizer, counter)
    if not candidates:
        if result is None:
            return build(base, report)  # raises BudgetExceededError
        return attrs.evolve(result, compression=report)

    def with_renditions(count: int) -> ContextBuildResult:
        chosen = candidates[:count]
        return build(_with(base, chosen), report, {c.id: r.id for c, r in chosen})

    count = _fewest_that_fit(with_renditions, len(candidates))
    final, report = apply_compressors(
        marked,
        [*steps, _OnlyFor(compress_to_fit, frozenset(c.id for c, _ in candidates[:count]))],
        tokenizer=tokenizer,
        counter=counter,
    )
    return attrs.evolve(build(final, report), compression=report)


def _candidates(
    base: MemoryState, compressor: Compressor, tokenizer: Tokenizer, counter: TokenCounter
) -> list[tuple[Chunk, Chunk]]:
    """``(chunk, cheaper rendition)`` for each chunk ``compressor`` shortens, oldest first."""
    renditions, report = apply_compressors(base, [compressor], tokenizer=tokenizer, counter=counter)
    by_id = {chunk.id: chunk for chunk in renditions}
    found = []
    for change in report.changes:
        if change.replacement_id is None or change.tokens_after >= change.tokens_before:
            continue
        rendition = by_id[change.replacement_id]
        if rendition.metadata.derived_from == (change.chunk_id,):
            found.append((base.get(change.chunk_id), rendition))
    return found


def _with(base: MemoryState, chosen: list[tuple[Chunk, Chunk]]) -> MemoryState:
    replacement = {chunk.id: rendition for chunk, rendition in chosen}
    return MemoryState((replacement.get(c.id, c) for c in base), thread_id=base.thread_id)


def _fewest_that_fit(build: Callable[[int], ContextBuildResult], candidates: int) -> int:
    """How many of the oldest candidates leave nothing out for the budget (else all)."""

    def fits(count: int) -> bool:
        try:
            return _fits(build(count))
        except BudgetExceededError:
            return False

    low, high = 0, candidates  # fits(low) is false; the answer is in (low, high]
    if not fits(high):
        return candidates
    while high - low > 1:
        middle = (low + high) // 2
        if fits(middle):
            high = middle
        else:
            low = middle
    return high
