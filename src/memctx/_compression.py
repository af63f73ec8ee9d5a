"""compress(): run compressors over a state, check each result, report per chunk."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Literal

import attrs

from memctx._builder import ContextBuilder
from memctx._chunk import Chunk
from memctx._chunk_tokens import chunk_tokens
from memctx._exceptions import CompressionError
from memctx._history_shape import history_shape
from memctx._json import thaw_json
from memctx._state import MemoryState
from memctx._units import unit_role
from memctx.typing import Compressor, Tokenizer


@attrs.frozen
class ChunkChange:
    """What compression did to one chunk of the input.

    ``action`` is ``"replaced"`` (by ``replacement_id``, a chunk whose
    ``metadata.derived_from`` names this one) or ``"dropped"``; ``by`` names
    the compressors that acted on it, in order. ``*_after`` is 0 for a
    dropped chunk; tokens are the chunk's rendered XML as the builder counts it.
    """

    chunk_id: str
    action: Literal["replaced", "dropped"]
    by: tuple[str, ...]
    replacement_id: str | None
    chars_before: int
    chars_after: int
    tokens_before: int
    tokens_after: int

    def to_dict(self) -> dict[str, Any]:
        """This change as plain JSON."""
        return {
            "chunk_id": self.chunk_id,
            "action": self.action,
            "by": list(self.by),
            "replacement_id": self.replacement_id,
            "chars_before": self.chars_before,
            "chars_after": self.chars_after,
            "tokens_before": self.tokens_before,
            "tokens_after": self.tokens_after,
        }


@attrs.frozen
class CompressionReport:
    """What :func:`compress` changed: one :class:`ChunkChange` per changed input chunk.

    ``compressors`` describes each compressor run (its ``params`` when it
    has them, else its class name). Chunks not in ``changes`` were kept as
    they were.
    """

    original_count: int
    compressed_count: int
    changes: tuple[ChunkChange, ...]
    compressors: tuple[dict[str, Any], ...]
    tokens_before: int
    tokens_after: int
    tokenizer: str

    @property
    def changed(self) -> bool:
        """Whether anything was cut or dropped."""
        return bool(self.changes)

    @property
    def dropped_ids(self) -> tuple[str, ...]:
        return tuple(c.chunk_id for c in self.changes if c.action == "dropped")

    @property
    def replaced_ids(self) -> dict[str, str]:
        """Each replaced input chunk id and the id of the chunk that stands for it."""
        return {c.chunk_id: c.replacement_id for c in self.changes if c.replacement_id is not None}

    def _setting(self, name: str) -> int | None:
        for params in self.compressors:
            if params.get("name") == name:
                value = params.get("n")
                return value if isinstance(value, int) else None
        return None

    def to_event(self) -> dict[str, Any]:
        """The payload of a ``context.compressed`` event (plain JSON)."""
        return {
            "original_count": self.original_count,
            "compressed_count": self.compressed_count,
            "max_messages": self._setting("MaxChunks"),
            "max_chars_per_message": self._setting("MaxChars"),
            "compressors": [dict(p) for p in self.compressors],
            "tokenizer": self.tokenizer,
            "tokens_before": self.tokens_before,
            "tokens_after": self.tokens_after,
            "dropped": len(self.dropped_ids),
            "replaced": len(self.replaced_ids),
            "changes": [c.to_dict() for c in self.changes],
        }

    @classmethod
    def from_event(cls, payload: Mapping[str, Any]) -> CompressionReport:
        """The report a ``context.compressed`` event was made from (see :meth:`to_event`)."""
        try:
            changes = tuple(
                ChunkChange(
                    chunk_id=str(c["chunk_id"]),
                    action=c["action"],
                    by=tuple(c["by"]),
                    replacement_id=c["replacement_id"],
                    chars_before=int(c["chars_before"]),
                    chars_after=int(c["chars_after"]),
                    tokens_before=int(c["tokens_before"]),
                    tokens_after=int(c["tokens_after"]),
                )
                for c in payload["changes"]
            )
            return cls(
                original_count=int(payload["original_count"]),
                compressed_count=int(payload["compressed_count"]),
                changes=changes,
                compressors=tuple(dict(thaw_json(p)) for p in payload["compressors"]),
                tokens_before=int(payload["tokens_before"]),
                tokens_after=int(payload["tokens_after"]),
                tokenizer=str(payload["tokenizer"]),
            )
        except (KeyError, TypeError, ValueError) as exc:
            raise CompressionError(f"not a context.compressed payload: {exc!r}") from None

    def summary(self) -> str:
        """A few readable lines: counts, tokens saved, then one line per changed chunk."""
        lines = [
            f"{self.original_count} chunks -> {self.compressed_count}; "
            f"{len(self.replaced_ids)} replaced, {len(self.dropped_ids)} dropped; "
            f"{self.tokens_before} -> {self.tokens_after} tokens ({self.tokenizer})"
        ]
        for c in self.changes:
            target = f" -> {c.replacement_id}" if c.replacement_id else ""
            lines.append(
                f"  {c.action:<8} {c.chunk_id}{target}  {c.chars_before} -> {c.chars_after} "
                f"chars, {c.tokens_before} -> {c.tokens_after} tokens  by {', '.join(c.by)}"
            )
        return "\n".join(lines)


def compressor_name(compressor: object) -> str:
    params = getattr(compressor, "params", None)
    if isinstance(params, dict) and isinstance(params.get("name"), str):
        return str(params["name"])
    return getattr(compressor, "__name__", None) or type(compressor).__name__


def compressor_params(compressor: object) -> dict[str, Any]:
    params = getattr(compressor, "params", None)
    if isinstance(params, dict):
        return dict(params)
    return {"name": compressor_name(compressor)}


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


def compress(
    state: MemoryState,
    compressors: Iterable[Compressor],
    *,
    tokenizer: Tokenizer | None = None,
    builder: ContextBuilder | None = None,
) -> tuple[MemoryState, CompressionReport]:
    """Run ``compressors`` over ``state`` in order; return the new state and a report.

    Each compressor's result is checked (see :class:`~memctx.typing.Compressor`).
    A chunk replaced twice (cut, then trimmed) ends up as one chunk whose
    ``derived_from`` names the original. Tokens are counted with
    ``tokenizer`` (the builder's by default) over each chunk's rendering by
    ``builder`` (a default builder when not given).
    """
    if not isinstance(state, MemoryState):
        raise CompressionError(f"state must be a MemoryState, got {type(state).__name__}")
    if isinstance(compressors, str) or not isinstance(compressors, Iterable):
        raise CompressionError(f"compressors must be a list, got {compressors!r}")
    steps = list(compressors)
    for step in steps:
        if not callable(step):
            raise CompressionError(f"{step!r} is not a compressor (a callable state -> state)")
    if builder is None:
        builder = default_builder()
    tok = tokenizer if tokenizer is not None else builder.tokenizer
    # Every chunk of the current state -> the input chunks it stands for.
    origins: dict[str, tuple[str, ...]] = {chunk.id: (chunk.id,) for chunk in state}
    touched: dict[str, list[str]] = {chunk.id: [] for chunk in state}
    current = state
    for step in steps:
        name = compressor_name(step)
        after = _check_step(current, step(current), name)
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
    counts_before = chunk_tokens(builder, state, tok)
    counts_after = counts_before if current is state else chunk_tokens(builder, current, tok)
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
        tokenizer=tok.name,
    )
    return current, report


_DEFAULT: list[ContextBuilder] = []


def default_builder() -> ContextBuilder:
    """A builder with the installed renderers, made once per process (renderers are values)."""
    if not _DEFAULT:
        from memctx._builder import create_builder

        _DEFAULT.append(create_builder())
    return _DEFAULT[0]
