"""A paged build through :class:`~memctx.store.MemoryStore`: one transaction, or none.

On SQLite, one write transaction (``BEGIN IMMEDIATE``: no other write lands between
the build's reads) holds the reads, the build, and the new counts with the
``context.built`` event. On PostgreSQL, no transaction: each read is one statement
bounded by what cannot change (the batch read first, whose rows are never rewritten,
and the thread's last sequence number then), and the counts and the event are written
by one statement; a rebuild after another process's append is two round trips. Both
commit without waiting for the disk (:func:`~memctx.store._engine.build_record_engine`).

A rebuild after this store's own appends (:mod:`._own_appends`) reads nothing: it
takes the rows as the appends wrote them, and its record is written only if the
thread's ``(created_at, batch, last_seq)`` are still those it built (on PostgreSQL
in the record's one statement: one round trip); else nothing is written, and the
store builds again from a read.
"""

from __future__ import annotations

import datetime as _dt
from collections.abc import Callable, Iterable, Sequence
from functools import partial
from typing import Any, Final, TypeVar

from sqlalchemy import Connection
from sqlmodel import Session

from memctx._build.builder import ContextBuilder
from memctx._build.options import BuildOptions
from memctx.store._build import Built, drive, paged_built, record_build
from memctx.store._own_appends import OwnAppend, instant
from memctx.store._paged import PagedBuilt, paged_build
from memctx.store._paged_rows import Lister
from memctx.store._paged_thread import PagedThread
from memctx.store._plain import Plain, Where, connection_of
from memctx.store._prepared import Prepared
from memctx.store._queries import get_thread
from memctx.store._records import CONTEXT_BUILT
from memctx.store._schema import UTCDateTime, dump_json, now

T = TypeVar("T")


def paged_in_one(
    session: Where,
    thread_id: str,
    kept: PagedThread | None,
    builder: ContextBuilder,
    options: BuildOptions,
    keys: tuple[str | None, str],
    lister: Lister | None,
    own: Sequence[OwnAppend] = (),
) -> tuple[PagedThread, PagedBuilt | None]:
    """A paged build: its reads, the build, then the new counts and the ``context.built``
    event, in the caller's session (see the module docstring).

    With ``own`` (this store's appends, taken without a read) the record is written only
    if the thread is still in the state built; else nothing is, and the build is None.
    """
    steps = paged_build(kept, thread_id, builder, options, keys, lister, own)
    kept, built = drive(steps, partial(_in_session, session))
    record = paged_built(builder, options, kept, built, keys)
    if _record(session, thread_id, record, built.expect):
        return kept, built
    unstored(kept, built)
    return kept, None


_COUNTS: Final = Plain(
    "INSERT INTO memctx_token_counts (thread_id, seq, tokenizer, renderer, tokens)"
    " VALUES (:thread_id, :seq, :tokenizer, :renderer, :tokens) ON CONFLICT DO NOTHING"
)
_EVENT: Final = Plain(
    "INSERT INTO memctx_events (thread_id, kind, payload, created_at)"
    " VALUES (:thread_id, :kind, :payload, :created_at)"
)
# PostgreSQL: the counts and the event in one statement, whose commit does not wait for
# the disk (``set_config`` with ``is_local``: for this statement's transaction only).
_RECORD_PG: Final = Plain(
    "WITH relaxed AS (SELECT set_config('synchronous_commit', 'off', true)),"
    " counted AS (INSERT INTO memctx_token_counts (thread_id, seq, tokenizer, renderer,"
    " tokens) SELECT :thread_id, s, :tokenizer, :renderer, t"
    " FROM unnest(CAST(:seqs AS integer[]), CAST(:tokens AS integer[])) AS u (s, t)"
    " ON CONFLICT DO NOTHING)"
    " INSERT INTO memctx_events (thread_id, kind, payload, created_at)"
    " SELECT :thread_id, :kind, :payload, :created_at FROM relaxed"
)

# The same, written only if the thread is still in the state built (see _record); run
# through libpq (:mod:`._prepared`): $1 thread, $2-$4 its created_at, batch and last_seq,
# $5 tokenizer, $6 renderer, $7 sequence numbers, $8 their counts, $9-$11 the event.
_RECORD_PG_IF: Final = Prepared(
    "memctx_record_if",
    "WITH current AS (SELECT 1 FROM memctx_threads WHERE id = $1"
    " AND created_at = CAST($2 AS timestamptz) AND batch = CAST($3 AS integer)"
    " AND last_seq = CAST($4 AS integer)),"
    " relaxed AS (SELECT set_config('synchronous_commit', 'off', true) FROM current),"
    " counted AS (INSERT INTO memctx_token_counts (thread_id, seq, tokenizer, renderer,"
    " tokens) SELECT $1, s, $5, $6, t"
    " FROM unnest(CAST($7 AS integer[]), CAST($8 AS integer[])) AS u (s, t)"
    " WHERE EXISTS (SELECT 1 FROM current) ON CONFLICT DO NOTHING)"
    " INSERT INTO memctx_events (thread_id, kind, payload, created_at)"
    " SELECT $1, $9, $10, CAST($11 AS timestamptz) FROM relaxed",
)
_VERSION_NOW: Final = Plain(
    "SELECT created_at, batch, last_seq FROM memctx_threads WHERE id = :thread_id"
)


def _record(
    session: Where, thread_id: str, built: Built, expect: tuple[object, int, int] | None
) -> bool:
    """:func:`~memctx.store._build.record_build` in plain statements (the caller's
    transaction holds the thread: SQLite's write lock; on PostgreSQL one statement);
    with ``expect``, only if the thread's ``(created_at, batch, last_seq)`` are those.
    Whether it was written."""
    counted = sorted(built.counted.items()) if built.tokenizer is not None else []
    dialect = connection_of(session).dialect
    if dialect.name == "postgresql" and expect is not None:
        return _record_if_pg(connection_of(session), thread_id, built, counted, expect)
    event = {
        "thread_id": thread_id,
        "kind": CONTEXT_BUILT,
        "payload": dump_json(built.payload),  # numbers, names and None (build_payload)
        "created_at": _TIMESTAMP.process_bind_param(now(), dialect),
    }
    if dialect.name == "postgresql":
        params = {
            **event,
            "tokenizer": built.tokenizer or "",
            "renderer": built.renderer,
            "seqs": [s for s, _ in counted],
            "tokens": [t for _, t in counted],
        }
        _RECORD_PG.run(session, params)
        return True
    if expect is not None:
        found = _VERSION_NOW.tuples(session, {"thread_id": thread_id})
        if not found or tuple(found[0]) != expect:
            return False
    if counted:
        common = {"thread_id": thread_id, "tokenizer": built.tokenizer, "renderer": built.renderer}
        _COUNTS.run(session, [{**common, "seq": s, "tokens": t} for s, t in counted])
    _EVENT.run(session, event)
    return True


def _record_if_pg(
    connection: Connection,
    thread_id: str,
    built: Built,
    counted: list[tuple[int, int]],
    expect: tuple[object, int, int],
) -> bool:
    """:func:`_record` on PostgreSQL with ``expect``: one statement, through libpq."""
    created, batch, last = expect
    params = [
        thread_id,
        _utc(created).isoformat(),
        str(batch),
        str(last),
        built.tokenizer or "",
        built.renderer,
        _array(s for s, _ in counted),
        _array(t for _, t in counted),
        CONTEXT_BUILT,
        dump_json(built.payload),  # numbers, names and None (build_payload)
        now().isoformat(),
    ]
    return _RECORD_PG_IF.run(connection, params) == 1


_TIMESTAMP: Final = UTCDateTime()


def _utc(value: object) -> _dt.datetime:
    """A thread's ``created_at`` as the driver read it, as an instant in UTC."""
    when = instant(value)
    assert isinstance(when, _dt.datetime)
    return when.astimezone(_dt.UTC)


def _array(values: Iterable[int]) -> str:
    """PostgreSQL's text form of an array of integers."""
    return "{" + ",".join(map(str, values)) + "}"


def _in_session(session: Where, function: Callable[..., T], *arguments: Any) -> T:
    return function(session, *arguments)


def record_build_if(
    session: Session, thread_id: str, built: Built, expect: tuple[object, int, int] | None
) -> bool:
    """:func:`record_build`, only if the locked thread's ``(created_at, batch, last_seq)``
    are ``expect`` (a paged build of this store's own appends, :mod:`._own_appends`);
    whether it was written."""
    if expect is not None:
        thread = get_thread(session, thread_id, lock=True)
        created_at, batch, last = expect
        if (instant(thread.created_at), thread.batch, thread.last_seq) != (
            instant(created_at),
            batch,
            last,
        ):
            return False
    record_build(session, thread_id, built, lock=expect is None)
    return True


def unstored(kept: PagedThread, built: PagedBuilt) -> None:
    """Forget that the counts of a build whose record was not written are stored."""
    with kept.lock:
        kept.stored.difference_update(
            p for p in map(kept.position_at, built.counted) if p is not None
        )
