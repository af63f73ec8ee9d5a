"""A paged build through :class:`~memctx.store.MemoryStore`, in one write transaction.

The thread's row is locked by the build's first read (so its rows and view stay as
read, whatever the isolation level), then come the build's reads, the build, and the
new counts with the ``context.built`` event: on PostgreSQL one statement.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from typing import Any, Final, TypeVar

from sqlalchemy import text
from sqlmodel import Session

from memctx._build.builder import ContextBuilder
from memctx._build.options import BuildOptions
from memctx.store._build import Built, drive, paged_built, record_build
from memctx.store._paged import PagedBuilt, paged_build
from memctx.store._paged_rows import Lister
from memctx.store._paged_thread import PagedThread
from memctx.store._queries import check_payload
from memctx.store._records import CONTEXT_BUILT
from memctx.store._schema import now

T = TypeVar("T")


def paged_in_one(
    session: Session,
    thread_id: str,
    kept: PagedThread | None,
    builder: ContextBuilder,
    options: BuildOptions,
    keys: tuple[str | None, str],
    lister: Lister | None,
) -> tuple[PagedThread, PagedBuilt]:
    """A paged build in one write transaction: the thread locked first (so its rows and
    view stay as read, whatever the isolation level), its reads, the build, then the new
    counts and the ``context.built`` event."""
    steps = paged_build(kept, thread_id, builder, options, keys, lister)
    kept, built = drive(steps, partial(_in_session, session))
    record = paged_built(builder, options, kept, built)
    if session.connection().dialect.name == "postgresql":
        _record_in_one(session, thread_id, record)
    else:
        record_build(session, thread_id, record, lock=False)
    return kept, built


_RECORD_PG: Final = text(
    "WITH counted AS (INSERT INTO memctx_token_counts (thread_id, seq, tokenizer, renderer,"
    " tokens) SELECT :thread_id, s, :tokenizer, :renderer, t"
    " FROM unnest(CAST(:seqs AS integer[]), CAST(:tokens AS integer[])) AS u (s, t)"
    " ON CONFLICT DO NOTHING)"
    " INSERT INTO memctx_events (thread_id, kind, payload, created_at)"
    " VALUES (:thread_id, :kind, :payload, :created_at)"
)


def _record_in_one(session: Session, thread_id: str, built: Built) -> None:
    """:func:`record_build` on PostgreSQL in one statement (the thread locked already)."""
    kind, payload = check_payload(CONTEXT_BUILT, built.payload)
    counted = sorted(built.counted.items()) if built.tokenizer is not None else []
    session.connection().execute(
        _RECORD_PG,
        {
            "thread_id": thread_id,
            "tokenizer": built.tokenizer or "",
            "renderer": built.renderer,
            "seqs": [s for s, _ in counted],
            "tokens": [t for _, t in counted],
            "kind": kind,
            "payload": payload,
            "created_at": now(),
        },
    )


def _in_session(session: Session, function: Callable[..., T], *arguments: Any) -> T:
    return function(session, *arguments)
