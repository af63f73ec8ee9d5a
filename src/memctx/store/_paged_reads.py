"""The reads of a paged build (:mod:`._paged`): a bounded window of a thread, never all of it.

A cold paged build reads, in one transaction: the thread's version and last
sequence number, its batch, the light rows of the batch's view (when it has
one: a compaction's view is short), the *special* rows of the thread (pinned,
SYSTEM, or not appended: a partial index holds only those), the units that
may still wait for an answer (``memctx_waiting``) with every member of each,
and the newest page of appended rows with their stored counts. What a build
needs of any other row it reads later, by sequence number, unit or chunk id,
each through an index; the ids and types of every visible row (the left-out
list of a result) only when the result is asked for them.

A light row is ``(seq, chunk_id, type, unit_key, unit_opener, pinned, origin)``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Final

import attrs

from memctx._exceptions import StoreError, ThreadNotFoundError
from memctx.store._plain import Plain, Where
from memctx.store._queries import check_thread_id
from memctx.store._row_reads import (
    counted,
    in_parts,
    parse_view,
    split_appended,
    visible_light_rows,
)
from memctx.store._schema import SPECIAL_ROWS, BatchRow

LightRow = tuple[Any, ...]

FIRST_PAGE: Final = 64
"""Rows read in the first page of a thread's newest chunks."""

_LIGHT: Final = "seq, chunk_id, type, unit_key, unit_opener, pinned, origin"
_CONTENT: Final = (
    "c.thread_id, c.seq, c.chunk_id, c.origin, c.batch, c.type, c.role, c.action, c.subtype,"
    " c.content, c.metadata AS meta, c.priority, c.created_at, c.unit_key, c.unit_opener,"
    " c.pinned, t.tokens AS stored_tokens"
)
"""A chunk row's columns (as :func:`~memctx.store._schema.row_to_chunk` reads them) and
its stored count, of ``memctx_chunks c`` joined to :data:`_COUNTED`."""
_COUNTED: Final = (
    " LEFT OUTER JOIN memctx_token_counts t ON t.thread_id = c.thread_id AND t.seq = c.seq"
    " AND t.tokenizer = :tokenizer AND t.renderer = :renderer"
)

# SQLite without statistics (no ANALYZE) prefers a thread's covering light index to a
# partial or unique one, and reads an entry of every row of the thread: these reads name
# their index there. (The unique index of chunk ids has no name of ours in SQLite:
# ``likely`` tells it that the thread matches most rows, so it looks the ids up.)
_SPECIAL_ROWS: Final = (
    f"SELECT 0, {_LIGHT} FROM memctx_chunks{{}} WHERE thread_id = :thread_id AND {SPECIAL_ROWS}"
)
_WAITING_UNITS: Final = (
    f"SELECT 1, {_LIGHT} FROM memctx_chunks{{}} WHERE thread_id = :thread_id AND unit_key IN"
    " (SELECT unit_key FROM memctx_waiting WHERE thread_id = :thread_id AND seq > :base)"
)
_UNITS_OF: Final = (
    f"SELECT {_LIGHT} FROM memctx_chunks{{}} WHERE thread_id = :thread_id AND unit_key IN :keys"
)
_SPECIAL_INDEX: Final = " INDEXED BY memctx_chunks_special"
_UNIT_INDEX: Final = " INDEXED BY memctx_chunks_unit"

_VERSION: Final = Plain(
    "SELECT t.created_at, t.batch, t.last_seq, b.view, b.base_seq, b.number"
    " FROM memctx_threads t LEFT OUTER JOIN memctx_batches b"
    " ON b.thread_id = t.id AND b.number = t.batch WHERE t.id = :thread_id"
)
_BATCH: Final = Plain(
    "SELECT view, base_seq FROM memctx_batches WHERE thread_id = :thread_id AND number = :number"
)
# The special rows (tagged 0), and every member of the units still waiting (tagged 1).
_SPECIAL: Final = Plain(
    f"{_SPECIAL_ROWS.format('')} UNION ALL {_WAITING_UNITS.format('')}",
    sqlite=f"{_SPECIAL_ROWS.format(_SPECIAL_INDEX)} UNION ALL {_WAITING_UNITS.format(_UNIT_INDEX)}",
)
_UNITS: Final = Plain(_UNITS_OF.format(""), sqlite=_UNITS_OF.format(_UNIT_INDEX))
_IDS: Final = Plain(
    f"SELECT {_LIGHT} FROM memctx_chunks WHERE thread_id = :thread_id AND chunk_id IN :ids",
    sqlite=f"SELECT {_LIGHT} FROM memctx_chunks WHERE likely(thread_id = :thread_id)"
    " AND chunk_id IN :ids",
)
# The newest appended rows after ``base`` up to ``last``, with their stored counts.
_NEWEST: Final = Plain(
    f"SELECT {_CONTENT} FROM memctx_chunks c{_COUNTED} WHERE c.thread_id = :thread_id"
    " AND c.origin = 'append' AND c.seq > :base AND c.seq <= :last ORDER BY c.seq DESC LIMIT :limit"
)
_ROWS: Final = Plain(
    f"SELECT {_CONTENT} FROM memctx_chunks c{_COUNTED} WHERE c.thread_id = :thread_id"
    " AND c.seq IN :seqs"
)
# A rebuild's one read: the thread's version, the rows appended after ``base`` and their
# stored counts (the thread's row alone when nothing was appended).
_APPENDED: Final = Plain(
    f"SELECT v.created_at AS thread_created_at, v.batch AS thread_batch, {_CONTENT}"
    " FROM memctx_threads v LEFT OUTER JOIN memctx_chunks c ON c.thread_id = v.id"
    f" AND c.origin = 'append' AND c.seq > :base{_COUNTED} WHERE v.id = :thread_id ORDER BY c.seq"
)


@attrs.frozen
class Window:
    """What the first read of a cold paged build found (see the module docstring)."""

    created_at: object
    batch: int
    last: int
    """The thread's last sequence number: appended rows up to it are visible."""
    base: int
    view: list[int] | None
    view_light: list[LightRow]
    special: list[LightRow]
    units: list[LightRow]
    """Every member of the units that may wait for an answer."""
    newest: list[Any]
    """The newest appended rows (with content and ``stored_tokens``), newest first."""


def read_window(session: Where, thread_id: str, tokenizer: str | None, renderer: str) -> Window:
    """The first read of a cold paged build."""
    check_thread_id(thread_id)
    found = _VERSION.tuples(session, {"thread_id": thread_id})
    if not found:
        raise ThreadNotFoundError(thread_id)
    created_at, number, last, stored_view, base_seq, batch_number = found[0]
    if batch_number is None:
        raise StoreError(f"thread {thread_id!r}: batch {number} is missing from the database")
    view = parse_view(stored_view, thread_id, number)
    base = 0 if view is None else base_seq
    view_light: list[LightRow] = []
    if view is not None:
        batch = BatchRow(
            thread_id=thread_id,
            number=number,
            operation="",
            params="",
            view=stored_view,
            base_seq=base_seq,
        )
        view_light = visible_light_rows(session, batch, view_only=True)
    special: list[LightRow] = []
    units: list[LightRow] = []
    for row in _SPECIAL.tuples(session, {"thread_id": thread_id, "base": base}):
        (units if row[0] else special).append(row[1:])
    answered = {r[3] for r in view_light if r[3] is not None and not r[4]}
    waiting = {r[3] for r in view_light if r[4] and r[3] not in answered}
    if waiting:
        units += read_units(session, thread_id, sorted(waiting.difference(r[3] for r in units)))
    params = {
        "thread_id": thread_id,
        "tokenizer": tokenizer,
        "renderer": renderer,
        "base": base,
        "last": last,
        "limit": FIRST_PAGE,
    }
    newest = counted(_NEWEST.rows(session, params))
    return Window(created_at, number, last, base, view, view_light, special, units, newest)


def read_units(session: Where, thread_id: str, keys: Sequence[str]) -> list[LightRow]:
    """The light rows of every member of the units ``keys`` (any sequence number)."""
    found: list[LightRow] = []
    for part in in_parts(keys):
        found += _UNITS.tuples(session, {"thread_id": thread_id, "keys": list(part)})
    return found


def read_ids(session: Where, thread_id: str, ids: Sequence[str]) -> list[LightRow]:
    """The light rows of the thread's chunks with these ids."""
    found: list[LightRow] = []
    for part in in_parts(ids):
        found += _IDS.tuples(session, {"thread_id": thread_id, "ids": list(part)})
    return found


def read_rows(
    session: Where, thread_id: str, tokenizer: str | None, renderer: str, seqs: list[int]
) -> tuple[dict[int, Any], dict[int, int]]:
    """Rows (with content) and their stored counts, by sequence number."""
    rows: dict[int, Any] = {}
    params = {"thread_id": thread_id, "tokenizer": tokenizer, "renderer": renderer}
    for part in in_parts(seqs):
        rows.update(
            (r.seq, r) for r in counted(_ROWS.rows(session, {**params, "seqs": list(part)}))
        )
    counts = {s: r.stored_tokens for s, r in rows.items() if r.stored_tokens is not None}
    return rows, counts


def appended_rows(
    session: Where, thread_id: str, after: int, tokenizer: str | None, renderer: str
) -> tuple[tuple[Any, int], list[Any], dict[int, int]]:
    """In one statement: the thread's ``(created_at, batch)`` (as :func:`read_window` reads
    them), the rows appended after sequence number ``after`` in order, and their counts
    stored under ``tokenizer`` and ``renderer``. :class:`ThreadNotFoundError` if there is
    no such thread."""
    params = {"thread_id": thread_id, "base": after, "tokenizer": tokenizer, "renderer": renderer}
    return split_appended(thread_id, list(_APPENDED.rows(session, params)))


def read_light(
    session: Where, thread_id: str, created_at: object, number: int, length: int
) -> tuple[list[str], list[str]]:
    """The ids and types of the first ``length`` rows visible in batch ``number`` (what a
    paged build's left-out list reads, when asked); :class:`StoreError` when the thread
    was deleted since."""
    found = _VERSION.tuples(session, {"thread_id": thread_id})
    if not found or found[0][0] != created_at:
        raise StoreError(
            f"thread {thread_id!r} was deleted after this build: its left-out chunks "
            "can no longer be listed"
        )
    stored = _BATCH.tuples(session, {"thread_id": thread_id, "number": number})
    if not stored:
        raise StoreError(f"thread {thread_id!r}: batch {number} is missing from the database")
    batch = BatchRow(
        thread_id=thread_id,
        number=number,
        operation="",
        params="",
        view=stored[0][0],
        base_seq=stored[0][1],
    )
    light = visible_light_rows(session, batch)[:length]
    return [r[1] for r in light], [r[2] for r in light]
