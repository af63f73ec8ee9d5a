"""Compaction and compression running while other processes append, on SQLite and PostgreSQL.

The invariant: a view operation may only cover (drop, replace, summarise) the
chunks it saw; a chunk appended after the operation read the thread stays
visible. So at the end every appended chunk is either visible or named as
covered by a ``context.compressed`` or ``context.compacted`` event (which
list exactly the chunks each operation took away from its input).
"""

from __future__ import annotations

import multiprocessing
from collections.abc import Callable
from functools import partial
from multiprocessing.sharedctypes import Synchronized
from typing import Any

import pytest
from store_apis import run_writers

from memctx import chunks
from memctx.compaction import ExtractiveSummarizer
from memctx.compress import MaxChars, MaxChunks
from memctx.store import CONTEXT_COMPACTED, CONTEXT_COMPRESSED, MemoryStore

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(
        "fork" not in multiprocessing.get_all_start_methods(), reason="needs fork()"
    ),
]

APPENDERS = 4
APPENDS = 260  # per appender: 1,040 appends in all
THREAD = "raced"


def _append_all(store: MemoryStore, worker: int) -> None:
    for n in range(APPENDS):
        if n % 5 == 4:  # a call and its result, appended together
            store.append(
                THREAD,
                chunks.tool_call("bash", {"n": n}, call_id=f"c{worker}.{n}", id=f"w{worker}.{n}"),
                chunks.tool_result(
                    "bash", "output line\n" * 12, call_id=f"c{worker}.{n}", id=f"w{worker}.{n}r"
                ),
            )
        else:
            store.append(
                THREAD, chunks.user(f"message {n} of writer {worker} " * 4, id=f"w{worker}.{n}")
            )


def _race(
    store: MemoryStore,
    worker: int,
    finished: Synchronized[int],
    view: Callable[[MemoryStore, int], None],
) -> None:
    """Workers 0..3 append; the others run ``view(store, worker)`` until they are done."""
    if worker < APPENDERS:
        try:
            _append_all(store, worker)
        finally:
            with finished.get_lock():
                finished.value += 1
        return
    while True:
        last_round = finished.value == APPENDERS
        view(store, worker)
        if last_round:
            return


def _compact_or_compress(store: MemoryStore, worker: int) -> None:
    """Worker 4 compacts, worker 5 compresses."""
    if worker == APPENDERS:
        store.compact(THREAD, ExtractiveSummarizer(), keep_recent_tokens=300)
    else:
        store.compress(THREAD, [MaxChars(40), MaxChunks(30)])


def test_no_appended_chunk_is_hidden_by_a_concurrent_compaction_or_compression(
    store: MemoryStore, store_url: str, api: str
) -> None:
    store.create_thread(THREAD)
    finished: Any = multiprocessing.get_context("fork").Value("i", 0)

    run_writers(
        partial(_race, finished=finished, view=_compact_or_compress), api, store_url, APPENDERS + 2
    )

    history = store.history(THREAD)
    appended = {item.chunk.id for item in history if item.origin == "append"}
    assert len(appended) == APPENDERS * (APPENDS + APPENDS // 5)
    covered: set[str] = set()
    for event in store.events(THREAD, kind=CONTEXT_COMPRESSED):
        covered.update(change["chunk_id"] for change in event.payload["changes"])
    compactions = store.events(THREAD, kind=CONTEXT_COMPACTED)
    for event in compactions:
        covered.update(event.payload["covered_ids"])
    visible = set(store.get_current_state(THREAD).ids)
    hidden = appended - visible - covered
    assert sorted(hidden) == [], f"{len(hidden)} appended chunks are hidden"
    assert compactions, "no compaction ran"
    assert store.events(THREAD, kind=CONTEXT_COMPRESSED), "no compression ran"


def _summarise_own_way(store: MemoryStore, worker: int) -> None:
    """A view of the caller's own, from a state read earlier: all but the first and the
    last five chunks summarised, ``based_on`` the state read."""
    state = store.get_current_state(THREAD)
    if len(state) < 12:
        return
    covered = state[1:-5]
    summary = chunks.progress_summary(f"{len(covered)} chunks", original_count=len(covered))
    store.apply_view(  # no other view operation runs: a ViewConflictError fails the test
        THREAD,
        [state[0], summary, *state[-5:]],
        operation="summarise",
        events=[(CONTEXT_COMPACTED, {"covered_ids": list(covered.ids)})],
        based_on=state,
    )


def test_no_appended_chunk_is_hidden_by_a_concurrent_apply_view_based_on_what_it_read(
    store: MemoryStore, store_url: str, api: str
) -> None:
    store.create_thread(THREAD)
    finished: Any = multiprocessing.get_context("fork").Value("i", 0)

    run_writers(
        partial(_race, finished=finished, view=_summarise_own_way), api, store_url, APPENDERS + 1
    )

    history = store.history(THREAD)
    appended = {item.chunk.id for item in history if item.origin == "append"}
    assert len(appended) == APPENDERS * (APPENDS + APPENDS // 5)
    views = store.events(THREAD, kind=CONTEXT_COMPACTED)
    covered = {chunk_id for event in views for chunk_id in event.payload["covered_ids"]}
    hidden = appended - set(store.get_current_state(THREAD).ids) - covered
    assert sorted(hidden) == [], f"{len(hidden)} appended chunks are hidden"
    assert len(views) > 1, "no view was applied while the appends ran"
