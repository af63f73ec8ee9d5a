"""The two store classes the store suite runs: MemoryStore, and AsyncMemoryStore driven blocking."""

from __future__ import annotations

import asyncio
import inspect
import multiprocessing
import traceback
from collections.abc import Callable
from multiprocessing.synchronize import Event
from typing import Any

import pytest
from sqlalchemy import Engine

from memctx.store import AsyncMemoryStore, MemoryStore

APIS = ("sync", "async")
"""The store classes: MemoryStore, AsyncMemoryStore."""

BACKENDS = ["sqlite", pytest.param("postgresql", marks=pytest.mark.postgres)]
"""The databases every store test runs on."""


class Blocking:
    """An :class:`AsyncMemoryStore` driven to completion call by call, on an event loop of its own.

    The store suite is written against :class:`MemoryStore`'s methods; run
    through this, the very same tests check :class:`AsyncMemoryStore`. Every
    coroutine method is awaited where it is called; ``engine`` is the sync
    engine under the asyncio one (for event listeners).
    """

    def __init__(self, url: str) -> None:
        self._loop = asyncio.new_event_loop()
        try:
            self._store = self._loop.run_until_complete(AsyncMemoryStore.open(url))
        except BaseException:
            self._loop.close()
            raise

    @property
    def engine(self) -> Engine:
        return self._store.engine.sync_engine

    def __getattr__(self, name: str) -> Any:
        value = getattr(self._store, name)
        if not inspect.iscoroutinefunction(value):
            return value

        def call(*args: Any, **kwargs: Any) -> Any:
            return self._loop.run_until_complete(value(*args, **kwargs))

        return call

    def close(self) -> None:
        if not self._loop.is_closed():
            self._loop.run_until_complete(self._store.close())
            self._loop.close()

    def __enter__(self) -> Blocking:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()


def open_with(api: str, url: str) -> Any:
    """A store on ``url``: a MemoryStore, or an AsyncMemoryStore run blocking."""
    return MemoryStore.open(url) if api == "sync" else Blocking(url)


def _writer(
    work: Callable[[Any, int], None],
    api: str,
    url: str,
    worker: int,
    ready: Any,
    go: Event,
    errors: Any,
) -> None:
    try:
        with open_with(api, url) as store:
            ready.put(worker)
            go.wait(30)
            work(store, worker)
    except BaseException:
        errors.put(traceback.format_exc())
        raise


def run_writers(work: Callable[[Any, int], None], api: str, url: str, count: int) -> None:
    """Run ``work(store, worker)`` in ``count`` forked processes at once, each with its own store.

    The processes open their stores first, then start together; an error in
    any of them fails the caller with its traceback.
    """
    context = multiprocessing.get_context("fork")
    ready, errors, go = context.Queue(), context.Queue(), context.Event()
    processes = [
        context.Process(target=_writer, args=(work, api, url, w, ready, go, errors))
        for w in range(count)
    ]
    for process in processes:
        process.start()
    try:
        for _ in processes:
            ready.get(timeout=60)
        go.set()
        for process in processes:
            process.join(120)
    finally:
        for process in processes:
            if process.is_alive():
                process.kill()
    assert errors.empty(), errors.get()
    assert [p.exitcode for p in processes] == [0] * count
