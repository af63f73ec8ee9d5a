"""What a paged build keeps of a thread between builds: its light index and its reach.

The light index is every visible row's sequence number, id, type, unit (key
and whether the row opens it) and pin, in view order, with what a build
derives from them (SYSTEM and pinned rows, the first member of each unit,
the units answered, the calls still waiting); the reach is the state a build
last built, the chunks and counts read for it. See :mod:`._paged`.
"""

from __future__ import annotations

import bisect
import threading
import weakref
from collections import namedtuple
from collections.abc import Hashable, Sequence
from typing import Any

import attrs

from memctx._build.builder import ContextBuilder
from memctx._chunk import Chunk, ChunkType
from memctx._state import MemoryState
from memctx.store._own_appends import OwnAppend, following
from memctx.store._paged_reads import LightRow, Window, appended_rows, read_units, read_window
from memctx.store._plain import Where
from memctx.store._queries import check_thread_id
from memctx.store._schema import row_to_chunk


@attrs.frozen
class Start:
    """What the first read of a paged build found."""

    created_at: object
    batch: int
    after_seq: int
    """The highest appended sequence number seen (the next build reads those after it)."""
    window: Window | None
    """The cold read of the thread; None when the kept thread is still current."""
    appended: list[Any]
    """Rows appended since the kept thread was read (with content)."""
    counts: dict[int, int]
    """Stored counts of the appended rows, by sequence number."""
    units: list[LightRow] = attrs.Factory(list)
    """Every member of the units of appended rows the kept thread did not know."""
    given: dict[int, Chunk] = attrs.Factory(dict)
    """The chunks this store was given for appended rows, by sequence number."""


_OwnRow = namedtuple(
    "_OwnRow",
    "thread_id seq chunk_id origin batch type role action subtype content meta priority"
    " created_at unit_key unit_opener pinned stored_tokens",
)


def own_start(thread_id: str, kept: PagedThread, own: Sequence[OwnAppend]) -> Start | None:
    """The start of a rebuild from this store's own appends, without a read: the rows it
    appended after the ``kept`` thread, and every member of their units ``kept`` does not
    know (the appends read the older ones); None when they do not follow ``kept``."""
    with kept.lock:
        run = following(own, kept.created_at, kept.batch, kept.after_seq)
        if run is None:
            return None
        rows = [
            _OwnRow(
                thread_id=thread_id,
                seq=seq,
                origin="append",
                batch=n.batch,
                stored_tokens=None,
                **values,
            )
            for n in run
            for seq, values in enumerate(n.rows, n.first)
        ]
        keys = {r.unit_key for r in rows if r.unit_key is not None} - kept.members.keys()
    units: dict[int, LightRow] = {}
    if keys:
        for n in run:
            units.update((r[0], r) for r in n.older if r[3] in keys)
        units.update((r.seq, _light(r, r.seq)) for r in rows if r.unit_key in keys)
    given = {seq: c for n in run for seq, c in enumerate(n.chunks, n.first) if c is not None}
    return Start(
        kept.created_at, kept.batch, run[-1].last, None, rows, {}, list(units.values()), given
    )


def read_start(
    session: Where,
    thread_id: str,
    kept: PagedThread | None,
    tokenizer: str | None,
    renderer: str,
) -> Start:
    """The thread's window (:func:`read_window`), or (the ``kept`` thread still current)
    only the rows appended since, with the members of units it does not know."""
    check_thread_id(thread_id)
    if kept is not None:
        after = kept.after_seq
        version, rows, counts = appended_rows(session, thread_id, after, tokenizer, renderer)
        created_at, batch_number = version
        if kept.created_at == created_at and kept.batch == batch_number:
            with kept.lock:
                known = kept.members.keys()
                keys = {r.unit_key for r in rows if r.unit_key is not None} - known
            units = read_units(session, thread_id, sorted(keys)) if keys else []
            last = rows[-1].seq if rows else after
            return Start(created_at, batch_number, last, None, rows, counts, units)
    window = read_window(session, thread_id, tokenizer, renderer)
    return Start(window.created_at, window.batch, window.last, window, [], {})


class PagedThread:
    """What a store keeps of a thread between paged builds: what it knows of its rows.

    Positions are the visible order: the batch's view, then the rows appended
    after its base up to ``after_seq`` (:meth:`seq_at`). Of each position the
    thread knows the light columns only once read (``ids``, ``types``,
    ``units``, ``openers``: dicts by position), and every pinned, SYSTEM and
    waiting one. A view change or a new thread under the same id makes a new one.
    """

    def __init__(self, created_at: object, batch: int, after_seq: int) -> None:
        self.lock = threading.Lock()
        self.created_at = created_at
        self.batch = batch
        self.after_seq = after_seq
        self.view: list[int] = []
        self.view_positions: dict[int, int] = {}
        self.base = 0
        self.gaps: list[int] = []
        """Sequence numbers after ``base`` that are not visible (not appended), sorted."""
        self.length = 0
        self.ids: dict[int, str] = {}
        self.types: dict[int, str] = {}
        self.units: dict[int, str | None] = {}
        self.openers: dict[int, bool] = {}
        self.positions: dict[str, int] = {}
        self.looked_up: set[str] = set()
        """Chunk ids looked up in the database (found or not)."""
        self.system: list[int] = []
        self.flagged: list[int] = []
        self.pending: set[int] = set()
        self.answered: set[str] = set()
        self.members: dict[str, list[int]] = {}
        """Every visible member of a unit, for the units looked up so far (kept current)."""
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
        return self.length

    # -- positions and sequence numbers ---------------------------------------------------

    def seq_at(self, position: int) -> int:
        """The sequence number of a visible position."""
        if position < len(self.view):
            return self.view[position]
        k, gaps = position - len(self.view), self.gaps
        seq = self.base + 1 + k
        while True:
            moved = self.base + 1 + k + bisect.bisect_right(gaps, seq)
            if moved == seq:
                return seq
            seq = moved

    def position_at(self, seq: int) -> int | None:
        """The visible position of a sequence number (None: not visible)."""
        if seq > self.after_seq:
            return None
        if seq <= self.base:
            return self.view_positions.get(seq)
        gap = bisect.bisect_left(self.gaps, seq)
        if gap < len(self.gaps) and self.gaps[gap] == seq:
            return None
        return len(self.view) + seq - self.base - 1 - gap

    # -- what is known of the rows ---------------------------------------------------------

    @classmethod
    def from_window(cls, window: Window) -> PagedThread:
        thread = cls(window.created_at, window.batch, window.last)
        view = window.view or []
        thread.view, thread.base = view, window.base
        thread.view_positions = dict(zip(view, range(len(view)), strict=True))
        thread.gaps = sorted(
            r[0] for r in window.special if r[6] != "append" and window.base < r[0] <= window.last
        )
        thread.length = len(view) + window.last - window.base - len(thread.gaps)
        for position, row in enumerate(window.view_light):
            thread.know(position, row)
        for row in window.special:
            found = thread.position_at(row[0])
            if found is not None:
                thread.know(found, row)
        thread.register_units(window.units)
        return thread

    def know(self, position: int, row: LightRow) -> None:
        """Record a position's light row ``(seq, id, type, unit, opener, pinned, origin)``."""
        if position in self.ids:
            return
        self.ids[position] = row[1]
        self.types[position] = row[2]
        self.units[position] = row[3]
        self.openers[position] = bool(row[4])
        self.positions[row[1]] = position
        if row[2] == ChunkType.SYSTEM.value:
            bisect.insort(self.system, position)
        if row[5]:
            bisect.insort(self.flagged, position)

    def know_ids(self, ids: list[str], rows: list[LightRow]) -> None:
        """Record the rows found for chunk ids looked up."""
        self.looked_up.update(ids)
        for row in rows:
            position = self.position_at(row[0])
            if position is not None:
                self.know(position, row)

    def register_units(self, rows: list[LightRow]) -> None:
        """Record every member of some units (rows of each unit's members, any order; a
        row ``(None, None, None, key)`` names a unit looked up)."""
        found: dict[str, list[int]] = {}
        for row in rows:
            found.setdefault(row[3], [])
            if row[0] is None:  # a unit looked up (it may have no member)
                continue
            position = self.position_at(row[0])
            if position is not None:
                self.know(position, row)
                found[row[3]].append(position)
        for key, positions in found.items():
            positions.sort()
            self.members[key] = positions
            if any(not self.openers[i] for i in positions):
                self.answered.add(key)
            if positions and key not in self.answered:
                self.pending.add(positions[0])

    def extend(self, start: Start) -> None:
        """Add the rows appended since (with their content and stored counts)."""
        fresh = {r[3] for r in start.units}
        for row in start.appended:
            if row.seq <= self.after_seq:  # read by a build that ran meanwhile
                continue
            self.gaps.extend(range(self.after_seq + 1, row.seq))  # not appended: not visible
            self.after_seq = row.seq
            i = self.length
            self.length += 1
            self.know(i, _light(row, row.seq))
            unit = row.unit_key
            known = None if unit is None or unit in fresh else self.members.get(unit)
            if known is not None:
                if not known and row.unit_opener:
                    self.pending.add(i)
                elif not row.unit_opener:
                    self.answered.add(unit)
                    self.pending.discard(known[0] if known else i)
                known.append(i)
            given = start.given.get(row.seq)
            self.chunks[i] = row_to_chunk(row) if given is None else given
            count = start.counts.get(row.seq)
            if count is not None and self.counts_key is not None:
                self.counts[i] = count
                self.stored.add(i)
        self.register_units(start.units)
        self.after_seq = max(self.after_seq, start.after_seq)

    def add_rows(self, indexes: list[int], rows: dict[int, Any], counts: dict[int, int]) -> None:
        """Add the rows read for ``indexes`` (by sequence number), with their stored counts."""
        for i in indexes:
            seq = self.seq_at(i)
            row = rows[seq]
            if i not in self.chunks:
                self.chunks[i] = row_to_chunk(row)
            self.know(i, _light(row, seq))
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
        """The position of a chunk id, if known to be visible."""
        return self.positions.get(chunk_id)

    def members_of(self, keys: set[str]) -> list[int]:
        """Every index of the units ``keys`` (which must have been looked up)."""
        return [i for key in keys for i in self.members[key]]


def _light(row: Any, seq: int) -> LightRow:
    """The light row ``(seq, id, type, unit, opener, pinned, origin)`` of a full row."""
    return (seq, row.chunk_id, row.type, row.unit_key, row.unit_opener, row.pinned, row.origin)
