"""Compression and compaction of a stored thread, as view operations.

Each reads the visible chunks, computes the new list with
:func:`memctx.compress.compress` or :func:`memctx.compaction.compact`, and
makes it the visible one as one batch with its event, in one transaction
(:meth:`MemoryStore.apply_view`): the history keeps every chunk, the new
chunks join it, and ``rollback`` to the previous batch restores the view.
Nothing is written when nothing changed.

The new view is computed outside the write transaction (a summarizer may
call a model for seconds) from what :func:`~._view_apply.read_view` read, and
written by :func:`~._view_apply.apply_seen_view`, which keeps visible after the
view every chunk appended since that read: an operation covers only the
chunks it saw, so an append is never hidden. When another view operation
started a batch meanwhile, the view is computed again; after
:data:`ATTEMPTS` such conflicts it is computed inside the write transaction,
the thread locked (on SQLite, the database's write lock) while it runs.
"""

from __future__ import annotations

import asyncio
import datetime as dt
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Final, Protocol, TypeVar

from sqlmodel import Session

from memctx._build.builder import ContextBuilder
from memctx._build.compress_report import CompressionReport, compressor_params
from memctx._chunk import Chunk
from memctx._exceptions import CompactionError, CompressionError, PolicyError, StoreError
from memctx._state import MemoryState
from memctx.compress import compress
from memctx.compress._compaction import CompactionPolicy, CompactionReport, compact
from memctx.store import _view_apply
from memctx.store._records import ThreadInfo
from memctx.store._view_apply import Seen, apply_seen_view, read_view
from memctx.typing import Compressor, Summarizer, Tokenizer

if TYPE_CHECKING:
    from memctx.policy import ContextPolicy, PolicyStep

CONTEXT_COMPRESSED: Final = "context.compressed"
"""Event kind recorded by :meth:`MemoryStore.compress` when something was cut."""
CONTEXT_COMPACTED: Final = "context.compacted"
"""Event kind recorded by :meth:`MemoryStore.compact` when a summary replaced chunks."""


ATTEMPTS: Final = 5
"""Computations outside the write transaction before one is done inside it."""
R = TypeVar("R")

Write = tuple[Sequence[Chunk], str, dict[str, Any], list[tuple[str, dict[str, Any]]]]
"""What to hand to ``apply_view``: chunks, operation, params, events."""
Work = Callable[[MemoryState], tuple[R, Write | None]]
"""Computes a report and, when something changed, the view to write."""


class Run(Protocol):
    """A store's ``_run``: ``operation(session, *args)`` in one transaction."""

    def __call__(self, write: bool, operation: Callable[..., R], *args: Any) -> R: ...


class AsyncRun(Protocol):
    """An asyncio store's ``_run``."""

    def __call__(self, write: bool, operation: Callable[..., R], *args: Any) -> Awaitable[R]: ...


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


def _steps(compressors: object) -> list[Compressor]:
    """The compressors, checked before the thread is read."""
    if isinstance(compressors, str | bytes) or not isinstance(compressors, Iterable):
        raise CompressionError(f"compressors must be a list of compressors, got {compressors!r}")
    steps = list(compressors)
    for step in steps:
        if not callable(step):
            raise CompressionError(f"{step!r} is not a compressor (a callable state -> state)")
    return steps


def _check_choice(keep_recent_tokens: int | None, policy: CompactionPolicy | None) -> None:
    if (keep_recent_tokens is None) == (policy is None):
        raise CompactionError("give keep_recent_tokens or policy, not both and not neither")


def _write(session: Session, thread_id: str, write: Write, seen: Seen) -> int | None:
    chunks, operation, params, events = write
    return apply_seen_view(session, thread_id, chunks, operation, params, events, seen)


def _locked(session: Session, thread_id: str, work: Work[R]) -> R:
    """Read, compute and write in one write transaction, the thread locked throughout."""
    state, seen = read_view(session, thread_id, lock=True)
    result, write = work(state)
    if write is not None:
        _write(session, thread_id, write, seen)
    return result


def _run(run: Run, thread_id: str, work: Work[R]) -> R:
    for _ in range(ATTEMPTS):
        state, seen = run(False, read_view, thread_id)
        result, write = work(state)
        if write is None or run(True, _write, thread_id, write, seen) is not None:
            return result
    done: R = run(True, _locked, thread_id, work)
    return done


async def _run_async(run: AsyncRun, thread_id: str, work: Work[R]) -> R:
    for _ in range(ATTEMPTS):
        state, seen = await run(False, read_view, thread_id)
        # Compressing, counting and summarising block: keep them off the event loop.
        result, write = await asyncio.to_thread(work, state)
        if write is None or await run(True, _write, thread_id, write, seen) is not None:
            return result
    done: R = await run(True, _locked, thread_id, work)
    return done


def compress_thread(
    run: Run,
    thread_id: str,
    compressors: Iterable[Compressor],
    *,
    tokenizer: Tokenizer | None,
    builder: ContextBuilder,
) -> CompressionReport:
    """Compress the visible chunks of ``thread_id``; write only if something was cut."""
    steps = _steps(compressors)
    return _run(run, thread_id, lambda state: _compression(state, steps, tokenizer, builder))


async def compress_thread_async(
    run: AsyncRun,
    thread_id: str,
    compressors: Iterable[Compressor],
    *,
    tokenizer: Tokenizer | None,
    builder: ContextBuilder,
) -> CompressionReport:
    """:func:`compress_thread` for an :class:`AsyncMemoryStore`."""
    steps = _steps(compressors)
    return await _run_async(
        run, thread_id, lambda state: _compression(state, steps, tokenizer, builder)
    )


def compact_thread(
    run: Run,
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
        run,
        thread_id,
        lambda state: _compaction(
            state, summarizer, keep_recent_tokens, policy, budget, tokenizer, builder, now
        ),
    )


async def compact_thread_async(
    run: AsyncRun,
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
        run,
        thread_id,
        lambda state: _compaction(
            state, summarizer, keep_recent_tokens, policy, budget, tokenizer, builder, now
        ),
    )


def _version(info: ThreadInfo) -> tuple[int, int]:
    """Changes whenever the thread's view can have changed: its chunks and its batches."""
    return info.chunk_count, info.batch_count


def _step_views(step: PolicyStep) -> list[_view_apply.View]:
    """One view per change of ``step``: its chunks, operation, params and event."""
    views: list[_view_apply.View] = []
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


def _check_policy(policy: object, method: str) -> None:
    """Refuse anything but a :class:`~memctx.policy.ContextPolicy` before reading the thread."""
    if not callable(getattr(policy, method, None)) or not hasattr(policy, "profile"):
        raise PolicyError(
            "policy", f"expected a ContextPolicy, got {type(policy).__name__} {policy!r:.80}"
        )


def step_thread(
    store: Any, thread_id: str, policy: ContextPolicy, options: Mapping[str, Any]
) -> PolicyStep:
    """Run ``policy`` on the visible chunks of ``thread_id``; write each change as a batch."""
    _check_policy(policy, "step")
    for _ in range(ATTEMPTS):
        state = store.get_current_state(thread_id)
        step = policy.step(state, **options)
        views = _step_views(step)
        if not views:
            return step
        written = store._run(True, _view_apply.apply_views_on, thread_id, state.ids, views)
        if written is not None:
            return step
    raise _conflict(thread_id)


async def step_thread_async(
    store: Any, thread_id: str, policy: ContextPolicy, options: Mapping[str, Any]
) -> PolicyStep:
    """:func:`step_thread` for an :class:`AsyncMemoryStore` (the policy's ``astep``)."""
    _check_policy(policy, "astep")
    for _ in range(ATTEMPTS):
        state = await store.get_current_state(thread_id)
        step = await policy.astep(state, **options)
        views = _step_views(step)
        if not views:
            return step
        written = await store._run(True, _view_apply.apply_views_on, thread_id, state.ids, views)
        if written is not None:
            return step
    raise _conflict(thread_id)
