"""The report of a compression: what was done to each chunk, and its event payload."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal

import attrs

from memctx._exceptions import CompressionError
from memctx._json import thaw_json


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
