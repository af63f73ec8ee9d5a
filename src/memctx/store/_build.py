"""Building a thread through the store: cached token counts in, counts and an event out.

The persisted token cache: a build through the store seeds the builder with
the counts stored for the visible chunks and stores the counts it had to
make, so a build after a restart counts only chunks that were never counted.
Counts are keyed by the chunk (its thread and sequence number: stored chunks
never change), the tokenizer's ``cache_key`` (``tiktoken:o200k_base``,
``estimate``) and a hash of the builder's
the renderer fingerprint (``counts_of(builder).renderer_fingerprint``). A tokenizer without a
``cache_key`` is not cached.

Three steps, so the build itself runs outside any transaction: read the
visible chunks and their stored counts (:func:`load_build`), build with the
counts seeded (:func:`build_loaded`, no I/O), then store the new counts and a
``context.built`` event (:func:`record_build`). The options are parsed by the
core (:func:`memctx._build.options.parse_build_options`), as ``ContextBuilder.build``
parses them.
"""

from __future__ import annotations

import functools
import hashlib
import threading
import weakref
from collections.abc import Callable, Generator
from typing import Any, TypeVar

import attrs
from sqlmodel import Session

from memctx._build.builder import ContextBuilder, counts_of
from memctx._build.options import BuildOptions
from memctx._chunk import Chunk
from memctx._exceptions import StoreArgumentError
from memctx._result import ContextBuildResult
from memctx._state import MemoryState
from memctx.store._context_ops import CONTEXT_COMPRESSED
from memctx.store._own_appends import Noted, OwnAppend, note
from memctx.store._paged import PagedBuilt, Read
from memctx.store._paged_thread import PagedThread
from memctx.store._queries import (
    check_thread_id,
    get_batch,
    load_counts,
    record_event,
    save_counts,
    thread_version,
)
from memctx.store._records import CONTEXT_BUILT
from memctx.store._row_reads import (
    appended_since,
    visible_rows,
)
from memctx.store._schema import row_to_chunk

T = TypeVar("T")


@attrs.frozen
class BuiltState:
    """The state a store built for a thread last, and what it was read from."""

    created_at: object
    batch: int
    state: MemoryState
    seqs: tuple[int, ...]
    after_seq: int = 0
    """The highest appended sequence number seen: the next build reads the rows after it
    (not after ``seqs[-1]``: a view may end with an older chunk than ones it hides)."""
    builder: weakref.ref[ContextBuilder] | None = attrs.field(default=None, eq=False)
    """The builder that built it: it knows every count stored for ``state``."""
    keys: tuple[str | None, str] | None = None
    """The keys of the stored counts (tokenizer, renderers) it was built with."""
    stored: set[int] = attrs.field(factory=set, eq=False)
    """Sequence numbers of its chunks whose count is stored under ``keys`` (the states
    extended from one another share it: it only grows)."""

    def extends_for(self, builder: ContextBuilder, keys: tuple[str | None, str]) -> bool:
        """Whether a build by ``builder`` with ``keys`` may extend this state: it then
        reads only the rows appended since, and their counts."""
        return self.builder is not None and self.builder() is builder and self.keys == keys


class BuiltStates:
    """The last state built per thread (the most recent :data:`THREADS_KEPT` threads).

    The next build of the thread, while its batch is the same, reads only the
    chunks appended since and extends that state: the builder then knows the
    history (incremental rebuilds, ``prefix_tokens_shared``).
    """

    THREADS_KEPT = 64

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._by_thread: dict[str, BuiltState] = {}
        self._paged: dict[str, PagedThread] = {}
        self._own: dict[str, list[OwnAppend]] = {}

    def get(self, thread_id: str) -> BuiltState | None:
        with self._lock:
            return self._by_thread.get(thread_id)

    def get_paged(self, thread_id: str) -> PagedThread | None:
        """What paged builds (:mod:`._paged`) keep of the thread."""
        with self._lock:
            return self._paged.get(thread_id)

    def put_paged(self, thread_id: str, kept: PagedThread) -> None:
        self._keep(self._paged, thread_id, kept)

    def noting(self, thread_id: str) -> Noted | None:
        """Where an append to the thread tells what it wrote, when a paged build of it is
        kept (:mod:`._own_appends`); None otherwise."""
        with self._lock:
            return Noted() if thread_id in self._paged else None

    def note(self, thread_id: str, noted: Noted) -> None:
        """Keep what a committed append to the thread wrote, for its next paged build."""
        if noted.value is None:
            return
        with self._lock:
            kept = self._paged.get(thread_id)
            if kept is None:
                self._own.pop(thread_id, None)
                return
            note(self._own.setdefault(thread_id, []), noted.value, kept.after_seq)

    def own_appends(self, thread_id: str) -> list[OwnAppend]:
        """The appends to the thread noted so far (:meth:`note`)."""
        with self._lock:
            return list(self._own.get(thread_id, ()))

    def put(self, thread_id: str, built: BuiltState) -> None:
        self._keep(self._by_thread, thread_id, built)

    def _keep(self, kept: dict[str, T], thread_id: str, value: T) -> None:
        """Keep ``value`` as the newest entry, dropping the oldest beyond the limit."""
        with self._lock:
            kept.pop(thread_id, None)
            kept[thread_id] = value
            while len(kept) > self.THREADS_KEPT:
                del kept[next(iter(kept))]
            for gone in self._own.keys() - self._paged.keys():
                del self._own[gone]


@attrs.frozen
class Loaded:
    """What a build of a thread reads: its visible chunks and their stored counts.

    With ``base`` (the state built last, the batch unchanged since), ``chunks``
    and ``seqs`` are only those appended after it.
    """

    thread_id: str
    created_at: object
    batch: int
    chunks: list[Chunk]
    seqs: list[int]
    cached: dict[int, int]
    base: BuiltState | None = None
    after_seq: int = 0


@attrs.frozen
class Built:
    """What a build of a thread writes back: new counts and the event payload."""

    tokenizer: str | None
    renderer: str
    counted: dict[int, int]
    payload: dict[str, Any]
    state: BuiltState | None


def builder_to_use(given: object, default: Callable[[], ContextBuilder]) -> ContextBuilder:
    """``given``, or ``default()`` when it is None; :class:`StoreArgumentError` for
    anything that is not a builder."""
    if given is None:
        return default()
    if not isinstance(given, ContextBuilder):
        raise StoreArgumentError(f"builder: must be a ContextBuilder, got {type(given).__name__}")
    return given


def tokenizer_key(tokenizer: object) -> str | None:
    """The tokenizer's ``cache_key``, or ``None`` when it has none (then nothing is cached)."""
    key = getattr(tokenizer, "cache_key", None)
    return key if isinstance(key, str) and key else None


def renderer_key(builder: ContextBuilder) -> str:
    """A short, stable name for the builder's renderer chain."""
    return _fingerprint_key(counts_of(builder).renderer_fingerprint)


@functools.lru_cache(maxsize=64)
def _fingerprint_key(fingerprint: str) -> str:
    return hashlib.sha256(fingerprint.encode("utf-8")).hexdigest()[:32]


def cache_keys(builder: ContextBuilder, options: BuildOptions) -> tuple[str | None, str]:
    """The keys of the stored counts a build uses: tokenizer (``None``: none) and renderers."""
    return tokenizer_key(options.tokenizer or builder.tokenizer), renderer_key(builder)


def load_build(
    session: Session,
    thread_id: str,
    tokenizer: str | None,
    renderer: str,
    base: BuiltState | None = None,
) -> Loaded:
    """Read the thread's visible chunks and the counts stored for them (a read transaction).

    When ``base`` is the state built last for this very thread and batch, only
    the chunks appended since are read.
    """
    check_thread_id(thread_id)
    if base is not None and base.seqs:
        version, rows, cached = appended_since(
            session, thread_id, base.after_seq, tokenizer, renderer
        )
        created_at, batch_number = version
        if base.batch == batch_number and base.created_at == created_at:
            after = max([base.after_seq, *(r.seq for r in rows[-1:])])
            chunks = [row_to_chunk(r) for r in rows]
            seqs = [r.seq for r in rows]
            return Loaded(thread_id, created_at, batch_number, chunks, seqs, cached, base, after)
    else:
        created_at, batch_number = thread_version(session, thread_id)
    batch = get_batch(session, thread_id, batch_number)
    rows = visible_rows(session, batch)
    after = max([0 if batch.view is None else batch.base_seq, *(r.seq for r in rows[-1:])])
    cached = {} if tokenizer is None else load_counts(session, thread_id, tokenizer, renderer)
    return Loaded(
        thread_id,
        created_at,
        batch_number,
        [row_to_chunk(r) for r in rows],
        [r.seq for r in rows],
        cached,
        None,
        after,
    )


def build_loaded(
    builder: ContextBuilder, loaded: Loaded, options: BuildOptions
) -> tuple[ContextBuildResult, Built]:
    """Build the loaded chunks with their stored counts seeded; no I/O."""
    tokenizer = options.tokenizer or builder.tokenizer
    key = tokenizer_key(tokenizer)
    keys = (key, renderer_key(builder))
    base = loaded.base
    if base is not None:  # the builder knows the counts of base's chunks: seed the new ones
        state = base.state.extend(loaded.chunks)
        seqs = (*base.seqs, *loaded.seqs)
        first, stored = len(base.state), base.stored
    else:
        state = MemoryState(loaded.chunks, thread_id=loaded.thread_id)
        seqs = tuple(loaded.seqs)
        first, stored = 0, set()
    seeds = {
        first + i: loaded.cached[seq] for i, seq in enumerate(loaded.seqs) if seq in loaded.cached
    }
    if key is not None:
        stored.update(seqs[p] for p in seeds)
        if seeds:
            counts_of(builder).seed_token_counts(state, tokenizer, seeds)
    reused = len(stored) if key is not None else 0
    result = builder.build(state, options=options)
    counted: dict[int, int] = {}
    if key is not None:
        for position, count in counts_of(builder).token_counts(state, tokenizer).items():
            seq = seqs[position]
            if seq not in stored:
                counted[seq] = count
    payload = build_payload(
        loaded.batch,
        options,
        result,
        visible=len(state),
        reused=reused,
        counted=len(counted),
        read=len(loaded.chunks),
    )
    built = BuiltState(
        loaded.created_at,
        loaded.batch,
        state,
        seqs,
        loaded.after_seq,
        weakref.ref(builder),
        keys,
        stored,
    )
    return result, Built(key, keys[1], counted, payload, built)


def build_payload(
    batch: int,
    options: BuildOptions,
    result: ContextBuildResult,
    *,
    visible: int,
    reused: int,
    counted: int,
    read: int,
) -> dict[str, Any]:
    """The payload of a ``context.built`` event."""
    included = len(result.included_chunk_ids)
    return {
        "batch": batch,
        "max_tokens": options.max_tokens,
        "reserve_tokens": options.reserve_tokens,
        "budget": options.budget,
        "strategy": options.strategy,
        "tokenizer": result.tokenizer_name,
        "token_count": result.token_count,
        "token_count_exact": result.token_count_exact,
        "messages": len(result.messages),
        "visible": visible,
        "included": included,
        "excluded": visible - included,
        "tokens_reused": reused,
        "tokens_counted": counted,
        "prefix_tokens_shared": result.prefix_tokens_shared,
        "chunks_read": read,
    }


def paged_built(
    builder: ContextBuilder,
    options: BuildOptions,
    kept: PagedThread,
    built: PagedBuilt,
    keys: tuple[str | None, str] | None = None,
) -> Built:
    """What a paged build (:mod:`._paged`) writes back; ``keys``: :func:`cache_keys`."""
    key, renderer = keys or cache_keys(builder, options)
    payload = build_payload(
        kept.batch,
        options,
        built.result,
        visible=built.visible,
        reused=built.reused if key is not None else 0,
        counted=len(built.counted),
        read=built.read,
    )
    return Built(key, renderer, built.counted, payload, None)


def drive(steps: Generator[Read, Any, T], run: Callable[..., Any]) -> T:
    """Run a paged build's reads, each with ``run(function, *arguments)``; its return value."""
    try:
        request = next(steps)
        while True:
            function, arguments = request
            request = steps.send(run(function, *arguments))
    except StopIteration as stop:
        return stop.value  # type: ignore[no-any-return]


def compressed_built(
    builder: ContextBuilder,
    state: MemoryState,
    batch: int,
    options: BuildOptions,
    compressors: Any,
    compress_to_fit: Any,
) -> tuple[ContextBuildResult, list[tuple[str, dict[str, Any]]]]:
    """A build with ``compressors`` / ``compress_to_fit`` of the visible ``state`` and the
    events it records: ``context.built``, and ``context.compressed`` when something was cut.

    Counts are not stored (the compressed chunks are not the thread's).
    """
    result = builder.build(
        state, options=options, compressors=compressors, compress_to_fit=compress_to_fit
    )
    payload = build_payload(
        batch, options, result, visible=len(state), reused=0, counted=0, read=len(state)
    )
    events: list[tuple[str, dict[str, Any]]] = [(CONTEXT_BUILT, payload)]
    if result.compression is not None and result.compression.changed:
        events.append((CONTEXT_COMPRESSED, result.compression.to_event()))
    return result, events


def record_events(
    session: Session, thread_id: str, events: list[tuple[str, dict[str, Any]]]
) -> None:
    """Record a build's events, in one write transaction."""
    thread_version(session, thread_id, lock=True)
    for kind, payload in events:
        record_event(session, thread_id, kind, payload)


def record_build(session: Session, thread_id: str, built: Built, *, lock: bool = True) -> None:
    """Store the new counts and the ``context.built`` event (a write transaction, whose
    thread is locked here unless ``lock`` is False: the caller locked it)."""
    if lock:
        thread_version(session, thread_id, lock=True)
    if built.tokenizer is not None:
        save_counts(session, thread_id, built.tokenizer, built.renderer, built.counted)
    record_event(session, thread_id, CONTEXT_BUILT, built.payload)
