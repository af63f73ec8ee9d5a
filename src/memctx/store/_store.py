"""MemoryStore: threads of chunks in SQLite or PostgreSQL, safe for concurrent processes.

Each method runs one operation of :mod:`~memctx.store._thread_ops`,
:mod:`~memctx.store._view_ops` or :mod:`~memctx.store._snapshot` in one
transaction (:meth:`MemoryStore._run`); the operations check their arguments
before they write, so a refused call changes nothing.
"""

from __future__ import annotations

import datetime as dt
import os
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Concatenate, Literal, ParamSpec, Self, TypeVar, Unpack

from sqlalchemy import Connection, Engine
from sqlalchemy.engine import URL
from sqlalchemy.exc import SQLAlchemyError
from sqlmodel import Session

from memctx._build.builder import ContextBuilder, create_builder
from memctx._build.compress_report import CompressionReport
from memctx._build.options import BuildKwargs, ParsedOptions
from memctx._chunk import Chunk, ChunkType
from memctx._exceptions import StoreArgumentError, StoreError, ThreadExistsError
from memctx._progress import Progress
from memctx._result import ContextBuildResult
from memctx._state import MemoryState
from memctx.compress._compaction import CompactionPolicy, CompactionReport
from memctx.store import (
    _build,
    _paged,
    _search,
    _snapshot,
    _thread_ops,
    _view_apply,
    _view_ops,
)
from memctx.store._context_ops import compact_thread, compress_thread, step_thread
from memctx.store._engine import (
    build_record_engine,
    create_store_engine,
    database_error,
    describe,
    ensure_schema,
    in_memory,
    read_engine,
    resolve_url,
    retry_busy,
    write_engine,
)
from memctx.store._held import HeldConnection
from memctx.store._paged import PagedBuilt
from memctx.store._paged_reads import read_light
from memctx.store._paged_record import paged_in_one
from memctx.store._records import Batch, StoredChunk, StoreEvent, ThreadInfo
from memctx.store._search import DEFAULT_LIMIT, SearchHit
from memctx.store._thread_ops import MakeChunks
from memctx.typing import Compressor, Summarizer, Tokenizer

if TYPE_CHECKING:
    from memctx.policy import ContextPolicy, PolicyStep

P = ParamSpec("P")
R = TypeVar("R")


class MemoryStore:
    """Threads of chunks, persisted in SQLite (the default) or PostgreSQL.

    Open one with :meth:`open`; close it with :meth:`close` or use it as a
    context manager. One store may be used from several threads, and any
    number of processes may open the same database: appends are atomic and
    each thread's sequence numbers stay gap-free and ordered.

    A thread holds every chunk ever appended (:meth:`get_all_chunks`); the
    view operations (:meth:`truncate`, :meth:`insert`, :meth:`replace`,
    :meth:`clear`, :meth:`filter`, :meth:`apply_view`) only change which of
    them are visible (:meth:`get_current_state`), each starting a new batch
    that :meth:`rollback` can return from.
    """

    def __init__(self, url: str | os.PathLike[str] | URL | None = None) -> None:
        self._url = resolve_url(url)
        self._engine = create_store_engine(self._url)
        self._write = write_engine(self._engine)
        self._read = read_engine(self._engine)
        self._build_write = build_record_engine(self._engine)
        # PostgreSQL: paged builds run on a connection the store keeps, in autocommit.
        self._held = HeldConnection(self._build_write) if self.backend == "postgresql" else None
        self._in_memory = self._engine.dialect.name == "sqlite" and in_memory(self._url)
        self._closed = False
        self._builder: ContextBuilder | None = None
        self._built_states = _build.BuiltStates()
        self._parse_options = ParsedOptions()
        try:
            ensure_schema(self._engine, describe(self._url))
        except BaseException:
            self._engine.dispose()
            raise

    @classmethod
    def open(cls, url: str | os.PathLike[str] | URL | None = None) -> Self:
        """Open (creating or migrating the tables if needed) the database at ``url``.

        ``url`` is a SQLAlchemy URL (``sqlite:///path.db``,
        ``postgresql+psycopg://user@host/db``) or a path to a SQLite file.
        Without one: ``$MEMCTX_DATABASE_URL``, else the SQLite file at
        :func:`default_database_path`. A database written by an older memctx
        is migrated in place, in one transaction; one written by a newer
        memctx raises :class:`~memctx.SchemaVersionError`.
        """
        return cls(url)

    # -- the database ---------------------------------------------------------------------

    @property
    def url(self) -> str:
        """The database URL, without its password."""
        return describe(self._url)

    @property
    def backend(self) -> Literal["sqlite", "postgresql"]:
        """Which database this store uses."""
        return "postgresql" if self._engine.dialect.name == "postgresql" else "sqlite"

    @property
    def engine(self) -> Engine:
        """The SQLAlchemy engine (for inspection; write through the store's methods)."""
        return self._engine

    @property
    def builder(self) -> ContextBuilder:
        """The builder :meth:`build` and :meth:`filter` use when given none."""
        if self._builder is None:
            self._builder = create_builder()
        return self._builder

    def _builder_for(self, builder: ContextBuilder | None) -> ContextBuilder:
        """``builder``, or :attr:`builder` when None; anything else is refused."""
        return _build.builder_to_use(builder, lambda: self.builder)

    def close(self) -> None:
        """Close every connection. The store must not be used afterwards (a build's
        left-out list, read when first asked for, is still read: it opens and closes a
        connection of its own)."""
        self._closed = True
        if self._held is not None:
            self._held.close()
        self._engine.dispose()
        self._build_write.engine.dispose()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.url!r})"

    def _run(
        self,
        write: bool | Engine,
        operation: Callable[Concatenate[Session, P], R],
        *args: P.args,
        **kwargs: P.kwargs,
    ) -> R:
        """Run ``operation(session, *args)`` in one transaction, committed when it returns,
        rolled back if it raises; run again while SQLite is busy (see :func:`retry_busy`).
        ``write`` is True for a write transaction, or the engine to write with."""
        bind = write if isinstance(write, Engine) else self._write if write else self._read

        def attempt() -> R:
            with (
                Session(bind, expire_on_commit=False, autoflush=False) as session,
                session.begin(),
            ):
                return operation(session, *args, **kwargs)

        try:
            return retry_busy(attempt)
        except SQLAlchemyError as exc:
            raise StoreError(f"database error ({self.url}): {database_error(exc)}") from None

    def _run_plain(
        self,
        engine: Engine,
        operation: Callable[Concatenate[Connection, P], R],
        *args: P.args,
        **kwargs: P.kwargs,
    ) -> R:
        """:meth:`_run` on a connection without a session (the plain statements of a paged
        build: no ORM state to set up and tear down)."""

        def attempt() -> R:
            if self._held is not None:  # PostgreSQL: no BEGIN, nothing to commit
                with self._held.use() as connection:
                    return operation(connection, *args, **kwargs)
            with engine.connect() as connection, connection.begin():
                return operation(connection, *args, **kwargs)

        try:
            return retry_busy(attempt)
        except SQLAlchemyError as exc:
            raise StoreError(f"database error ({self.url}): {database_error(exc)}") from None

    # -- threads --------------------------------------------------------------------------

    def create_thread(self, thread_id: str | None = None, *, exist_ok: bool = False) -> str:
        """Create a thread and return its id (``thread_<hex>`` when not given).

        An existing id raises :class:`~memctx.ThreadExistsError` unless ``exist_ok``.
        """
        if not isinstance(exist_ok, bool):
            raise StoreArgumentError(
                f"must be True or False, got {exist_ok!r}", argument="exist_ok"
            )
        try:
            return self._run(True, _thread_ops.create_thread, thread_id)
        except ThreadExistsError:
            if not exist_ok:
                raise
            assert thread_id is not None
            return thread_id

    def has_thread(self, thread_id: str) -> bool:
        """Whether the thread exists."""
        return self._run(False, _thread_ops.has_thread, thread_id)

    def thread_info(self, thread_id: str) -> ThreadInfo:
        """The thread's summary; :class:`~memctx.ThreadNotFoundError` if there is none."""
        return self._run(False, _thread_ops.thread_info, thread_id)

    def list_threads(self) -> list[ThreadInfo]:
        """Every thread, oldest first."""
        return self._run(False, _thread_ops.list_threads)

    def delete_thread(self, thread_id: str) -> None:
        """Delete the thread with all its chunks, batches, events and cached counts."""
        self._run(True, _thread_ops.delete_thread, thread_id)

    def thread_metadata(self, thread_id: str) -> dict[str, Any]:
        """A copy of the thread's metadata (a JSON object; ``{}`` until some is set)."""
        return self._run(False, _thread_ops.thread_metadata, thread_id)

    def update_thread_metadata(self, thread_id: str, values: Mapping[str, Any]) -> dict[str, Any]:
        """Merge ``values`` into the thread's metadata (key by key, atomically); return it all.

        Values are JSON values and read back with the same types. A key
        given replaces the stored value of that key; other keys are kept.
        """
        return self._run(True, _thread_ops.update_thread_metadata, thread_id, values)

    # -- chunks ---------------------------------------------------------------------------

    def append(
        self,
        thread_id: str,
        *chunks: Chunk,
        thread_metadata: Mapping[str, Any] | None = None,
        on_progress: Callable[[int, int], object] | None = None,
    ) -> int:
        """Append ``chunks`` in one transaction; return how many were new.

        Idempotent on chunk id: a chunk stored already is skipped, so
        retrying an append is safe, from this process or a restarted one.
        The same chunk is one with the same id, type, role, action,
        subtype, content, metadata and priority, whatever its creation time
        (the stored chunk, and its ``created_at``, win). A *different*
        chunk under a stored id raises :class:`~memctx.ChunkConflictError`
        and nothing of the call is stored; content ``1`` and ``1.0`` (or
        reordered keys) render differently, so they differ. New chunks are
        visible at the end of the view. ``thread_metadata`` is merged into
        the thread's metadata in the same transaction.

        ``on_progress(done, total)`` is called about a hundred times while
        the chunks are checked and written (two steps per chunk), the last
        time with ``done == total``; an exception it raises aborts the append
        and nothing is stored.
        """
        progress = Progress(on_progress, error=StoreArgumentError)
        noted = self._built_states.noting(thread_id)
        added = self._run(
            True, _thread_ops.append, thread_id, chunks, thread_metadata, progress, noted
        )
        if noted is not None:
            self._built_states.note(thread_id, noted)
        return added

    def append_with(self, thread_id: str, make: MakeChunks) -> int:
        """Append what ``make`` returns, deciding it under the thread's write lock.

        ``make(length, metadata)`` is called inside the write transaction
        with the number of chunks in the thread's history and a copy of its
        metadata, and returns ``(chunks, metadata_update)``: the chunks are
        appended (as :meth:`append` does) and the update (or ``None``)
        merged into the metadata, in that transaction. No other writer of
        the thread, in any process, runs between the call and the commit,
        so ``make`` can number chunks (``msg-{length + 1}``) or advance a
        state kept in the metadata without gaps or lost updates. An
        exception from ``make`` propagates and nothing is written. Returns
        how many chunks were new.

        ``make`` is called once: the lock is taken before it is called, so the
        transaction is never run again after it returned. Only a ``make`` that
        itself meets a busy SQLite database (it uses the database through a
        connection of its own, which this transaction's lock blocks) is
        called again, with the thread as it is then, when the transaction is
        run again.
        """
        noted = self._built_states.noting(thread_id)
        added = self._run(True, _thread_ops.append_with, thread_id, make, noted)
        if noted is not None:
            self._built_states.note(thread_id, noted)
        return added

    def get_current_state(self, thread_id: str) -> MemoryState:
        """The visible chunks of the thread, in order, as a :class:`~memctx.MemoryState`."""
        return self._run(False, _thread_ops.current_state, thread_id)

    def get_all_chunks(self, thread_id: str) -> tuple[Chunk, ...]:
        """Every chunk ever stored in the thread, visible or not, in the order they were stored."""
        return tuple(item.chunk for item in self.history(thread_id))

    def history(self, thread_id: str) -> tuple[StoredChunk, ...]:
        """Every stored chunk with its sequence number, origin, batch and visibility."""
        return self._run(False, _thread_ops.history, thread_id)

    def search(
        self,
        thread_id: str,
        query: str,
        *,
        limit: int = DEFAULT_LIMIT,
        types: ChunkType | str | Iterable[ChunkType | str] | None = None,
        visible: bool | None = None,
    ) -> tuple[SearchHit, ...]:
        """The thread's chunks that hold ``query``'s words, best first, at most ``limit``.

        Searches the whole history: chunks compacted, cleared or truncated
        away are found too (``visible=False``: only those the current view
        hides; ``True``: only those it shows). ``types`` keeps chunks of
        those :class:`~memctx.ChunkType`\\ s. Any text is a query (searched as
        words, never as syntax); one without a word (blank, punctuation)
        finds nothing. Chunks holding the words as a phrase rank first, then
        those holding all of them, then by BM25 (see :class:`SearchHit`).
        Bad arguments raise :class:`~memctx.StoreArgumentError`.
        """
        return self._run(False, _search.search, thread_id, query, limit, types, visible)

    # -- views ----------------------------------------------------------------------------

    def truncate(
        self,
        thread_id: str,
        *,
        keep_first: int | None = None,
        keep_last: int | None = None,
        remove_first: int | None = None,
        remove_last: int | None = None,
        range: tuple[int | None, int | None] | None = None,
    ) -> int:
        """Show only part of the visible chunks; return the new batch.

        Give exactly one of ``keep_first``/``keep_last``/``remove_first``/
        ``remove_last`` (counts) or ``range=(start, end)`` (a slice of the
        visible chunks; ``end`` excluded, negative counts from the end).
        """
        given = {
            "keep_first": keep_first,
            "keep_last": keep_last,
            "remove_first": remove_first,
            "remove_last": remove_last,
            "range": range,
        }
        return self._run(True, _view_ops.truncate, thread_id, given)

    def insert(self, thread_id: str, position: int, *chunks: Chunk) -> int:
        """Store ``chunks`` and show them at visible ``position`` (``-1``: the end).

        Return the new batch. A chunk stored already (the same value) is
        shown rather than stored twice; one that is visible already is a
        :class:`~memctx.ViewOperationError`.
        """
        return self._run(True, _view_ops.insert, thread_id, position, chunks)

    def replace(self, thread_id: str, target: int | str, chunk: Chunk) -> int:
        """Show ``chunk`` in place of the visible chunk ``target`` (an index or a chunk id).

        The replaced chunk stays in the history. ``chunk`` needs an id of its
        own (a thread's ids are unique). Return the new batch.
        """
        return self._run(True, _view_ops.replace, thread_id, target, chunk)

    def clear(
        self, thread_id: str, *, keep_system: bool = True, keep: str | Iterable[str] = ()
    ) -> int:
        """Hide every visible chunk, or every one but the SYSTEM chunks; return the new batch.

        ``keep`` names chunks (ids) the cleared view shows too, first, whether
        they were visible or not: a tool description set up once (seed 001's
        ``可用工具:`` message) that every clear brings back, say. An id the
        thread does not hold is a :class:`~memctx.ChunkNotFoundError`.
        """
        return self._run(True, _view_ops.clear, thread_id, keep_system, keep)

    def filter(
        self,
        thread_id: str,
        *,
        roles: str | Iterable[str] | None = None,
        types: ChunkType | str | Iterable[ChunkType | str] | None = None,
        contains: str | Iterable[str] | None = None,
        excludes: str | Iterable[str] | None = None,
        builder: ContextBuilder | None = None,
    ) -> int:
        """Keep visible only the chunks that meet every criterion given; return the new batch.

        ``roles``: the chat role the chunk is rendered under (by ``builder``'s
        renderers), or ``tool`` for a tool or skill result, as the providers'
        native tool calls send it (seed 001: ``roles=["user", "assistant"]``
        drops the system chunks and the tool results); ``types``:
        :class:`~memctx.ChunkType`\\ s; ``contains``: texts that must all
        occur in the content; ``excludes``: texts none of which may occur.
        """
        criteria = {"roles": roles, "types": types, "contains": contains, "excludes": excludes}
        role_of = _view_ops.role_function(self._builder_for(builder))
        return self._run(True, _view_ops.filter_view, thread_id, criteria, role_of)

    def apply_view(
        self,
        thread_id: str,
        chunks: Sequence[Chunk],
        *,
        operation: str,
        params: Mapping[str, Any] | None = None,
        events: Sequence[tuple[str, Mapping[str, Any]]] = (),
        based_on: MemoryState | Sequence[str] | None = None,
    ) -> int:
        """Make ``chunks`` the visible list, in that order, as one new batch; return it.

        The building block of view operations of your own (compression,
        compaction): a chunk the thread holds already (same id) must be
        equal to the stored one, else :class:`~memctx.ChunkConflictError`,
        and is shown again; a new chunk is stored in the history (origin
        ``view``). ``operation`` and ``params`` (JSON) describe the batch,
        and ``events`` (``(kind, payload)`` pairs) are recorded with it,
        all in one transaction. Chunks appended later are visible after the
        view; :meth:`rollback` returns to the previous batch.

        ``based_on`` is the state the view was computed from (the
        :meth:`get_current_state` you read, or its chunk ids): the view then
        covers only those chunks, and the chunks visible after them, appended
        since you read, stay visible after the view. When the thread's
        visible chunks no longer start with them (another view operation
        changed it), nothing is written and :class:`~memctx.ViewConflictError`
        is raised: read the state and compute the view again. Without
        ``based_on`` the view replaces whatever is visible when it is
        written, chunks appended after your read included.
        """
        return self._run(
            True, _view_apply.apply_view, thread_id, chunks, operation, params, events, based_on
        )

    def rollback(self, thread_id: str, batch: int) -> int:
        """Show again what ``batch`` showed, plus the chunks appended since; return the new batch.

        The rollback is itself a batch, so it can be rolled back too.
        """
        return self._run(True, _view_ops.rollback, thread_id, batch)

    def batches(self, thread_id: str) -> tuple[Batch, ...]:
        """The thread's batches, oldest first."""
        return self._run(False, _thread_ops.batches, thread_id)

    # -- snapshots, events, builds --------------------------------------------------------

    def export_snapshot(
        self, thread_id: str, *, on_progress: Callable[[int, int], object] | None = None
    ) -> dict[str, Any]:
        """The thread (visible chunks, history, batches, metadata) as a versioned JSON document.

        ``on_progress(done, total)`` is told as the stored chunks are read and
        converted, as :meth:`append` tells it.
        """
        progress = Progress(on_progress, error=StoreArgumentError)
        return self._run(False, _snapshot.export_thread, thread_id, progress)

    def import_snapshot(
        self,
        data: Mapping[str, Any] | str | bytes,
        *,
        thread_id: str | None = None,
        on_progress: Callable[[int, int], object] | None = None,
    ) -> str:
        """Create a thread from a snapshot (a document or its JSON text); return its id.

        The id is ``thread_id``, else the snapshot's own. The whole snapshot
        is checked first: a corrupt or unsupported one raises
        :class:`~memctx.StateFileError` and nothing is written.
        ``on_progress(done, total)`` is told as the chunks are checked and
        written, as :meth:`append` tells it.
        """
        progress = Progress(on_progress, error=StoreArgumentError)
        return self._run(True, _snapshot.import_snapshot, data, thread_id, progress)

    def events(self, thread_id: str, kind: str | None = None) -> tuple[StoreEvent, ...]:
        """The thread's events (only those of ``kind`` when given), oldest first."""
        return self._run(False, _thread_ops.events, thread_id, kind)

    def record_event(self, thread_id: str, kind: str, payload: Mapping[str, Any]) -> None:
        """Record an event of your own (e.g. ``context.compressed``) with a JSON payload."""
        self._run(True, _thread_ops.add_event, thread_id, kind, payload)

    def compress(
        self,
        thread_id: str,
        compressors: Iterable[Compressor],
        *,
        tokenizer: Tokenizer | None = None,
        builder: ContextBuilder | None = None,
    ) -> CompressionReport:
        """Compress the visible chunks (a view operation; see :mod:`memctx.compress`).

        Starts a batch and records a ``context.compressed`` event only when
        something was cut; :meth:`rollback` restores the view.
        """
        return compress_thread(
            self._run,
            thread_id,
            compressors,
            tokenizer=tokenizer,
            builder=self._builder_for(builder),
        )

    def compact(
        self,
        thread_id: str,
        summarizer: Summarizer,
        *,
        keep_recent_tokens: int | None = None,
        policy: CompactionPolicy | None = None,
        budget: int | None = None,
        tokenizer: Tokenizer | None = None,
        builder: ContextBuilder | None = None,
        now: dt.datetime | None = None,
    ) -> CompactionReport:
        """Replace the older visible chunks by a summary (a view operation; see
        :mod:`memctx.compaction`), keeping ``keep_recent_tokens`` — or only when
        ``policy`` says it is due. Records ``context.compacted`` when it did.
        """
        return compact_thread(
            self._run,
            thread_id,
            summarizer,
            keep_recent_tokens=keep_recent_tokens,
            policy=policy,
            budget=budget,
            tokenizer=tokenizer,
            builder=self._builder_for(builder),
            now=now,
        )

    def step(self, thread_id: str, policy: ContextPolicy, **options: Any) -> PolicyStep:
        """Run ``policy`` on the thread's visible chunks (``policy.step``; ``options``:
        ``usage``, ``overflowed``, ``now``) and return its :class:`~memctx.policy.PolicyStep`.

        Each clearing or compaction is written as a batch of its own, with its
        ``context.compressed`` or ``context.compacted`` event, all in one write
        transaction; chunks appended while the policy ran stay visible after the
        new view. :meth:`rollback` to the batch before restores the view. The step's
        ``state`` is the thread as it was read, changed by the policy.
        """
        return step_thread(self, thread_id, policy, options)

    def build(
        self,
        thread_id: str,
        max_tokens: int | None = None,
        *,
        builder: ContextBuilder | None = None,
        **options: Unpack[BuildKwargs],
    ) -> ContextBuildResult:
        """Build the thread's visible chunks, as :meth:`ContextBuilder.build` does.

        Token counts stored by earlier builds are reused and new ones stored
        (per tokenizer ``cache_key`` and renderer chain), and a
        ``context.built`` event records the budget, the token count and how
        many chunks were included and left out. With ``compressors`` or
        ``compress_to_fit`` the visible chunks are compressed first (the
        thread's view is not changed: :meth:`compress` does that) and a
        ``context.compressed`` event records what was cut, when anything was.
        """
        builder = self._builder_for(builder)
        compressors = options.pop("compressors", None)
        compress_to_fit = options.pop("compress_to_fit", None)
        parsed = self._parse_options(max_tokens, options)
        if compressors is not None or compress_to_fit is not None:
            state, seen = self._run(False, _view_apply.read_view, thread_id)
            result, events = _build.compressed_built(
                builder, state, seen.batch, parsed, compressors, compress_to_fit
            )
            self._run(True, _build.record_events, thread_id, events)
            return result
        keys = _build.cache_keys(builder, parsed)
        if _paged.pageable(parsed):
            kept = self._built_states.get_paged(thread_id)

            def lister(created_at: object, batch: int, length: int) -> tuple[list[str], list[str]]:
                listed = self._run(False, read_light, thread_id, created_at, batch, length)
                if self._closed:  # asked after close: leave no connection open
                    self._engine.dispose()
                return listed

            own = self._built_states.own_appends(thread_id) if kept is not None else []
            listed = None if self._in_memory else lister
            # Rows this store appended are taken without a read; the build is recorded
            # only if the thread is still as built, else it is built from a read (and
            # so is one that failed: it may have failed for a state the thread left).
            paged: PagedBuilt | None = None
            if own:
                try:
                    found, paged = self._run_plain(
                        self._build_write, paged_in_one, thread_id, kept, builder, parsed,
                        keys, listed, own,
                    )  # fmt: skip
                except Exception:  # the build of a state the thread may have left (its
                    paged = None  # batch changed meanwhile...): a real error comes again
            if paged is None:
                found, paged = self._run_plain(
                    self._build_write, paged_in_one, thread_id, kept, builder, parsed, keys,
                    listed,
                )  # fmt: skip
            assert paged is not None
            self._built_states.put_paged(thread_id, found)
            return paged.result
        base = self._built_states.get(thread_id)
        if base is not None and not base.extends_for(builder, keys):
            base = None
        loaded = self._run(False, _build.load_build, thread_id, *keys, base)
        result, built = _build.build_loaded(builder, loaded, parsed)
        self._run(True, _build.record_build, thread_id, built)
        if built.state is not None:
            built.state.stored.update(built.counted)  # written now
            self._built_states.put(thread_id, built.state)
        return result
