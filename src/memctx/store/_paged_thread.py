"""What a paged build keeps of a thread between builds: its light index and its reach.

The light index is every visible row's sequence number, id, type, unit (key
and whether the row opens it) and pin, in view order, with what a build
derives from them (SYSTEM and pinned rows, the first member of each unit,
the units answered, the calls still waiting); the reach is the state a build
last built, the chunks and counts read for it. See :mod:`._paged`.
"""

from __future__ import annotations

import threading
import weakref
from collections.abc import Hashable
from operator import itemgetter
from typing import Any

import attrs
from sqlmodel import Session

from memctx._build.builder import ContextBuilder
from memctx._chunk import Chunk, ChunkType
from memctx._state import MemoryState
from memctx.store._queries import (
    check_thread_id,
    counts_by_seq,
    get_batch,
    thread_version,
)
from memctx.store._row_reads import (
    appended_since,
    rows_by_seq,
    visible_light_rows,
)
from memctx.store._schema import row_to_chunk, unit_columns


@attrs.frozen
class Start:
    """What the first read of a paged build found."""

    created_at: object
    batch: int
    after_seq: int
    """The highest appended sequence number seen (the next build reads those after it)."""
    light: list[tuple[Any, ...]] | None
    """The light index of the visible rows; None when the kept thread is still current."""
    appended: list[Any]
    """Rows appended since the kept thread was read (with content)."""
    counts: dict[int, int]
    """Stored counts of the appended rows, by sequence number."""


def read_start(
    session: Session,
    thread_id: str,
    kept: tuple[object, int, int] | None,
    tokenizer: str | None,
    renderer: str,
) -> Start:
    """The thread's light index, or (``kept`` = created_at, batch, after_seq still current)
    only the rows appended since."""
    check_thread_id(thread_id)
    if kept is None:
        created_at, batch_number = thread_version(session, thread_id)
    else:
        version, rows, counts = appended_since(session, thread_id, kept[2], tokenizer, renderer)
        created_at, batch_number = version
        if kept[0] == created_at and kept[1] == batch_number:
            after = rows[-1].seq if rows else kept[2]
            return Start(created_at, batch_number, after, None, rows, counts)
    batch = get_batch(session, thread_id, batch_number)
    light = visible_light_rows(session, batch)
    base = 0 if batch.view is None else batch.base_seq
    after = max([base, *(r[0] for r in light[-1:] if r[0] > base)])
    return Start(created_at, batch_number, after, light, [], {})


def read_rows(
    session: Session, thread_id: str, tokenizer: str | None, renderer: str, seqs: list[int]
) -> tuple[dict[int, Any], dict[int, int]]:
    """Rows (with content) and their stored counts, by sequence number."""
    rows = rows_by_seq(session, thread_id, seqs)
    counts = (
        {} if tokenizer is None else counts_by_seq(session, thread_id, tokenizer, renderer, seqs)
    )
    return rows, counts


class PagedThread:
    """What a store keeps of a thread between paged builds: its light index and reach.

    The index lists only grow (rows appended to the thread); a view change
    or a new thread under the same id makes a new one.
    """

    def __init__(self, created_at: object, batch: int, after_seq: int) -> None:
        self.lock = threading.Lock()
        self.created_at = created_at
        self.batch = batch
        self.after_seq = after_seq
        self.seqs: list[int] = []
        self.ids: list[str] = []
        self.types: list[str] = []
        self.units: list[str | None] = []
        self.openers: list[bool] = []
        self.system: list[int] = []
        self.flagged: list[int] = []
        self.first: dict[str, int] = {}
        self.answered: set[str] = set()
        self.pending: set[int] = set()
        self.members: dict[str, list[int]] = {}
        """Every member of a unit, for the units looked up so far (kept current)."""
        self.positions: dict[str, int] | None = None
        # What was read: chunks and counts by index; counts under ``counts_key``.
        self.chunks: dict[int, Chunk] = {}
        self.counts_key: Hashable = None
        self.counts: dict[int, int] = {}
        self.stored: set[int] = set()
        # The reach: a state of some visible chunks, in order, and their indexes.
        self.reach: MemoryState | None = None
        self.reach_index: list[int] = []
        self.seeded: weakref.WeakKeyDictionary[ContextBuilder, dict[Hashable, int]] = (
            weakref.WeakKeyDictionary()
        )

    @property
    def key(self) -> tuple[object, int, int]:
        return self.created_at, self.batch, self.after_seq

    def __len__(self) -> int:
        return len(self.seqs)

    # -- the light index ------------------------------------------------------------------

    @classmethod
    def from_light(cls, start: Start) -> PagedThread:
        thread = cls(start.created_at, start.batch, start.after_seq)
        light = start.light or []
        # Column by column: a thread may have 100,000 rows.
        thread.seqs = list(map(itemgetter(0), light))
        thread.ids = list(map(itemgetter(1), light))
        thread.types = types = list(map(itemgetter(2), light))
        thread.units = units = list(map(itemgetter(3), light))
        thread.openers = openers = list(map(itemgetter(4), light))  # bools, or 0 and 1 (SQLite)
        thread.flagged = [i for i, pinned in enumerate(map(itemgetter(5), light)) if pinned]
        thread.system = [i for i, kind in enumerate(types) if kind == "SYSTEM"]
        first: dict[str, int] = {}
        answered: set[str] = set()
        for i, unit in enumerate(units):
            if unit is not None:
                first.setdefault(unit, i)
                if not openers[i]:
                    answered.add(unit)
        thread.first, thread.answered = first, answered
        thread.pending = {i for u, i in first.items() if u not in answered and openers[i]}
        return thread

    def extend(self, start: Start) -> None:
        """Add the rows appended since (with their content and stored counts)."""
        for row in start.appended:
            if row.seq <= self.after_seq:  # read by a build that ran meanwhile
                continue
            chunk = row_to_chunk(row)
            light = unit_columns(chunk)
            i = len(self.seqs)
            self.seqs.append(row.seq)
            self.ids.append(chunk.id)
            self.types.append(chunk.type.value)
            unit: str | None = light["unit_key"]
            opener: bool = light["unit_opener"]
            self.units.append(unit)
            self.openers.append(opener)
            if self.positions is not None:
                self.positions[chunk.id] = i
            if chunk.type is ChunkType.SYSTEM:
                self.system.append(i)
            if light["pinned"]:
                self.flagged.append(i)
            if unit is not None:
                first = self.first.setdefault(unit, i)
                if opener and first == i:
                    self.pending.add(i)
                elif not opener:
                    self.answered.add(unit)
                    self.pending.discard(first)
                known = self.members.get(unit)
                if known is not None:
                    known.append(i)
                elif first == i:
                    self.members[unit] = [i]
            self.chunks[i] = chunk
            count = start.counts.get(row.seq)
            if count is not None and self.counts_key is not None:
                self.counts[i] = count
                self.stored.add(i)
        self.after_seq = max(self.after_seq, start.after_seq)

    def add_rows(self, indexes: list[int], rows: dict[int, Any], counts: dict[int, int]) -> None:
        """Add the rows read for ``indexes`` (by sequence number), with their stored counts."""
        for i in indexes:
            seq = self.seqs[i]
            if i not in self.chunks:
                self.chunks[i] = row_to_chunk(rows[seq])
            count = counts.get(seq)
            if count is not None:
                self.counts[i] = count
                self.stored.add(i)

    def use_counts(self, key: Hashable) -> None:
        """Keep counts under ``key`` from now on (rows read under another key are read again)."""
        if key != self.counts_key:
            self.counts_key = key
            self.counts, self.stored = {}, set()
            self.chunks = {}
            self.reach, self.reach_index = None, []

    def position_of(self, chunk_id: str) -> int | None:
        if self.positions is None:
            self.positions = dict(zip(self.ids, range(len(self.ids)), strict=True))
        return self.positions.get(chunk_id)

    def members_of(self, keys: set[str]) -> list[int]:
        """Every index of the units ``keys``."""
        missing = keys.difference(self.members)
        if missing:
            found: dict[str, list[int]] = {key: [] for key in missing}
            for i in [i for i, u in enumerate(self.units) if u in missing]:
                found[self.units[i]].append(i)  # type: ignore[index]
            self.members.update(found)
        return [i for key in keys for i in self.members[key]]
