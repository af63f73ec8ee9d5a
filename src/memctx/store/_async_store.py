"""AsyncMemoryStore: the store for asyncio applications, on SQLAlchemy's asyncio support.

It runs the very operations :class:`~memctx.store.MemoryStore` runs
(:mod:`~memctx.store._thread_ops`, :mod:`~memctx.store._view_ops`,
:mod:`~memctx.store._snapshot`, :mod:`~memctx.store._build`), each in one
transaction through ``AsyncSession.run_sync``, so the two stores share one
implementation and the same guarantees. The drivers are aiosqlite for SQLite
and psycopg 3's async mode for PostgreSQL.
"""

from __future__ import annotations

import datetime as dt
import os
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Concatenate, Literal, ParamSpec, Self, TypeVar, Unpack

from sqlalchemy.engine import URL
from sqlalchemy.exc import SQLAlchemyError
from sqlalchemy.ext.asyncio import AsyncEngine
from sqlmodel import Session
from sqlmodel.ext.asyncio.session import AsyncSession

from memctx._build.builder import ContextBuilder, create_builder
from memctx._build.compress_report import CompressionReport
from memctx._build.options import BuildKwargs, BuildOptions, parse_build_options
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
from memctx.store._context_ops import compact_thread_async, compress_thread_async, step_thread_async
from memctx.store._engine import (
    create_async_store_engine,
    database_error,
    describe,
    ensure_schema_async,
    read_engine,
    resolve_url,
    retry_busy_async,
    write_engine,
)
from memctx.store._own_appends import OwnAppend
from memctx.store._paged import PagedBuilt
from memctx.store._paged_record import record_build_if, unstored
from memctx.store._paged_thread import PagedThread
from memctx.store._records import Batch, StoredChunk, StoreEvent, ThreadInfo
from memctx.store._search import DEFAULT_LIMIT, SearchHit
from memctx.store._thread_ops import MakeChunks
from memctx.typing import Compressor, Summarizer, Tokenizer

if TYPE_CHECKING:
    from memctx.policy import ContextPolicy, PolicyStep

P = ParamSpec("P")
R = TypeVar("R")


class AsyncMemoryStore:
    """:class:`~memctx.store.MemoryStore` for asyncio: the same methods, awaited.

    Open one with ``await AsyncMemoryStore.open(url)``; close it with
    ``await store.close()`` or ``async with``. Every method of
    :class:`~memctx.store.MemoryStore` is here as a coroutine with the same
    arguments, result and guarantees (atomic, idempotent appends, gap-free
    sequences across processes, views and rollback, snapshots, events); see
    there for each one. ``append_with``'s ``make`` is a plain function: it
    runs inside the transaction and must not await. :meth:`build` builds in
    the event loop.
    """

    def __init__(self, engine: AsyncEngine, url: URL) -> None:
        """Use :meth:`open`: it checks (and creates or migrates) the schema first."""
        self._url = url
        self._engine = engine
        self._write = write_engine(engine)
        self._read = read_engine(engine)
        self._builder: ContextBuilder | None = None
        self._built_states = _build.BuiltStates()

    @classmethod
    async def open(cls, url: str | os.PathLike[str] | URL | None = None) -> Self:
        """Open the database at ``url`` (as :meth:`MemoryStore.open` does)."""
        resolved = resolve_url(url)
        engine = create_async_store_engine(resolved)
        try:
            await ensure_schema_async(engine, describe(resolved))
        except BaseException:
            await engine.dispose()
            raise
        return cls(engine, resolved)

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
    def engine(self) -> AsyncEngine:
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

    async def close(self) -> None:
        """Close every connection. The store must not be used afterwards."""
        await self._engine.dispose()

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.close()

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.url!r})"

    async def _run(
        self,
        write: bool,
        operation: Callable[Concatenate[Session, P], R],
        *args: P.args,
        **kwargs: P.kwargs,
    ) -> R:
        """Run ``operation(session, *args)`` in one transaction (see :meth:`MemoryStore._run`)."""
        bind = self._write if write else self._read

        async def attempt() -> R:
            async with (
                AsyncSession(bind, expire_on_commit=False, autoflush=False) as session,
                session.begin(),
            ):
                # sqlmodel's AsyncSession hands the operation its sync sqlmodel Session;
                # SQLAlchemy's annotation names the base class.
                return await session.run_sync(operation, *args, **kwargs)  # type: ignore[arg-type]

        try:
            return await retry_busy_async(attempt)
        except SQLAlchemyError as exc:
            raise StoreError(f"database error ({self.url}): {database_error(exc)}") from None

    # -- the same methods as MemoryStore ----------------------------------------------------

    async def create_thread(self, thread_id: str | None = None, *, exist_ok: bool = False) -> str:
        """See :meth:`MemoryStore.create_thread`."""
        if not isinstance(exist_ok, bool):
            raise StoreArgumentError(
                f"must be True or False, got {exist_ok!r}", argument="exist_ok"
            )
        try:
            return await self._run(True, _thread_ops.create_thread, thread_id)
        except ThreadExistsError:
            if not exist_ok:
                raise
            assert thread_id is not None
            return thread_id

    async def has_thread(self, thread_id: str) -> bool:
        """See :meth:`MemoryStore.has_thread`."""
        return await self._run(False, _thread_ops.has_thread, thread_id)

    async def thread_info(self, thread_id: str) -> ThreadInfo:
        """See :meth:`MemoryStore.thread_info`."""
        return await self._run(False, _thread_ops.thread_info, thread_id)

    async def list_threads(self) -> list[ThreadInfo]:
        """See :meth:`MemoryStore.list_threads`."""
        return await self._run(False, _thread_ops.list_threads)

    async def delete_thread(self, thread_id: str) -> None:
        """See :meth:`MemoryStore.delete_thread`."""
        await self._run(True, _thread_ops.delete_thread, thread_id)

    async def thread_metadata(self, thread_id: str) -> dict[str, Any]:
        """See :meth:`MemoryStore.thread_metadata`."""
        return await self._run(False, _thread_ops.thread_metadata, thread_id)

    async def update_thread_metadata(
        self, thread_id: str, values: Mapping[str, Any]
    ) -> dict[str, Any]:
        """See :meth:`MemoryStore.update_thread_metadata`."""
        return await self._run(True, _thread_ops.update_thread_metadata, thread_id, values)

    async def append(
        self,
        thread_id: str,
        *chunks: Chunk,
        thread_metadata: Mapping[str, Any] | None = None,
        on_progress: Callable[[int, int], object] | None = None,
    ) -> int:
        """See :meth:`MemoryStore.append` (``on_progress`` is called on the event loop's
        thread, between database calls)."""
        progress = Progress(on_progress, error=StoreArgumentError)
        noted = self._built_states.noting(thread_id)
        added = await self._run(
            True, _thread_ops.append, thread_id, chunks, thread_metadata, progress, noted
        )
        if noted is not None:
            self._built_states.note(thread_id, noted)
        return added

    async def append_with(self, thread_id: str, make: MakeChunks) -> int:
        """See :meth:`MemoryStore.append_with` (``make`` is a plain function)."""
        noted = self._built_states.noting(thread_id)
        added = await self._run(True, _thread_ops.append_with, thread_id, make, noted)
        if noted is not None:
            self._built_states.note(thread_id, noted)
        return added

    async def get_current_state(self, thread_id: str) -> MemoryState:
        """See :meth:`MemoryStore.get_current_state`."""
        return await self._run(False, _thread_ops.current_state, thread_id)

    async def get_all_chunks(self, thread_id: str) -> tuple[Chunk, ...]:
        """See :meth:`MemoryStore.get_all_chunks`."""
        return tuple(item.chunk for item in await self.history(thread_id))

    async def history(self, thread_id: str) -> tuple[StoredChunk, ...]:
        """See :meth:`MemoryStore.history`."""
        return await self._run(False, _thread_ops.history, thread_id)

    async def search(
        self,
        thread_id: str,
        query: str,
        *,
        limit: int = DEFAULT_LIMIT,
        types: ChunkType | str | Iterable[ChunkType | str] | None = None,
        visible: bool | None = None,
    ) -> tuple[SearchHit, ...]:
        """See :meth:`MemoryStore.search`."""
        return await self._run(False, _search.search, thread_id, query, limit, types, visible)

    async def truncate(
        self,
        thread_id: str,
        *,
        keep_first: int | None = None,
        keep_last: int | None = None,
        remove_first: int | None = None,
        remove_last: int | None = None,
        range: tuple[int | None, int | None] | None = None,
    ) -> int:
        """See :meth:`MemoryStore.truncate`."""
        given = {
            "keep_first": keep_first,
            "keep_last": keep_last,
            "remove_first": remove_first,
            "remove_last": remove_last,
            "range": range,
        }
        return await self._run(True, _view_ops.truncate, thread_id, given)

    async def insert(self, thread_id: str, position: int, *chunks: Chunk) -> int:
        """See :meth:`MemoryStore.insert`."""
        return await self._run(True, _view_ops.insert, thread_id, position, chunks)

    async def replace(self, thread_id: str, target: int | str, chunk: Chunk) -> int:
        """See :meth:`MemoryStore.replace`."""
        return await self._run(True, _view_ops.replace, thread_id, target, chunk)

    async def clear(
        self, thread_id: str, *, keep_system: bool = True, keep: str | Iterable[str] = ()
    ) -> int:
        """See :meth:`MemoryStore.clear`."""
        return await self._run(True, _view_ops.clear, thread_id, keep_system, keep)

    async def filter(
        self,
        thread_id: str,
        *,
        roles: str | Iterable[str] | None = None,
        types: ChunkType | str | Iterable[ChunkType | str] | None = None,
        contains: str | Iterable[str] | None = None,
        excludes: str | Iterable[str] | None = None,
        builder: ContextBuilder | None = None,
    ) -> int:
        """See :meth:`MemoryStore.filter`."""
        criteria = {"roles": roles, "types": types, "contains": contains, "excludes": excludes}
        role_of = _view_ops.role_function(self._builder_for(builder))
        return await self._run(True, _view_ops.filter_view, thread_id, criteria, role_of)

    async def apply_view(
        self,
        thread_id: str,
        chunks: Sequence[Chunk],
        *,
        operation: str,
        params: Mapping[str, Any] | None = None,
        events: Sequence[tuple[str, Mapping[str, Any]]] = (),
        based_on: MemoryState | Sequence[str] | None = None,
    ) -> int:
        """See :meth:`MemoryStore.apply_view`."""
        return await self._run(
            True, _view_apply.apply_view, thread_id, chunks, operation, params, events, based_on
        )

    async def compress(
        self,
        thread_id: str,
        compressors: Iterable[Compressor],
        *,
        tokenizer: Tokenizer | None = None,
        builder: ContextBuilder | None = None,
    ) -> CompressionReport:
        """See :meth:`MemoryStore.compress` (the work runs in a worker thread)."""
        return await compress_thread_async(
            self._run,
            thread_id,
            compressors,
            tokenizer=tokenizer,
            builder=self._builder_for(builder),
        )

    async def compact(
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
        """See :meth:`MemoryStore.compact` (the summarizer runs in a worker thread)."""
        return await compact_thread_async(
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

    async def rollback(self, thread_id: str, batch: int) -> int:
        """See :meth:`MemoryStore.rollback`."""
        return await self._run(True, _view_ops.rollback, thread_id, batch)

    async def batches(self, thread_id: str) -> tuple[Batch, ...]:
        """See :meth:`MemoryStore.batches`."""
        return await self._run(False, _thread_ops.batches, thread_id)

    async def export_snapshot(
        self, thread_id: str, *, on_progress: Callable[[int, int], object] | None = None
    ) -> dict[str, Any]:
        """See :meth:`MemoryStore.export_snapshot`."""
        progress = Progress(on_progress, error=StoreArgumentError)
        return await self._run(False, _snapshot.export_thread, thread_id, progress)

    async def import_snapshot(
        self,
        data: Mapping[str, Any] | str | bytes,
        *,
        thread_id: str | None = None,
        on_progress: Callable[[int, int], object] | None = None,
    ) -> str:
        """See :meth:`MemoryStore.import_snapshot`."""
        progress = Progress(on_progress, error=StoreArgumentError)
        return await self._run(True, _snapshot.import_snapshot, data, thread_id, progress)

    async def events(self, thread_id: str, kind: str | None = None) -> tuple[StoreEvent, ...]:
        """See :meth:`MemoryStore.events`."""
        return await self._run(False, _thread_ops.events, thread_id, kind)

    async def record_event(self, thread_id: str, kind: str, payload: Mapping[str, Any]) -> None:
        """See :meth:`MemoryStore.record_event`."""
        await self._run(True, _thread_ops.add_event, thread_id, kind, payload)

    async def step(self, thread_id: str, policy: ContextPolicy, **options: Any) -> PolicyStep:
        """Run ``policy`` on the thread's visible chunks (``policy.astep``; ``options``:
        ``usage``, ``overflowed``, ``now``) and return its :class:`~memctx.policy.PolicyStep`.

        Each clearing or compaction is written as a batch of its own, with its
        ``context.compressed`` or ``context.compacted`` event, all in one write
        transaction; chunks appended while the policy ran stay visible after the
        new view. :meth:`rollback` to the batch before restores the view. The step's
        ``state`` is the thread as it was read, changed by the policy.
        """
        return await step_thread_async(self, thread_id, policy, options)

    async def _paged(
        self,
        thread_id: str,
        kept: PagedThread | None,
        builder: ContextBuilder,
        parsed: BuildOptions,
        keys: tuple[str | None, str],
        own: list[OwnAppend],
    ) -> tuple[PagedThread, PagedBuilt | None]:
        """A paged build and its record (None: ``own`` was used, and the thread has changed
        since: nothing was written)."""
        steps = _paged.paged_build(kept, thread_id, builder, parsed, keys, own=own)
        try:
            function, arguments = next(steps)
            while True:
                found = await self._run(False, function, *arguments)
                function, arguments = steps.send(found)
        except StopIteration as stop:
            kept, paged = stop.value
        assert kept is not None
        built = _build.paged_built(builder, parsed, kept, paged, keys)
        if await self._run(True, record_build_if, thread_id, built, paged.expect):
            return kept, paged
        unstored(kept, paged)
        return kept, None

    async def build(
        self,
        thread_id: str,
        max_tokens: int | None = None,
        *,
        builder: ContextBuilder | None = None,
        **options: Unpack[BuildKwargs],
    ) -> ContextBuildResult:
        """See :meth:`MemoryStore.build` (the build itself runs in the event loop)."""
        builder = self._builder_for(builder)
        compressors = options.pop("compressors", None)
        compress_to_fit = options.pop("compress_to_fit", None)
        parsed = parse_build_options(max_tokens, options)
        if compressors is not None or compress_to_fit is not None:
            state, seen = await self._run(False, _view_apply.read_view, thread_id)
            compressed, events = _build.compressed_built(
                builder, state, seen.batch, parsed, compressors, compress_to_fit
            )
            await self._run(True, _build.record_events, thread_id, events)
            return compressed
        keys = _build.cache_keys(builder, parsed)
        if _paged.pageable(parsed):
            kept = self._built_states.get_paged(thread_id)
            own = self._built_states.own_appends(thread_id) if kept is not None else []
            # Rows this store appended are taken without a read; the build is recorded
            # only if the thread is still as built, else it is built from a read (and
            # so is one that failed: it may have failed for a state the thread left).
            paged: PagedBuilt | None = None
            if own:
                try:
                    found, paged = await self._paged(thread_id, kept, builder, parsed, keys, own)
                except Exception:  # a real error comes again below
                    paged = None
            if paged is None:
                found, paged = await self._paged(thread_id, kept, builder, parsed, keys, [])
            assert paged is not None
            self._built_states.put_paged(thread_id, found)
            result: ContextBuildResult = paged.result
            return result
        base = self._built_states.get(thread_id)
        if base is not None and not base.extends_for(builder, keys):
            base = None
        loaded = await self._run(False, _build.load_build, thread_id, *keys, base)
        result, built = _build.build_loaded(builder, loaded, parsed)
        await self._run(True, _build.record_build, thread_id, built)
        if built.state is not None:
            built.state.stored.update(built.counted)  # written now
            self._built_states.put(thread_id, built.state)
        return result
