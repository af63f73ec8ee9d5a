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

import bisect
import weakref
from collections.abc import Callable, Generator, Hashable, Iterable, Sequence
from typing import Any

import attrs

from memctx._build.builder import ContextBuilder, counts_of
from memctx._build.options import BuildOptions
from memctx._chunk import Chunk, ChunkType
from memctx._exceptions import StoreError
from memctx._result import (
    ContextBuildResult,
    ExclusionReason,
    Exclusions,
    LeftOutFilter,
    ReportDict,
)
from memctx._state import MemoryState
from memctx.store._paged_thread import PagedThread, Start, read_rows, read_start
from memctx.typing import Tokenizer

FIRST_PAGE = 64
"""Rows read in the first page of a thread's newest chunks."""
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
    """Indexes of the reach, ascending (when ``read`` is empty)."""


class Filters:
    """The build's filters over the light index (as :class:`memctx._build.filter.Candidates`)."""

    def __init__(self, thread: PagedThread, options: BuildOptions) -> None:
        excluded = {t.value for t in options.exclude_types}
        if not options.include_system:
            excluded.add(ChunkType.SYSTEM.value)
        if not options.include_environment:
            excluded.add(ChunkType.ENVIRONMENT.value)
        self.excluded = excluded
        self.include_system = options.include_system
        self.include_environment = options.include_environment
        self.only = (
            None if options.include_only_chunk_ids is None else set(options.include_only_chunk_ids)
        )
        self.ids, self.types = thread.ids, thread.types

    def is_candidate(self, i: int) -> bool:
        if self.only is not None and self.ids[i] not in self.only:
            return False
        return self.types[i] not in self.excluded

    def left_out_filter(self) -> LeftOutFilter:
        """These filters as a value a result holds."""
        return LeftOutFilter(
            only=None if self.only is None else frozenset(self.only),
            excluded_types=frozenset(ChunkType(kind) for kind in self.excluded),
            include_system=self.include_system,
            include_environment=self.include_environment,
        )

    def reason(self, i: int) -> ExclusionReason:
        """Why a row outside the reach is left out."""
        if self.only is not None and self.ids[i] not in self.only:
            return ExclusionReason.NOT_SELECTED
        kind = self.types[i]
        if kind not in self.excluded:
            return ExclusionReason.OVER_BUDGET
        if kind == ChunkType.SYSTEM.value and not self.include_system:
            return ExclusionReason.SYSTEM_EXCLUDED
        if kind == ChunkType.ENVIRONMENT.value and not self.include_environment:
            return ExclusionReason.ENVIRONMENT_EXCLUDED
        return ExclusionReason.TYPE_EXCLUDED


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
    # Every chunk the build may pin (a superset is safe: it is read, and not
    # counted towards the budget), with every member of its unit.
    seeds = set(thread.system) | set(thread.flagged)
    for chunk_id in options.pinned_chunk_ids:
        position = thread.position_of(chunk_id)
        if position is not None:
            seeds.add(position)
    if options.pin_pending_calls:
        seeds |= thread.pending
    if options.pin_newest:
        newest = next((i for i in range(n - 1, -1, -1) if is_candidate(i)), None)
        if newest is not None:
            seeds.add(newest)
    units = thread.units
    pinned_units = _keys(units, seeds)  # their other members are pinned too
    # The chunks named by include_only_chunk_ids are read too (the build looks them up).
    named = {
        position
        for position in map(thread.position_of, options.include_only_chunk_ids or ())
        if position is not None
    }
    # The newest rows, until the counts of their unpinned candidates exceed the budget.
    chunks, counts = thread.chunks, thread.counts
    total, start, measured = 0, n, 0
    for i in range(n - 1, -1, -1):
        if i not in chunks:
            rate = total // measured if measured else 0
            page = FIRST_PAGE
            if rate:
                page = max(MIN_PAGE, (budget - total) // rate * 5 // 4 + MIN_PAGE)
            return Plan([j for j in range(i, max(-1, i - page), -1) if j not in chunks])
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
    reach.update(thread.members_of(_keys(units, reach)))
    missing = sorted(i for i in reach if i not in chunks)
    if missing:
        return Plan(missing)
    return Plan([], sorted(reach))


def _keys(units: Sequence[str | None], positions: Iterable[int]) -> set[str]:
    """The unit keys of ``positions`` that belong to a unit."""
    return {key for key in map(units.__getitem__, positions) if key is not None}


@attrs.frozen
class PagedRows:
    """The rows of a paged build: every visible row of the thread when it was built, and
    the chunks of those it read (its reach)."""

    ids: tuple[str, ...]
    types: tuple[str, ...]
    reach: MemoryState
    reach_index: tuple[int, ...]

    def __len__(self) -> int:
        return len(self.ids)

    def id_at(self, position: int) -> str:
        return self.ids[position]

    def type_at(self, position: int) -> ChunkType:
        return ChunkType(self.types[position])

    def chunk_at(self, position: int) -> Chunk | None:
        found = bisect.bisect_left(self.reach_index, position)
        if found < len(self.reach_index) and self.reach_index[found] == position:
            return self.reach[found]
        return None

    def position_of(self, chunk_id: str) -> int | None:
        if chunk_id in self.reach:
            return self.reach_index[self.reach.index_of(chunk_id)]
        try:
            return self.ids.index(chunk_id)
        except ValueError:
            return None


def paged_exclusions(
    thread: PagedThread, filters: Filters, inner: ContextBuildResult
) -> Exclusions:
    """The left-out chunks of a paged build: those of the reach's build and every row
    outside the reach."""
    reach_index = tuple(thread.reach_index)
    sent = frozenset(reach_index[inner.state.index_of(i)] for i in inner.included_chunk_ids)
    measured = {
        i: e.tokens
        for i, e in inner.exclusions.items()
        if e.tokens is not None and not e.tokens_estimated
    }
    counts = thread.counts
    ids = tuple(thread.ids)
    for position, tokens in counts.items():
        if position not in sent and position < len(ids):
            measured.setdefault(ids[position], tokens)
    rows = PagedRows(ids, tuple(thread.types), inner.state, reach_index)
    return Exclusions(rows, sent, filters.left_out_filter(), ReportDict(measured))


@attrs.frozen
class PagedBuilt:
    """A paged build's result and what it writes back."""

    result: ContextBuildResult
    counted: dict[int, int]
    """New counts, by sequence number."""
    reused: int
    visible: int
    read: int


Read = tuple[Callable[..., Any], tuple[Any, ...]]
"""A read the caller runs in a transaction: ``(function, arguments after the session)``."""


def paged_build(
    kept: PagedThread | None,
    thread_id: str,
    builder: ContextBuilder,
    options: BuildOptions,
    keys: tuple[str | None, str],
) -> Generator[Read, Any, tuple[PagedThread, PagedBuilt]]:
    """Build a thread in pages: yields the reads to run, returns the thread kept and the build."""
    tokenizer: Tokenizer = options.tokenizer or builder.tokenizer
    tokenizer_key, renderer = keys
    counts_key: Hashable = keys if tokenizer_key is not None else ("uncached", tokenizer, renderer)
    start: Start = yield (read_start, (thread_id, None if kept is None else kept.key, *keys))
    if start.light is not None or kept is None:
        kept = PagedThread.from_light(start)
    read = len(start.appended)
    with kept.lock:
        kept.use_counts(counts_key)
        kept.extend(start)
        filters = Filters(kept, options)

        def count(chunk: Chunk) -> int:
            return tokenizer.count(counts_of(builder).render_chunk(chunk).segment)

        want = options.budget if options.strategy == "recent" else None
        if want is None:
            assert options.budget is not None
            want = int(options.budget * STABLE_WANT)
        found = plan(kept, options, filters, count, want)
    while True:
        while found.read:
            seqs = [kept.seqs[i] for i in found.read]
            rows, counts = yield (read_rows, (thread_id, *keys, seqs))
            if len(rows) != len(seqs):
                missing = sorted(set(seqs) - set(rows))
                raise StoreError(
                    f"thread {thread_id!r}: chunk #{missing[0]} is missing from the database"
                )
            read += len(rows)
            with kept.lock:
                kept.add_rows(found.read, rows, counts if tokenizer_key is not None else {})
                found = plan(kept, options, filters, count, want)
        with kept.lock:
            state, fresh = _reach_state(kept, found.reach, thread_id)
            reused = _seed(kept, builder, tokenizer, counts_key, state, fresh)
            inner = builder.build(state, options=options)
            if _covered(kept, builder, state, options, tokenizer):
                counted = _new_counts(kept, builder, tokenizer, state)
                break
            want *= 2  # the stable start looked below the rows read: read more
            found = plan(kept, options, filters, count, want)
    result = attrs.evolve(inner, exclusions=paged_exclusions(kept, filters, inner))
    return kept, PagedBuilt(result, counted, reused, len(kept), read)


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
    return {thread.seqs[i]: counts[i] for i in new}
