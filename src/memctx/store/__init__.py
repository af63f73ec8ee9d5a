"""The persistent store: threads of chunks in SQLite (by default) or PostgreSQL.

::

    from memctx import chunks
    from memctx.store import MemoryStore

    with MemoryStore.open() as store:            # $MEMCTX_DATABASE_URL or the default file
        store.create_thread("t1", exist_ok=True)
        store.append("t1", chunks.user("hi"), chunks.assistant("hello"))
        state = store.get_current_state("t1")    # a MemoryState of the visible chunks
        store.truncate("t1", keep_last=20)       # a view: history is kept
        store.rollback("t1", batch=0)
        result = store.build("t1", max_tokens=8000)

See :class:`MemoryStore` for the whole API (:class:`AsyncMemoryStore` has the
same methods, as coroutines) and :mod:`memctx.store._schema` for the tables.
The names below are imported on first use, so that importing
``memctx.cli._thread`` (which every ``memctx`` command does) does not load
SQLAlchemy.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from memctx.store._async_store import AsyncMemoryStore
    from memctx.store._context_ops import CONTEXT_COMPACTED, CONTEXT_COMPRESSED
    from memctx.store._engine import (
        DATABASE_URL_ENV,
        default_database_path,
        default_database_url,
    )
    from memctx.store._recall import arecall, recall, recall_tool
    from memctx.store._records import (
        CONTEXT_BUILT,
        SNAPSHOT_IMPORTED,
        VIEW_CHANGED,
        Batch,
        StoredChunk,
        StoreEvent,
        ThreadInfo,
    )
    from memctx.store._schema import SCHEMA_VERSION
    from memctx.store._search import SearchHit
    from memctx.store._snapshot import SNAPSHOT_STORE_VERSION
    from memctx.store._store import MemoryStore

_MODULES = {
    "AsyncMemoryStore": "_async_store",
    "DATABASE_URL_ENV": "_engine",
    "default_database_path": "_engine",
    "default_database_url": "_engine",
    "CONTEXT_BUILT": "_records",
    "CONTEXT_COMPACTED": "_context_ops",
    "CONTEXT_COMPRESSED": "_context_ops",
    "SNAPSHOT_IMPORTED": "_records",
    "VIEW_CHANGED": "_records",
    "Batch": "_records",
    "StoredChunk": "_records",
    "StoreEvent": "_records",
    "ThreadInfo": "_records",
    "SCHEMA_VERSION": "_schema",
    "arecall": "_recall",
    "recall": "_recall",
    "recall_tool": "_recall",
    "SearchHit": "_search",
    "SNAPSHOT_STORE_VERSION": "_snapshot",
    "MemoryStore": "_store",
}

__all__ = [
    "CONTEXT_BUILT",
    "CONTEXT_COMPACTED",
    "CONTEXT_COMPRESSED",
    "DATABASE_URL_ENV",
    "SCHEMA_VERSION",
    "SNAPSHOT_IMPORTED",
    "SNAPSHOT_STORE_VERSION",
    "VIEW_CHANGED",
    "AsyncMemoryStore",
    "Batch",
    "MemoryStore",
    "SearchHit",
    "StoreEvent",
    "StoredChunk",
    "ThreadInfo",
    "arecall",
    "default_database_path",
    "default_database_url",
    "recall",
    "recall_tool",
]


def __getattr__(name: str) -> Any:
    module = _MODULES.get(name)
    if module is None:
        raise AttributeError(f"module 'memctx.store' has no attribute {name!r}")
    value = getattr(importlib.import_module(f"memctx.store.{module}"), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
