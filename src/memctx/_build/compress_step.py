"""compress(): run compressors over a state, check each result, report per chunk."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

import attrs

from memctx._build.compress_report import (
    ChunkChange,
    CompressionReport,
    compressor_name,
    compressor_params,
)
from memctx._build.counts import TokenCounter, chunk_tokens
from memctx._chunk import Chunk
from memctx._exceptions import CompressionError, MemctxError
from memctx._state import MemoryState
from memctx._units import history_shape, unit_role
from memctx.typing import Compressor, Tokenizer


def _check_step(before: MemoryState, after: object, name: str) -> MemoryState:
    """Check that ``after`` is a lawful compression of ``before``; raise otherwise."""
    if not isinstance(after, MemoryState):
        raise CompressionError(
            f"returned {type(after).__name__}, not a MemoryState", compressor=name
        )
    old = before.chunks
    old_position = {chunk.id: i for i, chunk in enumerate(old)}
    shape = history_shape(old)
    stands_for: dict[int, str] = {}  # old position -> id of the new chunk replacing it
    present: set[int] = set()
    last = -1
    for chunk in after.chunks:
        position = old_position.get(chunk.id)
        if position is not None:
            if chunk != old[position]:
                raise CompressionError(
                    f"changed chunk {chunk.id!r} but kept its id; a changed chunk needs a new id "
                    "and metadata.derived_from",
                    compressor=name,
                )
            present.add(position)
            first = position
        else:
            sources = chunk.metadata.derived_from
            if not sources:
                raise CompressionError(
                    f"added chunk {chunk.id!r}, which names no chunk it stands for "
                    "(metadata.derived_from)",
                    compressor=name,
                )
            positions = []
            for source in sources:
                if source not in old_position:
                    raise CompressionError(
                        f"chunk {chunk.id!r} stands for {source!r}, which is not in the state",
                        compressor=name,
                    )
                p = old_position[source]
                if p in stands_for:
                    raise CompressionError(
                        f"chunk {source!r} is replaced twice ({stands_for[p]!r}, {chunk.id!r})",
                        compressor=name,
                    )
                stands_for[p] = chunk.id
                positions.append(p)
            _check_unit_roles(old, shape.unit_of, positions, chunk, name)
            first = min(positions)
        if first <= last:
            raise CompressionError(f"moved chunk {chunk.id!r} out of order", compressor=name)
        last = first
    for position in stands_for:
        if position in present:
            raise CompressionError(
                f"kept chunk {old[position].id!r} and also replaced it", compressor=name
            )
    for position in shape.protected:
        if position not in present:
            raise CompressionError(
                f"dropped or changed the protected chunk {old[position].id!r} (SYSTEM, pinned, "
                "or part of a call still waiting for its result)",
                compressor=name,
            )
    for key, members in shape.members.items():
        gone = [p for p in members if p not in present and p not in stands_for]
        if gone and len(gone) != len(members):
            raise CompressionError(
                f"split the unit {key[0]} {key[1]!r}: dropped {old[gone[0]].id!r} but not all "
                "of its members",
                compressor=name,
            )
    return after


def _check_unit_roles(
    old: Sequence[Chunk],
    unit_of: dict[int, Any],
    positions: list[int],
    new: Chunk,
    name: str,
) -> None:
    """A replacement keeps its chunk's place in its unit, or stands for whole units only."""
    in_units = [p for p in positions if p in unit_of]
    if not in_units:
        return
    if len(positions) == 1 and unit_role(new) == unit_role(old[positions[0]]):
        return
    if unit_role(new) is None:
        covered = set(positions)
        for p in in_units:
            key = unit_of[p]
            members = [q for q, k in unit_of.items() if k == key]
            if not covered.issuperset(members):
                break
        else:
            return
    raise CompressionError(
        f"chunk {new.id!r} changes the unit of {old[in_units[0]].id!r}: keep its call_id or "
        "subagent_id, or stand for the whole unit",
        compressor=name,
    )


def _with_origins(chunk: Chunk, origins: tuple[str, ...]) -> Chunk:
    if chunk.metadata.derived_from == origins:
        return chunk
    return attrs.evolve(chunk, metadata=attrs.evolve(chunk.metadata, derived_from=origins))


def apply_compressors(
    state: MemoryState,
    compressors: Iterable[Compressor],
    *,
    tokenizer: Tokenizer,
    counter: TokenCounter,
) -> tuple[MemoryState, CompressionReport]:
    """Run ``compressors`` over ``state`` in order; return the new state and a report.

    Each compressor's result is checked (see :class:`~memctx.typing.Compressor`).
    A chunk replaced twice (cut, then trimmed) ends up as one chunk whose
    ``derived_from`` names the original. Tokens are counted with
    ``tokenizer`` over each chunk's rendering by ``counter`` (a builder).
    """
    if not isinstance(state, MemoryState):
        raise CompressionError(f"state must be a MemoryState, got {type(state).__name__}")
    if isinstance(compressors, str) or not isinstance(compressors, Iterable):
        raise CompressionError(f"compressors must be a list, got {compressors!r}")
    steps = list(compressors)
    for step in steps:
        if not callable(step):
            raise CompressionError(f"{step!r} is not a compressor (a callable state -> state)")
    # Every chunk of the current state -> the input chunks it stands for.
    origins: dict[str, tuple[str, ...]] = {chunk.id: (chunk.id,) for chunk in state}
    touched: dict[str, list[str]] = {chunk.id: [] for chunk in state}
    current = state
    for step in steps:
        name = compressor_name(step)
        try:
            given = step(current)
        except MemctxError:
            raise
        except Exception as exc:
            raise CompressionError(f"{name} failed: {type(exc).__name__}: {exc}") from exc
        after = _check_step(current, given, name)
        if after is current:
            continue
        kept_ids = set(after.ids)
        for chunk in current:
            if chunk.id not in kept_ids:
                for origin in origins[chunk.id]:
                    touched[origin].append(name)
        rebuilt = []
        for chunk in after:
            if chunk.id not in origins:
                sources = chunk.metadata.derived_from or ()
                merged = tuple(o for source in sources for o in origins[source])
                chunk = _with_origins(chunk, merged)
                origins[chunk.id] = merged
            rebuilt.append(chunk)
        current = MemoryState(rebuilt, thread_id=state.thread_id)
    replacement: dict[str, Chunk] = {}
    for chunk in current:
        if chunk.id not in touched:
            for origin in origins[chunk.id]:
                replacement[origin] = chunk
    if not any(touched.values()):
        current = state
    counts_before = chunk_tokens(counter, state, tokenizer)
    if current is not state:
        # A chunk the compressors kept is the same object: its count is known (a rolling
        # rule applied before every request would otherwise count the whole state again).
        before = {id(chunk): (chunk, n) for chunk, n in zip(state, counts_before, strict=True)}
        known = {
            position: found[1]
            for position, chunk in enumerate(current)
            if (found := before.get(id(chunk))) is not None and found[0] is chunk
        }
        counter.seed_token_counts(current, tokenizer, known)
    counts_after = counts_before if current is state else chunk_tokens(counter, current, tokenizer)
    after_position = {chunk.id: i for i, chunk in enumerate(current)}
    changes = []
    for position, chunk in enumerate(state):
        if not touched[chunk.id]:
            continue
        new = replacement.get(chunk.id)
        changes.append(
            ChunkChange(
                chunk_id=chunk.id,
                action="dropped" if new is None else "replaced",
                by=tuple(dict.fromkeys(touched[chunk.id])),
                replacement_id=None if new is None else new.id,
                chars_before=len(chunk.text),
                chars_after=0 if new is None else len(new.text),
                tokens_before=counts_before[position],
                tokens_after=0 if new is None else counts_after[after_position[new.id]],
            )
        )
    report = CompressionReport(
        original_count=len(state),
        compressed_count=len(current),
        changes=tuple(changes),
        compressors=tuple(compressor_params(step) for step in steps),
        tokens_before=sum(counts_before),
        tokens_after=sum(counts_after),
        tokenizer=tokenizer.name,
    )
    return current, report
