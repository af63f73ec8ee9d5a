"""What every chunk constructor shares: the checks of its arguments, and :func:`make`."""

from __future__ import annotations

import datetime as _dt
from collections.abc import Mapping
from typing import Any

from memctx._chunk import Chunk, ChunkMetadata, ChunkType, Role, new_chunk_id
from memctx._exceptions import InvalidChunkError
from memctx._validators import MAX_KIND_LENGTH, is_bool, is_str, non_empty_str

check_text = is_str(InvalidChunkError).check
check_name = non_empty_str(InvalidChunkError).check
"""A required name (tool, skill, sub-agent id, ...): a non-empty string."""
check_flag = is_bool(InvalidChunkError).check
check_kind = non_empty_str(InvalidChunkError, max_length=MAX_KIND_LENGTH).check


EPOCH = _dt.datetime(1970, 1, 1, tzinfo=_dt.UTC)


def make(
    type_: ChunkType,
    content: Any,
    *,
    id: str | None,
    priority: int,
    pinned: bool,
    custom: Mapping[str, Any] | None,
    created_at: _dt.datetime | None,
    role: Role | None = None,
    action: str | None = None,
    subtype: str | None = None,
    **metadata: Any,
) -> Chunk:
    meta = ChunkMetadata(pinned=pinned, custom=custom, **metadata)
    kwargs: dict[str, Any] = {}
    if created_at is not None:
        kwargs["created_at"] = created_at
    return Chunk(
        type=type_,
        content=content,
        id=new_chunk_id() if id is None else id,
        role=role,
        action=action,
        subtype=subtype,
        metadata=meta,
        priority=priority,
        **kwargs,
    )
