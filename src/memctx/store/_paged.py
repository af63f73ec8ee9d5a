"""Paged builds: a ``recent`` build of a thread reads the chunks its budget reaches, not all.

A newest-first build walks the candidates newest first and stops at the
first block that does not fit; every chunk it measures before that one fits
the budget, so the chunks it can touch are the pinned ones and the newest
candidates up to the one at which their token counts (persisted per chunk,
tokenizer and renderer chain) first exceed the budget. What it needs of every
other visible chunk is no content: its id and type (for the report, and the
filters), its unit and whether it opens it (a call far back may still wait
for its result, so it is pinned; a result in reach joins its call's unit),
and its pin. Those are plain columns (``unit_key``, ``unit_opener``,
``pinned``), read for every visible row as a light index.

So a paged build reads the light index, then pages of the newest rows (with
their counts) until the counts of the unpinned candidates exceed the budget,
then the pinned rows and every other member of the units of what it read.
It builds the *reach*: those chunks in their order. The newest-first walk of
the reach meets exactly the blocks, pins and roles a walk of the whole state
meets before it stops (every unit in the reach is whole; the rows it skips
are older than where either walk stops), so the messages, the count and the
included chunks are the same; the rows outside the reach are reported as
left out for the budget, or for the filter that removed them, in order.

The light index, the rows read and the reach are kept per thread (in the
store's process), so the next build after an append reads only the appended
rows and extends the reach: the builder then rebuilds incrementally.
``stable`` pages the same way: its start is found from the newest chunks
and a little below where the budget runs out (:mod:`memctx._build.select_stable`),
so it reads the newest rows up to one and a half budgets, builds that reach,
and checks that the start depended on nothing below the reach's run of newest
rows (else it reads twice as many and builds again). Anything paging cannot
prove the same — other strategies, no budget, ``stable`` with
``include_only_chunk_ids`` — is built from every visible row, as before
(:mod:`._build`).
"""

from __future__ import annotations

import weakref
from collections.abc import Callable, Generator, Hashable, Iterable, Mapping, Sequence
from functools import partial
from typing import Any

import attrs

from memctx._build.builder import ContextBuilder, counts_of
from memctx._build.options import BuildOptions
from memctx._chunk import Chunk
from memctx._exceptions import StoreError
from memctx._result import (
    ContextBuildResult,
)
from memctx._state import MemoryState
from memctx.store._own_appends import OwnAppend
from memctx.store._paged_reads import FIRST_PAGE, read_ids, read_light, read_rows, read_units
from memctx.store._paged_rows import Filters, Lister, paged_exclusions
from memctx.store._paged_thread import PagedThread, Start, own_start, read_start
from memctx.typing import Tokenizer

MIN_PAGE = 16
"""The fewest rows read in a later page (sized by the tokens per row seen so far)."""
REACH_SLACK = 4
"""A kept reach is made anew once it holds this many times the rows a build needs (+1,024)."""


STABLE_WANT = 1.5
"""A ``stable`` build first reads the newest rows until their counts exceed this many
budgets (its start is found a little below where the budget runs out); twice as much
each time that was not enough."""


def pageable(options: BuildOptions) -> bool:
    """Whether a build with ``options`` can be paged (else every visible row is read):
    ``recent`` and ``stable`` with a budget, which read only the newest rows."""
    if options.budget is None:
        return False
    if options.strategy == "stable":  # chunks named far back would be read, and counted
        return options.include_only_chunk_ids is None
    return options.strategy == "recent"


@attrs.define
class Plan:
    """Which visible rows a build needs, as far as what was read so far tells."""

    read: list[int]
    """Indexes to read before the build can go on (empty: the reach is known)."""
    reach: list[int] = attrs.Factory(list)
    """Indexes of the reach, ascending (when nothing is left to read)."""
    units: list[str] = attrs.Factory(list)
    """Units whose members must be looked up first."""
    ids: list[str] = attrs.Factory(list)
    """Chunk ids to look up first (named by the options)."""

    @property
    def done(self) -> bool:
        return not (self.read or self.units or self.ids)


def plan(
    thread: PagedThread,
    options: BuildOptions,
    filters: Filters,
    count: Callable[[Chunk], int],
    want: int | None = None,
) -> Plan:
    """The reach of a build, or the rows to read first (see the module docstring).

    ``count`` counts a chunk read without a stored count, as the build would;
    the newest rows are read until their counts exceed ``want`` (default: the budget).
    """
    assert options.budget is not None
    budget, n = options.budget if want is None else want, len(thread)
    is_candidate = filters.is_candidate
    named_ids = [*options.pinned_chunk_ids, *(options.include_only_chunk_ids or ())]
    known, looked_up = thread.positions, thread.looked_up
    unknown = [i for i in dict.fromkeys(named_ids) if i not in known and i not in looked_up]
    if unknown:
        return Plan([], ids=unknown)
    # Every chunk the build may pin (a superset is safe: it is read, and not
    # counted towards the budget), with every member of its unit.
    seeds = set(thread.system) | set(thread.flagged)
    for chunk_id in options.pinned_chunk_ids:
        position = thread.position_of(chunk_id)
        if position is not None:
            seeds.add(position)
    if options.pin_pending_calls:
        seeds |= thread.pending
    chunks, counts, types = thread.chunks, thread.counts, thread.types
    if options.pin_newest:
        for i in range(n - 1, -1, -1):
            if i not in types:
                return Plan(_page(thread, i, FIRST_PAGE))
            if is_candidate(i):
                seeds.add(i)
                break
    units = thread.units
    pinned_units = _keys(units, seeds)  # their other members are pinned too
    # The chunks named by include_only_chunk_ids are read too (the build looks them up).
    named = {
        position
        for position in map(thread.position_of, options.include_only_chunk_ids or ())
        if position is not None
    }
    # The newest rows, until the counts of their unpinned candidates exceed the budget.
    total, start, measured = 0, n, 0
    for i in range(n - 1, -1, -1):
        if i not in chunks:
            rate = total // measured if measured else 0
            page = FIRST_PAGE
            if rate:
                page = max(MIN_PAGE, (budget - total) // rate * 5 // 4 + MIN_PAGE)
            return Plan(_page(thread, i, page))
        start = i
        if not is_candidate(i) or i in seeds or units[i] in pinned_units:
            continue
        tokens = counts.get(i)
        if tokens is None:
            tokens = counts[i] = count(chunks[i])
        total += tokens
        measured += 1
        if total > budget:
            break
    else:
        start = 0
    reach = set(range(start, n)) | seeds | named
    keys = _keys(units, reach)
    lookup = sorted(keys.difference(thread.members))
    if lookup:
        return Plan([], units=lookup)
    reach.update(thread.members_of(keys))
    missing = sorted(i for i in reach if i not in chunks)
    if missing:
        return Plan(missing)
    return Plan([], sorted(reach))


def _page(thread: PagedThread, newest: int, size: int) -> list[int]:
    """Up to ``size`` positions from ``newest`` down whose chunks were not read."""
    return [j for j in range(newest, max(-1, newest - size), -1) if j not in thread.chunks]


def _keys(units: Mapping[int, str | None], positions: Iterable[int]) -> set[str]:
    """The unit keys of ``positions`` that belong to a unit."""
    return {key for key in map(units.__getitem__, positions) if key is not None}


@attrs.frozen
class PagedBuilt:
    """A paged build's result and what it writes back."""

    result: ContextBuildResult
    counted: dict[int, int]
    """New counts, by sequence number."""
    reused: int
    visible: int
    read: int
    expect: tuple[object, int, int] | None = None
    """The thread's ``(created_at, batch, last_seq)`` the record must find (else the build
    is of a state the thread may no longer be in: it wrote nothing); None: no check."""


Read = tuple[Callable[..., Any], tuple[Any, ...]]
"""A read the caller runs in a transaction: ``(function, arguments after the session)``."""


def paged_build(
    kept: PagedThread | None,
    thread_id: str,
    builder: ContextBuilder,
    options: BuildOptions,
    keys: tuple[str | None, str],
    lister: Lister | None = None,
    own: Sequence[OwnAppend] = (),
) -> Generator[Read, Any, tuple[PagedThread, PagedBuilt]]:
    """Build a thread in pages: yields the reads to run, returns the thread kept and the build.

    ``lister`` reads the ids and types of the visible rows when a result's left-out
    list is first asked for; without one they are read before the build returns.
    ``own``: the appends this store noted (:mod:`._own_appends`); when they follow
    ``kept``, their rows are taken as they are, and the build's ``expect`` says which
    state of the thread it is of.
    """
    tokenizer: Tokenizer = options.tokenizer or builder.tokenizer
    tokenizer_key, renderer = keys
    counts_key: Hashable = keys if tokenizer_key is not None else ("uncached", tokenizer, renderer)
    start: Start | None = None if kept is None or not own else own_start(thread_id, kept, own)
    unread = start is not None
    if start is None:
        start = yield (read_start, (thread_id, kept, *keys))
    assert start is not None
    read = len(start.appended)
    if start.window is not None or kept is None:
        assert start.window is not None
        kept = PagedThread.from_window(start.window)
    with kept.lock:
        kept.use_counts(counts_key)
        if start.window is not None:
            newest = start.window.newest
            read += len(newest)
            positions = [kept.position_at(row.seq) for row in newest]
            stored = {r.seq: r.stored_tokens for r in newest if r.stored_tokens is not None}
            kept.add_rows(
                [p for p in positions if p is not None],
                {row.seq: row for row in newest},
                stored if tokenizer_key is not None else {},
            )
        kept.extend(start)
        built_at = kept.after_seq
        filters = Filters(kept, options)

        def count(chunk: Chunk) -> int:
            return tokenizer.count(counts_of(builder).render_chunk(chunk).segment)

        want = options.budget if options.strategy == "recent" else None
        if want is None:
            assert options.budget is not None
            want = int(options.budget * STABLE_WANT)
        found = plan(kept, options, filters, count, want)
    while True:
        while not found.done:
            if found.ids:
                rows = yield (read_ids, (thread_id, found.ids))
                with kept.lock:
                    kept.know_ids(found.ids, rows)
            elif found.units:
                rows = yield (read_units, (thread_id, found.units))
                with kept.lock:
                    kept.register_units([*rows, *((None, None, None, k) for k in found.units)])
            else:
                seqs = [kept.seq_at(i) for i in found.read]
                rows, counts = yield (read_rows, (thread_id, *keys, seqs))
                if len(rows) != len(seqs):
                    missing = sorted(set(seqs) - set(rows))
                    raise StoreError(
                        f"thread {thread_id!r}: chunk #{missing[0]} is missing from the database"
                    )
                read += len(rows)
                with kept.lock:
                    kept.add_rows(found.read, rows, counts if tokenizer_key is not None else {})
            with kept.lock:
                found = plan(kept, options, filters, count, want)
        with kept.lock:
            state, fresh = _reach_state(kept, found.reach, thread_id)
            reused = _seed(kept, builder, tokenizer, counts_key, state, fresh)
            inner = builder.build(state, options=options)
            if _covered(kept, builder, state, options, tokenizer):
                counted = _new_counts(kept, builder, tokenizer, state)
                # Rows another build added to ``kept`` meanwhile may not be in the reach:
                # then no state is claimed (the record writes nothing).
                last = built_at if kept.after_seq == built_at else -1
                expect = (kept.created_at, kept.batch, last) if unread else None
                break
            want *= 2  # the stable start looked below the rows read: read more
            found = plan(kept, options, filters, count, want)
    version = (kept.created_at, kept.batch, len(kept))
    if lister is None:
        listed = yield (read_light, (thread_id, *version))
        exclusions = paged_exclusions(kept, filters, inner, lambda: listed)
    else:
        exclusions = paged_exclusions(kept, filters, inner, partial(lister, *version))
    result = attrs.evolve(inner, exclusions=exclusions)
    return kept, PagedBuilt(result, counted, reused, len(kept), read, expect)


def _covered(
    thread: PagedThread,
    builder: ContextBuilder,
    state: MemoryState,
    options: BuildOptions,
    tokenizer: Tokenizer,
) -> bool:
    """Whether the build of the reach ``state`` is that of the whole thread.

    A ``recent`` build is (see the module docstring). A ``stable`` build is
    when its start depends only on rows of the reach's unbroken run of the
    newest rows (below it the reach holds only pinned rows and their units),
    or when that run is the whole thread.
    """
    if options.strategy != "stable":
        return True
    index = thread.reach_index
    run = len(index) - 1
    while run > 0 and index[run - 1] == index[run] - 1:
        run -= 1
    if not index or index[run] == 0:
        return True
    lowest = counts_of(builder).stable_lowest(state, options, tokenizer)
    return lowest is not None and lowest > run


def _reach_state(
    thread: PagedThread, reach: Sequence[int], thread_id: str
) -> tuple[MemoryState, int]:
    """The state of ``reach``: the kept one extended when it can be; and from which of its
    positions on it is new to the builder."""
    old, state = thread.reach_index, thread.reach
    if state is not None and len(old) <= REACH_SLACK * len(reach) + 1024:
        # The kept chunks' units must stay whole: members appended since come too.
        known = set(old)
        wanted = set(reach).union(thread.members_of(_keys(thread.units, old)))
        added = sorted(wanted - known)
        readable = all(i in thread.chunks for i in added)
        if readable and (not added or not old or added[0] > old[-1]):
            if added:
                thread.reach = state.extend(thread.chunks[i] for i in added)
                thread.reach_index = old + added
            return thread.reach, len(old)  # type: ignore[return-value]
    thread.reach = MemoryState([thread.chunks[i] for i in reach], thread_id=thread_id)
    thread.reach_index = list(reach)
    thread.seeded = weakref.WeakKeyDictionary()
    keep = set(reach)
    thread.chunks = {i: c for i, c in thread.chunks.items() if i in keep}
    thread.counts = {i: c for i, c in thread.counts.items() if i in keep}
    thread.stored &= keep
    return thread.reach, 0


def _seed(
    thread: PagedThread,
    builder: ContextBuilder,
    tokenizer: Tokenizer,
    counts_key: Hashable,
    state: MemoryState,
    fresh: int,
) -> int:
    """Seed the builder with the counts known for the reach's positions it has not seen;
    how many of the reach's counts were stored before this build."""
    seeded = thread.seeded.setdefault(builder, {})
    begin = min(fresh, seeded.get(counts_key, 0))
    counts, index = thread.counts, thread.reach_index
    seeds = {p: counts[index[p]] for p in range(begin, len(state)) if index[p] in counts}
    if seeds:
        counts_of(builder).seed_token_counts(state, tokenizer, seeds)
    seeded[counts_key] = len(state)
    stored = thread.stored
    return sum(1 for i in index if i in stored)


def _new_counts(
    thread: PagedThread, builder: ContextBuilder, tokenizer: Tokenizer, state: MemoryState
) -> dict[int, int]:
    """Counts not stored yet (the builder's and those made to page), by sequence number."""
    index, stored, counts = thread.reach_index, thread.stored, thread.counts
    for position, tokens in counts_of(builder).token_counts(state, tokenizer).items():
        counts.setdefault(index[position], tokens)
    new = [i for i in index if i in counts and i not in stored]
    stored.update(new)
    return {thread.seq_at(i): counts[i] for i in new}
