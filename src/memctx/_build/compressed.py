"""Builds with compression: compressors before the budget, cheaper renditions to fit it.

``compressors`` are applied to the state first; the build is then an
ordinary build of the compressed state (exact, within the budget).
``compress_to_fit`` is used only when that build would leave chunks out for
the budget: the chunks it would shorten are replaced by their shorter
rendition, oldest first, as few as needed for nothing to be left out (or
all of them, when even that is not enough); each choice is in the result's
``compression`` report, and the build is again an ordinary, exact build.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any

import attrs

from memctx._chunk import Chunk
from memctx._build.counts import TokenCounter
from memctx._build.compress_step import apply_compressors
from memctx._build.compress_report import compressor_name
from memctx._exceptions import BudgetExceededError, BuildOptionError
from memctx._build.options import BuildOptions
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


def _tokenizer(builder: ContextBuilder, options: Mapping[str, Any]) -> Tokenizer:
    given = options.get("options")
    found = given.tokenizer if isinstance(given, BuildOptions) else options.get("tokenizer")
    return found if found is not None else builder.tokenizer


def _fits(result: ContextBuildResult) -> bool:
    return not result.excluded_for(ExclusionReason.OVER_BUDGET)


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
    tokenizer = _tokenizer(builder, options)
    base, report = apply_compressors(state, steps, tokenizer=tokenizer, counter=counter)
    if compress_to_fit is None:
        return attrs.evolve(builder.build(base, max_tokens, **options), compression=report)
    try:
        result: ContextBuildResult | None = builder.build(base, max_tokens, **options)
    except BudgetExceededError:
        result = None  # what must be kept does not fit whole: maybe its renditions do
    if result is not None and _fits(result):
        return attrs.evolve(result, compression=report)
    candidates = _candidates(base, compress_to_fit, tokenizer, counter)
    if not candidates:
        if result is None:
            return builder.build(base, max_tokens, **options)  # raises BudgetExceededError
        return attrs.evolve(result, compression=report)
    chosen = _fewest_that_fit(builder, base, candidates, max_tokens, options)
    final, report = apply_compressors(
        state,
        [*steps, _OnlyFor(compress_to_fit, frozenset(c.id for c, _ in chosen))],
        tokenizer=tokenizer,
        counter=counter,
    )
    return attrs.evolve(builder.build(final, max_tokens, **options), compression=report)


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


def _fewest_that_fit(
    builder: ContextBuilder,
    base: MemoryState,
    candidates: list[tuple[Chunk, Chunk]],
    max_tokens: int | None,
    options: dict[str, Any],
) -> list[tuple[Chunk, Chunk]]:
    """The oldest candidates, as few as leave nothing out for the budget (else all of them)."""

    def fits(count: int) -> bool:
        try:
            return _fits(builder.build(_with(base, candidates[:count]), max_tokens, **options))
        except BudgetExceededError:
            return False

    low, high = 0, len(candidates)  # fits(low) is false; the answer is in (low, high]
    if not fits(high):
        return candidates
    while high - low > 1:
        middle = (low + high) // 2
        if fits(middle):
            high = middle
        else:
            low = middle
    return candidates[:high]
