"""Checks shared by the compression and compaction tests: what must survive either."""

from __future__ import annotations

from memctx import BudgetExceededError, Chunk, MemoryState, create_builder
from memctx._render.tokens import Tokenizer
from memctx._units import history_shape, unit_role
from memctx.compaction import is_compaction_summary


def fates(before: MemoryState, after: MemoryState) -> dict[str, list[str]]:
    """For each chunk of ``before``: the ids of ``after`` that keep or stand for it."""
    found: dict[str, list[str]] = {chunk.id: [] for chunk in before}
    for chunk in after:
        if chunk.id in found:
            found[chunk.id].append(chunk.id)
        elif chunk.metadata.derived_from:
            for source in chunk.metadata.derived_from:
                if source in found:
                    found[source].append(chunk.id)
    return found


def assert_lawful(before: MemoryState, after: MemoryState, dropped: set[str]) -> None:
    """Every chunk kept, replaced by one naming it, or (for ``dropped``) gone — exactly once;
    protected chunks kept unchanged; no unit split; the calls still waiting still wait."""
    by_id = {chunk.id: chunk for chunk in after}
    outcome = fates(before, after)
    for chunk_id, holders in outcome.items():
        if chunk_id in dropped:
            assert holders == [], chunk_id
        else:
            assert len(holders) == 1, (chunk_id, holders)
    shape = history_shape(before.chunks)
    for position in shape.protected:
        chunk = before[position]
        assert by_id.get(chunk.id) == chunk, chunk.id
    for members in shape.members.values():
        kept = [outcome[before[p].id] for p in members]
        present = [h for h in kept if h]
        assert not present or len(present) == len(kept), [before[p].id for p in members]
        for p, holders in zip(members, kept, strict=True):
            for holder in holders:
                replacement = by_id[holder]
                if not is_compaction_summary(replacement):
                    assert unit_role(replacement) == unit_role(before[p])
    waiting_before = {before[p].id for p in shape.pending}
    after_shape = history_shape(after.chunks)
    assert {after[p].id for p in after_shape.pending} == waiting_before
    # Order: a replacement sits where what it stands for sat (a summary: the newest of it).
    position = {chunk.id: i for i, chunk in enumerate(before)}
    places = []
    for c in after:
        if c.id in position:
            places.append(position[c.id])
        else:
            sources = [position[s] for s in c.metadata.derived_from or ()]
            places.append(max(sources) if is_compaction_summary(c) else min(sources))
    assert places == sorted(places)


def assert_builds_within(state: MemoryState, tokenizer: Tokenizer, max_tokens: int) -> None:
    """A build of ``state`` is exact and within ``max_tokens``, or the pins do not fit."""
    builder = create_builder()
    try:
        result = builder.build(state, max_tokens=max_tokens, tokenizer=tokenizer)
    except BudgetExceededError as exc:
        failure = exc
    else:
        failure = None
    if failure is not None:
        assert failure.needed > failure.available
        return
    assert result.token_count <= max_tokens
    assert result.token_count == tokenizer.count_messages(result.messages)
    assert set(result.included_chunk_ids) | set(result.excluded_chunk_ids) == set(state.ids)


def covered(chunk: Chunk) -> tuple[str, ...]:
    return chunk.metadata.derived_from or ()
