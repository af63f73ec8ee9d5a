"""What a store's own appends tell its next paged build, so that it need not read them back.

A store that keeps a thread for paged builds (:mod:`._paged`) notes what each of
its appends to that thread wrote, once the append has committed: the thread's
version (``created_at``, batch), the first sequence number, the rows' column
values, and the *older members* of their units (every row stored before, in any
unit of a row appended: read by the append's duplicate check, in the same
statement). The next build takes the notes that follow the kept thread without a
gap instead of reading the rows back, and writes its record only if the thread is
still at the last sequence number it built (:mod:`._paged_record`); otherwise it
writes nothing and builds again from what the database holds. The notes are
facts about committed rows, so what the kept thread learns from them stays true
whatever happens after.
"""

from __future__ import annotations

import datetime as _dt
import itertools
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Final

import attrs

from memctx._chunk import Chunk
from memctx.store._plain import Plain, Where
from memctx.store._row_reads import in_parts

MAX_NOTED: Final = 1_000
"""Rows noted per thread between two builds; past that the next build reads them."""

# The ids stored already (tagged 0), and the light rows of every stored member of the
# units ``keys`` (tagged 1), as ``(tag, seq, chunk_id, type, unit_key, unit_opener,
# pinned, origin)``. SQLite names the indexes, as the paged reads do.
_STORED: Final = (
    "SELECT 0, NULL, chunk_id, NULL, NULL, NULL, NULL, NULL FROM memctx_chunks"
    " WHERE {} AND chunk_id IN :ids"
)
_MEMBERS: Final = (
    " UNION ALL SELECT 1, seq, chunk_id, type, unit_key, unit_opener, pinned, origin"
    " FROM memctx_chunks{} WHERE thread_id = :thread_id AND unit_key IN :keys"
)
_IDS_ONLY: Final = Plain(
    _STORED.format("thread_id = :thread_id"),
    sqlite=_STORED.format("likely(thread_id = :thread_id)"),
)
_STORED_AND_UNITS: Final = Plain(
    _STORED.format("thread_id = :thread_id") + _MEMBERS.format(""),
    sqlite=_STORED.format("likely(thread_id = :thread_id)")
    + _MEMBERS.format(" INDEXED BY memctx_chunks_unit"),
)


@attrs.frozen
class OwnAppend:
    """One committed append of new rows by this store (see the module docstring)."""

    created_at: _dt.datetime
    batch: int
    first: int
    """The first row's sequence number; the others follow without a gap."""
    rows: tuple[Mapping[str, Any], ...]
    """Column values (:func:`~memctx.store._schema.chunk_values`) of each row, in order."""
    older: tuple[tuple[Any, ...], ...]
    """Light rows ``(seq, id, type, unit, opener, pinned, origin)`` of the members,
    stored before this append, of the units of the chunks it was given."""
    chunks: tuple[Chunk | None, ...] = ()
    """The chunk given for each row, where it is the chunk a read of the row gives
    (:func:`with_chunks`; empty: none is)."""

    @property
    def last(self) -> int:
        return self.first + len(self.rows) - 1


@attrs.define
class Noted:
    """Where an append puts its :class:`OwnAppend` (None: nothing new was written)."""

    value: OwnAppend | None = None


def with_chunks(noted: Noted | None, given: Iterable[Chunk]) -> None:
    """Add to what ``noted`` was told the chunks the append was given for its rows, so
    that the build need not make them again from the rows.

    A chunk stored reads back equal, rendering the same (the store's round trip),
    and its ``created_at`` in the offset it was given: the same ``tzinfo`` object
    only for UTC, the chunks' default. A chunk of another time zone is made from its
    row, as a read makes it (its ``tzinfo`` is then the read's).
    """
    if noted is None or noted.value is None:
        return
    by_id: dict[str, Chunk] = {}
    for chunk in given:
        by_id.setdefault(chunk.id, chunk)  # (the first of two equal ones is stored)
    chunks = tuple(
        chunk if chunk.created_at.tzinfo is _dt.UTC else None
        for chunk in map(by_id.__getitem__, (values["chunk_id"] for values in noted.value.rows))
    )
    noted.value = attrs.evolve(noted.value, chunks=chunks)


def stored_and_units(
    where: Where, thread_id: str, ids: Sequence[str], keys: Sequence[str]
) -> tuple[list[str], list[tuple[Any, ...]]]:
    """The ``ids`` the thread holds already, and the light rows of every member of the
    units ``keys`` it holds, in one statement per :data:`~._row_reads.IN_CHUNK` of each."""
    stored: list[str] = []
    older: list[tuple[Any, ...]] = []
    parts = itertools.zip_longest(in_parts(ids), in_parts(keys), fillvalue=())
    for id_part, key_part in parts:
        params: dict[str, Any] = {"thread_id": thread_id, "ids": list(id_part)}
        statement = _IDS_ONLY
        if key_part:  # (SQLite finds no plan for an empty list through the index)
            statement, params["keys"] = _STORED_AND_UNITS, list(key_part)
        for row in statement.tuples(where, params):
            if row[0]:
                older.append(tuple(row[1:]))
            else:
                stored.append(row[2])
    return stored, older


def instant(value: object) -> object:
    """A thread's ``created_at`` as an instant, however it was read (SQLite's text, a
    driver's or the ORM's datetime), for comparing two reads of it."""
    if isinstance(value, str):
        value = _dt.datetime.fromisoformat(value)
    if isinstance(value, _dt.datetime) and value.tzinfo is None:
        value = value.replace(tzinfo=_dt.UTC)
    return value


def note(pending: list[OwnAppend], own: OwnAppend, kept_after: int | None) -> None:
    """Add ``own`` to the notes of a thread: they stay a run without gaps that starts
    after what the kept thread holds (``kept_after``), of at most :data:`MAX_NOTED` rows."""
    if kept_after is not None:
        pending[:] = [n for n in pending if n.first > kept_after]
    if pending and pending[-1].last + 1 != own.first:
        pending.clear()
    if sum(len(n.rows) for n in pending) + len(own.rows) > MAX_NOTED:
        pending.clear()
        return
    pending.append(own)


def following(
    pending: Sequence[OwnAppend], created_at: object, batch: int, after: int
) -> list[OwnAppend] | None:
    """The notes that follow a kept thread at ``after`` (of that version) without a gap;
    None when there are none, or they do not."""
    run = [n for n in pending if n.last > after]
    if not run or run[0].first != after + 1:
        return None
    when = instant(created_at)
    if any(n.batch != batch or instant(n.created_at) != when for n in run):
        return None
    return run
