"""What the store returns besides chunks and states: threads, batches, events, history."""

from __future__ import annotations

import datetime as _dt
from typing import Any, Final

import attrs

from memctx._chunk import Chunk
from memctx._json import FrozenDict, freeze_json

CONTEXT_BUILT: Final = "context.built"
"""Event kind recorded by :meth:`MemoryStore.build`."""
VIEW_CHANGED: Final = "view.changed"
"""Event kind recorded by every view operation and rollback."""
SNAPSHOT_IMPORTED: Final = "snapshot.imported"
"""Event kind recorded when a thread is created from a snapshot."""


def _frozen_mapping(value: Any) -> FrozenDict:
    frozen = freeze_json(value, "payload")
    assert isinstance(frozen, FrozenDict)
    return frozen


@attrs.frozen
class ThreadInfo:
    """A thread's summary.

    ``chunk_count`` counts every chunk ever stored in it (the visible ones and
    the history); ``batch`` is the current batch and ``batch_count`` how many
    batches it has had (batch 0 is its creation); ``metadata`` is the
    thread's own JSON object (:meth:`MemoryStore.update_thread_metadata`).
    """

    id: str
    created_at: _dt.datetime
    chunk_count: int
    batch: int
    batch_count: int
    metadata: FrozenDict = attrs.field(factory=FrozenDict, converter=_frozen_mapping)


@attrs.frozen
class Batch:
    """One batch: started by a view operation (or the thread's creation, or an import).

    ``operation`` is ``create``, ``import``, ``truncate``, ``insert``,
    ``replace``, ``clear``, ``filter`` or ``rollback``; ``params`` are its
    arguments as JSON. ``current`` says whether it is the thread's current batch.
    """

    number: int
    operation: str
    params: FrozenDict = attrs.field(converter=_frozen_mapping)
    created_at: _dt.datetime
    current: bool


@attrs.frozen
class StoreEvent:
    """Something that happened to a thread, with its parameters as a JSON ``payload``.

    ``id`` grows with every event of the database, so it orders a thread's events.
    """

    id: int
    thread_id: str
    kind: str
    payload: FrozenDict = attrs.field(converter=_frozen_mapping)
    created_at: _dt.datetime


@attrs.frozen
class StoredChunk:
    """A chunk with its place in the thread's history.

    ``seq`` is its sequence number (1, 2, 3, ... in the order chunks were
    stored, without gaps), ``origin`` how it came in (``append``, ``insert``
    or ``replace``), ``batch`` the batch that was current then, and
    ``visible`` whether the current view shows it.
    """

    seq: int
    chunk: Chunk
    origin: str
    batch: int
    visible: bool
