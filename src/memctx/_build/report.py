"""The report stage: the result of a build, and why each left-out chunk was left out."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

import attrs

from memctx._chunk import Chunk
from memctx._build.filter import Candidates
from memctx._build.group import Grouped
from memctx._chunk import ContextMessage
from memctx._build.options import BuildOptions
from memctx._render.prefix import shared_messages, shared_prefix_tokens
from memctx._result import ContextBuildResult, Exclusion, ExclusionReason, ReportDict
from memctx._render.segments import RenderedChunk
from memctx.typing import Tokenizer


class ExclusionReport:
    """Works out, when first asked, why each left-out chunk was left out.

    It reads only what is fixed when the build returns: the state's chunks
    (the first ``length`` items of a shared history never change), the
    filters, the included positions and the token counts this build
    measured. So the answer is the same whenever it is asked.
    """

    __slots__ = ("_candidates", "_included", "_tokens")

    def __init__(
        self, candidates: Candidates, included: frozenset[int], tokens: Mapping[str, int]
    ) -> None:
        self._candidates = candidates
        self._included = included
        self._tokens = tokens

    def __call__(self) -> tuple[tuple[str, ...], ReportDict]:
        candidates, included, tokens = self._candidates, self._included, self._tokens
        items = candidates.items
        excluded: list[str] = []
        exclusions: list[tuple[str, Exclusion]] = []
        for position in range(candidates.length):
            if position in included:
                continue
            chunk_id = items[position].id
            reason = candidates.reason(position) or ExclusionReason.OVER_BUDGET
            counted = tokens.get(chunk_id) if reason is ExclusionReason.OVER_BUDGET else None
            excluded.append(chunk_id)
            exclusions.append((chunk_id, Exclusion(chunk_id, reason, counted)))
        return tuple(excluded), ReportDict(exclusions)


def report(
    grouped: Grouped,
    items: Sequence[Chunk],
    candidates: Candidates,
    opts: BuildOptions,
    tokenizer_name: str,
    token_count_exact: bool,
    measure: Callable[[int], int],
    known: Callable[[int], int | None],
    rendered: Callable[[int], RenderedChunk],
    *,
    previous: ContextBuildResult | None,
    tokenizer: Tokenizer,
    prompt_tokens: int = 0,
) -> ContextBuildResult:
    """The result of a build whose messages are ``grouped``; ``previous`` is the last
    build of the same history with the same options, if any; ``prompt_tokens`` counts
    the system prompt's segment."""
    selection = grouped.selection
    included = sorted(selection.body + selection.system)
    included_chunks = tuple(items[p] for p in included)
    measured = [*included, *selection.measured_excluded]
    chunk_tokens = ReportDict([(items[p].id, measure(p)) for p in measured])  # made once
    # Left-out chunks report what this build knew of them when it returned.
    excluded_tokens = dict(chunk_tokens)
    for position in selection.refused:
        tokens = known(position)
        if tokens is not None:
            excluded_tokens[items[position].id] = tokens
    replaced = {}
    for position in included:
        count = rendered(position).replaced
        if count:
            replaced[items[position].id] = count
    shared = (
        None
        if previous is None
        else SharedPrefix(
            previous.messages,
            grouped.messages,
            tokenizer,
            None if grouped.recounted else chunk_tokens,
            prompt_tokens,
        )
    )
    return ContextBuildResult(
        messages=grouped.messages,
        token_count=grouped.token_count,
        token_count_exact=token_count_exact,
        included_chunk_ids=tuple(chunk.id for chunk in included_chunks),
        chunk_tokens=chunk_tokens,
        replaced_characters=replaced,
        tokenizer_name=tokenizer_name,
        strategy=opts.strategy,
        max_tokens=opts.max_tokens,
        reserve_tokens=opts.reserve_tokens,
        recounted=grouped.recounted,
        included_chunks=included_chunks,
        exclusions_source=ExclusionReport(candidates, frozenset(included), excluded_tokens),
        provider=opts.provider,
        tools_counted=opts.counted_tools,
        turn_options=opts.turn_options,
        prefix_source=shared,
        shared_messages_source=None if shared is None else shared.messages,
    )


def shared_with(
    result: ContextBuildResult,
    previous: ContextBuildResult,
    tokenizer: Tokenizer,
    prompt: str | None,
) -> ContextBuildResult:
    """``result`` reporting what its request shares with ``previous``'s (the last build of
    the same history with the same options); ``prompt`` is the system prompt's segment."""

    def tokens_shared() -> int:
        counts = None if result.recounted else result.chunk_tokens
        prompt_tokens = tokenizer.count(prompt) if prompt else 0
        return SharedPrefix(previous.messages, result.messages, tokenizer, counts, prompt_tokens)()

    return attrs.evolve(
        result,
        prefix_source=tokens_shared,
        shared_messages_source=lambda: shared_messages(previous.messages, result.messages),
    )


class SharedPrefix:
    """Works out, when first asked, how many leading tokens two builds' requests share."""

    __slots__ = ("_chunk_tokens", "_messages", "_previous", "_prompt_tokens", "_tokenizer")

    def __init__(
        self,
        previous: Sequence[ContextMessage],
        messages: Sequence[ContextMessage],
        tokenizer: Tokenizer,
        chunk_tokens: Mapping[str, int] | None,
        prompt_tokens: int = 0,
    ) -> None:
        self._previous = previous
        self._messages = messages
        self._tokenizer = tokenizer
        # Segment counts of this build's chunks when they add up to their messages'.
        self._chunk_tokens = chunk_tokens
        self._prompt_tokens = prompt_tokens

    def __call__(self) -> int:
        return shared_prefix_tokens(
            self._messages, self._previous, self._tokenizer, self._content_tokens
        )

    def _content_tokens(self, message: object) -> int | None:
        """A message's content tokens: the sum of its chunks' segment counts (and of the
        system prompt's, which opens the system message)."""
        counts = self._chunk_tokens
        if counts is None or not isinstance(message, ContextMessage):
            return None
        try:
            tokens = sum(counts[chunk_id] for chunk_id in message.chunk_ids)
        except KeyError:
            return None
        return tokens + self._prompt_tokens if message.role == "system" else tokens

    def messages(self) -> int:
        """How many leading messages the two builds share whole."""
        return shared_messages(self._previous, self._messages)
