"""The report stage: the result of a build, and why each left-out chunk was left out."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from operator import attrgetter

import attrs

from memctx._build.filter import Candidates
from memctx._build.group import Grouped
from memctx._build.options import BuildOptions
from memctx._chunk import ContextMessage
from memctx._render.prefix import (
    EncodingMemo,
    shared_messages,
    shared_prefix_tokens,
    shorter_by_whole_chunks,
)
from memctx._render.segments import RenderedChunk
from memctx._result import (
    ContextBuildResult,
    Exclusions,
    LeftOutFilter,
    ReportDict,
    StateRows,
)
from memctx._state import MemoryState
from memctx.typing import Tokenizer

_id_of = attrgetter("id")
_replaced_of = attrgetter("replaced")


def left_out_filter(candidates: Candidates) -> LeftOutFilter:
    """The filters of ``candidates`` as a value a result can hold."""
    only = candidates.only
    return LeftOutFilter(
        only=None if only is None else frozenset(candidates.items[p].id for p in only),
        excluded_types=candidates.excluded_types,
        include_system=candidates.include_system,
        include_environment=candidates.include_environment,
    )


def report(
    grouped: Grouped,
    *,
    state: MemoryState,
    candidates: Candidates,
    opts: BuildOptions,
    tokenizer: Tokenizer,
    exact: bool,
    measure: Callable[[Sequence[int]], list[int]],
    known: Callable[[int], int | None],
    rendered: Callable[[Sequence[int]], list[RenderedChunk]],
    previous: ContextBuildResult | None,
    prompt_tokens: int = 0,
    overheads: Mapping[str, int] | None = None,
    memo: EncodingMemo | None = None,
) -> ContextBuildResult:
    """The result of a build of ``state`` whose messages are ``grouped``.

    ``measure`` gives the tokens of positions (counting them), ``known`` a position's
    when it was counted before, ``rendered`` the renderings of positions; ``previous``
    is the last build of the same history with the same options, if any;
    ``prompt_tokens`` counts the system prompt's segment; ``memo`` encodes what the
    shared prefix needs encoded.
    """
    items = state.shared_history.items
    selection = grouped.selection
    included = sorted(selection.body + selection.system)
    included_chunks = tuple(map(items.__getitem__, included))
    included_ids = tuple(map(_id_of, included_chunks))
    excluded = selection.measured_excluded
    excluded_ids = [items[p].id for p in excluded]
    chunk_tokens = ReportDict(
        zip((*included_ids, *excluded_ids), measure((*included, *excluded)), strict=True)
    )
    # Left-out chunks report what this build knew of them when it returned.
    left_out_tokens = {chunk_id: chunk_tokens[chunk_id] for chunk_id in excluded_ids}
    for position in selection.refused:
        tokens = known(position)
        if tokens is not None:
            left_out_tokens[items[position].id] = tokens
    counts = list(map(_replaced_of, rendered(included)))
    replaced = (
        {chunk_id: n for chunk_id, n in zip(included_ids, counts, strict=True) if n}
        if any(counts)
        else {}
    )
    prefix_tokens = prefix_messages = 0
    if previous is not None:
        prefix_tokens, prefix_messages = shared_prefix(
            grouped.messages,
            previous.messages,
            tokenizer,
            None if grouped.recounted else chunk_tokens,
            prompt_tokens,
            total=_total(
                grouped.token_count,
                not grouped.recounted
                and opts.turn_options is None
                and opts.counted_tools == "text",
                tokenizer,
                overheads,
            ),
            overheads=overheads,
            memo=memo,
        )
    return ContextBuildResult(
        messages=grouped.messages,
        token_count=grouped.token_count,
        token_count_exact=exact,
        included_chunk_ids=included_ids,
        chunk_tokens=chunk_tokens,
        replaced_characters=replaced,
        tokenizer_name=tokenizer.name,
        strategy=opts.strategy,
        max_tokens=opts.max_tokens,
        reserve_tokens=opts.reserve_tokens,
        recounted=grouped.recounted,
        included_chunks=included_chunks,
        provider=opts.provider,
        tools_counted=opts.counted_tools,
        turn_options=opts.turn_options,
        exclusions=Exclusions(
            StateRows(state),
            frozenset(included),
            left_out_filter(candidates),
            ReportDict(left_out_tokens),
        ),
        prefix_tokens_shared=prefix_tokens,
        prefix_messages_shared=prefix_messages,
        state=state,
    )


def _total(
    token_count: int, counts_whole: bool, tokenizer: Tokenizer, overheads: Mapping[str, int] | None
) -> int | None:
    """``count_messages`` of the messages less the priming, when the build's count is exactly
    that (``counts_whole``: the chunks' counts add up and no adapter turn is counted in)."""
    if not counts_whole:
        return None
    known = overheads or {}
    return token_count - (known["priming"] if "priming" in known else tokenizer.count_messages([]))


def shared_prefix(
    messages: Sequence[ContextMessage],
    previous: Sequence[ContextMessage],
    tokenizer: Tokenizer,
    chunk_tokens: Mapping[str, int] | None,
    prompt_tokens: int,
    *,
    total: int | None = None,
    overheads: Mapping[str, int] | None = None,
    memo: EncodingMemo | None = None,
) -> tuple[int, int]:
    """The tokens and the whole messages a request shares with ``previous`` at its start;
    ``chunk_tokens`` are the segment counts of its chunks when they add up to its messages'."""

    def content_tokens(message: object) -> int | None:
        """A message's content tokens: its chunks' segment counts (and the system prompt's,
        which opens the system message)."""
        if chunk_tokens is None or not isinstance(message, ContextMessage):
            return None
        try:
            tokens = sum(map(chunk_tokens.__getitem__, message.chunk_ids))
        except KeyError:
            return None
        return tokens + prompt_tokens if message.role == "system" else tokens

    same = shared_messages(previous, messages)
    if total is not None and chunk_tokens is not None and overheads is not None:
        grown = _grown_at_end(messages, previous, same, chunk_tokens, total, overheads)
        if grown is not None:
            return grown, same
    tokens = shared_prefix_tokens(
        messages,
        previous,
        tokenizer,
        content_tokens,
        total_tokens=total,
        overheads=overheads,
        memo=memo,
        same=same,
    )
    return tokens, same


def _grown_at_end(
    messages: Sequence[ContextMessage],
    previous: Sequence[ContextMessage],
    same: int,
    chunk_tokens: Mapping[str, int],
    total: int,
    overheads: Mapping[str, int],
) -> int | None:
    """The shared tokens when the first message that differs is the previous one with
    chunks added at its end (an agent loop's growing last message), counted from the
    request's end: its total less the messages after that one, the added chunks and the
    token closing it. None when that is not the case or a count is missing."""
    if same >= len(messages) or same >= len(previous):
        return None
    grown, before = messages[same], previous[same]
    whole, role_tokens = overheads.get(grown.role), overheads.get(f"name:{grown.role}")
    if (
        grown.role != before.role
        or whole is None
        or role_tokens is None
        or shorter_by_whole_chunks(grown, before, grown.content, before.content) is not before
    ):
        return None
    try:
        tokens_of = chunk_tokens.__getitem__
        added = sum(map(tokens_of, grown.chunk_ids[len(before.chunk_ids) :]))
        after = 0
        for message in messages[same + 1 :]:
            overhead = overheads.get(message.role)
            if overhead is None or message.role == "system":
                return None
            after += overhead + sum(map(tokens_of, message.chunk_ids))
    except KeyError:
        return None
    header = role_tokens + max(0, whole - role_tokens - 1)  # all but the closing token
    return total - after - whole - added + header


def shared_with(
    result: ContextBuildResult,
    previous: ContextBuildResult,
    tokenizer: Tokenizer,
    prompt_tokens: int,
    overheads: Mapping[str, int] | None = None,
) -> ContextBuildResult:
    """``result`` reporting what its request shares with ``previous``'s (the last build of
    the same history with the same options); ``prompt_tokens`` counts the system prompt's
    segment."""
    whole = not result.recounted and result.turn_options is None and result.tools_counted == "text"
    tokens, messages = shared_prefix(
        result.messages,
        previous.messages,
        tokenizer,
        None if result.recounted else result.chunk_tokens,
        prompt_tokens,
        total=_total(result.token_count, whole, tokenizer, overheads),
        overheads=overheads,
    )
    return attrs.evolve(result, prefix_tokens_shared=tokens, prefix_messages_shared=messages)
