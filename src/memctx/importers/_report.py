"""What an import reports besides its chunks, and the task pin every importer applies."""

from __future__ import annotations

from collections.abc import Sequence

import attrs

from memctx._chunk import Chunk, ChunkType
from memctx._exceptions import ArgumentError

UNKNOWN_ROLES = ("keep", "error")


@attrs.frozen
class ImportReport:
    """What an import did besides producing chunks."""

    unknown_roles: tuple[tuple[int, str], ...] = ()
    """``(message index, role)`` of each message whose role the format does not define;
    kept as a ``CUSTOM`` chunk."""
    unanswered_calls: tuple[str, ...] = ()
    """``call_id``s of tool calls that no result answered (imported as ``pending``)."""
    unknown_blocks: tuple[tuple[int, str], ...] = ()
    """``(message index, block type)`` of content blocks memctx has no chunk for;
    kept as ``CUSTOM`` chunks holding the block's JSON."""


def first_user_pinned(chunks: Sequence[Chunk]) -> list[Chunk]:
    """``chunks`` with the first user message pinned (the task of the conversation)."""
    out = list(chunks)
    for position, chunk in enumerate(out):
        if chunk.type is ChunkType.AGENT and chunk.role == "user" and chunk.action is None:
            if not chunk.pinned:
                metadata = attrs.evolve(chunk.metadata, pinned=True)
                out[position] = attrs.evolve(chunk, metadata=metadata)
            break
    return out


def check_options(pin_task: object, unknown_roles: object = "keep") -> None:
    """The options every importer takes, checked before anything is read."""
    if not isinstance(pin_task, bool):
        raise ArgumentError(f"must be True or False, got {pin_task!r}", argument="pin_task")
    if unknown_roles not in UNKNOWN_ROLES or not isinstance(unknown_roles, str):
        raise ArgumentError(
            f"must be 'keep' or 'error', got {unknown_roles!r}", argument="unknown_roles"
        )
