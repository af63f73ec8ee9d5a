"""Compression and compaction of a stored thread, as view operations.

Each reads the visible chunks, computes the new list with
:func:`memctx.compress.compress` or :func:`memctx.compaction.compact`, and
makes it the visible one as one batch with its event, in one transaction
(:meth:`MemoryStore.apply_view`): the history keeps every chunk, the new
chunks join it, and ``rollback`` to the previous batch restores the view.
Nothing is written when nothing changed.

The new view is computed outside the write transaction (a summarizer may
call a model for seconds). If the thread changed meanwhile (an append,
another view operation), the work is redone on the new view, up to
:data:`ATTEMPTS` times, so an appended chunk is not hidden by a view
computed before it arrived; the check and the write are not one
transaction, so a change in the last milliseconds can still slip through.
"""

from __future__ import annotations

import asyncio
import datetime as dt
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Final, Protocol, TypeVar

from memctx._build.builder import ContextBuilder
from memctx._build.compress_report import CompressionReport, compressor_params
from memctx._chunk import Chunk
from memctx._exceptions import CompactionError, StoreError
from memctx._state import MemoryState
from memctx.compress import compress
from memctx.compress._compaction import CompactionPolicy, CompactionReport, compact
from memctx.store import _view_ops
from memctx.store._records import ThreadInfo
from memctx.typing import Compressor, Summarizer, Tokenizer

if TYPE_CHECKING:
    from memctx.policy import ContextPolicy, PolicyStep

CONTEXT_COMPRESSED: Final = "context.compressed"
"""Event kind recorded by :meth:`MemoryStore.compress` when something was cut."""
CONTEXT_COMPACTED: Final = "context.compacted"
"""Event kind recorded by :meth:`MemoryStore.compact` when a summary replaced chunks."""


ATTEMPTS: Final = 3
R = TypeVar("R")


class ThreadViews(Protocol):
    """What these operations need of a store."""

    def get_current_state(self, thread_id: str) -> MemoryState: ...

    def thread_info(self, thread_id: str) -> ThreadInfo: ...

    def apply_view(
        self,
        thread_id: str,
        chunks: Sequence[Chunk],
        *,
        operation: str,
        params: Mapping[str, Any] | None = None,
        events: Sequence[tuple[str, Mapping[str, Any]]] = (),
    ) -> int: ...


class AsyncThreadViews(Protocol):
    """What the asyncio versions need of an :class:`AsyncMemoryStore`."""

    async def get_current_state(self, thread_id: str) -> MemoryState: ...

    async def thread_info(self, thread_id: str) -> ThreadInfo: ...

    async def apply_view(
        self,
        thread_id: str,
        chunks: Sequence[Chunk],
        *,
        operation: str,
        params: Mapping[str, Any] | None = None,
        events: Sequence[tuple[str, Mapping[str, Any]]] = (),
    ) -> int: ...


Write = tuple[Sequence[Chunk], str, dict[str, Any], list[tuple[str, dict[str, Any]]]]
"""What to hand to ``apply_view``: chunks, operation, params, events."""


def _compression(
    state: MemoryState,
    steps: list[Compressor],
    tokenizer: Tokenizer | None,
    builder: ContextBuilder,
) -> tuple[CompressionReport, Write | None]:
    new, report = compress(state, steps, tokenizer=tokenizer, builder=builder)
    if not report.changed:
        return report, None
    params = {"compressors": [compressor_params(step) for step in steps]}
    return report, (new.chunks, "compress", params, [(CONTEXT_COMPRESSED, report.to_event())])


def _compaction(
    state: MemoryState,
    summarizer: Summarizer,
    keep_recent_tokens: int | None,
    policy: CompactionPolicy | None,
    budget: int | None,
    tokenizer: Tokenizer | None,
    builder: ContextBuilder,
    now: dt.datetime | None,
) -> tuple[CompactionReport, Write | None]:
    if policy is not None:
        new, report = policy.apply(
            state, summarizer, budget=budget, tokenizer=tokenizer, builder=builder, now=now
        )
        params: dict[str, Any] = {**policy.params, "budget": budget}
    else:
        assert keep_recent_tokens is not None
        new, report = compact(
            state,
            summarizer,
            keep_recent_tokens=keep_recent_tokens,
            tokenizer=tokenizer,
            builder=builder,
            now=now,
        )
        params = {"keep_recent_tokens": keep_recent_tokens}
    if not report.compacted:
        return report, None
    params["summarizer"] = getattr(summarizer, "__name__", None) or type(summarizer).__name__
    return report, (new.chunks, "compact", params, [(CONTEXT_COMPACTED, report.to_event())])


def _check_choice(keep_recent_tokens: int | None, policy: CompactionPolicy | None) -> None:
    if (keep_recent_tokens is None) == (policy is None):
        raise CompactionError("give keep_recent_tokens or policy, not both and not neither")


def _run(
    store: ThreadViews, thread_id: str, work: Callable[[MemoryState], tuple[R, Write | None]]
) -> R:
    for _ in range(ATTEMPTS):
        before = _version(store.thread_info(thread_id))
        result, write = work(store.get_current_state(thread_id))
        if _version(store.thread_info(thread_id)) == before:
            break
    if write is not None:
        chunks, operation, params, events = write
        store.apply_view(thread_id, chunks, operation=operation, params=params, events=events)
    return result


async def _run_async(
    store: AsyncThreadViews,
    thread_id: str,
    work: Callable[[MemoryState], tuple[R, Write | None]],
) -> R:
    for _ in range(ATTEMPTS):
        before = _version(await store.thread_info(thread_id))
        state = await store.get_current_state(thread_id)
        # Compressing, counting and summarising block: keep them off the event loop.
        result, write = await asyncio.to_thread(work, state)
        if _version(await store.thread_info(thread_id)) == before:
            break
    if write is not None:
        chunks, operation, params, events = write
        await store.apply_view(thread_id, chunks, operation=operation, params=params, events=events)
    return result


def compress_thread(
    store: ThreadViews,
    thread_id: str,
    compressors: Iterable[Compressor],
    *,
    tokenizer: Tokenizer | None,
    builder: ContextBuilder,
) -> CompressionReport:
    """Compress the visible chunks of ``thread_id``; write only if something was cut."""
    steps = list(compressors)
    return _run(store, thread_id, lambda state: _compression(state, steps, tokenizer, builder))


async def compress_thread_async(
    store: AsyncThreadViews,
    thread_id: str,
    compressors: Iterable[Compressor],
    *,
    tokenizer: Tokenizer | None,
    builder: ContextBuilder,
) -> CompressionReport:
    """:func:`compress_thread` for an :class:`AsyncMemoryStore`."""
    steps = list(compressors)
    return await _run_async(
        store, thread_id, lambda state: _compression(state, steps, tokenizer, builder)
    )


def compact_thread(
    store: ThreadViews,
    thread_id: str,
    summarizer: Summarizer,
    *,
    keep_recent_tokens: int | None,
    policy: CompactionPolicy | None,
    budget: int | None = None,
    tokenizer: Tokenizer | None,
    builder: ContextBuilder,
    now: dt.datetime | None,
) -> CompactionReport:
    """Compact the visible chunks of ``thread_id`` (or only when ``policy`` says it is due)."""
    _check_choice(keep_recent_tokens, policy)
    return _run(
        store,
        thread_id,
        lambda state: _compaction(
            state, summarizer, keep_recent_tokens, policy, budget, tokenizer, builder, now
        ),
    )


async def compact_thread_async(
    store: AsyncThreadViews,
    thread_id: str,
    summarizer: Summarizer,
    *,
    keep_recent_tokens: int | None,
    policy: CompactionPolicy | None,
    budget: int | None = None,
    tokenizer: Tokenizer | None,
    builder: ContextBuilder,
    now: dt.datetime | None,
) -> CompactionReport:
    """:func:`compact_thread` for an :class:`AsyncMemoryStore`."""
    _check_choice(keep_recent_tokens, policy)
    return await _run_async(
        store,
        thread_id,
        lambda state: _compaction(
            state, summarizer, keep_recent_tokens, policy, budget, tokenizer, builder, now
        ),
    )


def _version(info: ThreadInfo) -> tuple[int, int]:
    """Changes whenever the thread's view can have changed: its chunks and its batches."""
    return info.chunk_count, info.batch_count


def _step_views(step: PolicyStep) -> list[_view_ops.View]:
    """One view per change of ``step``: its chunks, operation, params and event."""
    views: list[_view_ops.View] = []
    for report, state in step.stages:
        detail = report.detail
        params: dict[str, Any] = {"policy": report.kind, "reason": report.reason}
        if isinstance(detail, CompactionReport):
            event = (CONTEXT_COMPACTED, detail.to_event())
            views.append((state.chunks, "compact", params, [event]))
        elif isinstance(detail, CompressionReport):
            params["compressors"] = [dict(p) for p in detail.compressors]
            views.append(
                (state.chunks, "compress", params, [(CONTEXT_COMPRESSED, detail.to_event())])
            )
    return views


def _conflict(thread_id: str) -> StoreError:
    return StoreError(
        f"thread {thread_id!r} kept changing its view while the policy ran ({ATTEMPTS} tries); "
        "nothing was written"
    )


def step_thread(
    store: Any, thread_id: str, policy: ContextPolicy, options: Mapping[str, Any]
) -> PolicyStep:
    """Run ``policy`` on the visible chunks of ``thread_id``; write each change as a batch."""
    for _ in range(ATTEMPTS):
        state = store.get_current_state(thread_id)
        step = policy.step(state, **options)
        views = _step_views(step)
        if not views:
            return step
        written = store._run(True, _view_ops.apply_views_on, thread_id, state.ids, views)
        if written is not None:
            return step
    raise _conflict(thread_id)


async def step_thread_async(
    store: Any, thread_id: str, policy: ContextPolicy, options: Mapping[str, Any]
) -> PolicyStep:
    """:func:`step_thread` for an :class:`AsyncMemoryStore` (the policy's ``astep``)."""
    for _ in range(ATTEMPTS):
        state = await store.get_current_state(thread_id)
        step = await policy.astep(state, **options)
        views = _step_views(step)
        if not views:
            return step
        written = await store._run(True, _view_ops.apply_views_on, thread_id, state.ids, views)
        if written is not None:
            return step
    raise _conflict(thread_id)
