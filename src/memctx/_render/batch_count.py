"""Counting a batch of texts on several threads (tiktoken encodes without holding the GIL).

A :class:`ThreadedCounter` belongs to one tokenizer: its helper threads start on
first use (anew in a forked child, which has none of its parent's threads), the
calling thread counts alongside them, and an error in any thread is raised to
the caller. Threads that did not run side by side (a machine busy with other
work) only cost, so after such a batch it counts on the calling thread alone for
a while.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Final

from memctx._exceptions import TokenizerError

Encode = Callable[[str], list[int]]

SIDE_BY_SIDE: Final = 1.25
"""CPU time over wall time below which a batch's threads are taken not to have run side by
side (measured on 2 cores: 1.6 when idle, 1.0 with one core busy elsewhere)."""

JUDGED_FROM_S: Final = 0.005
"""Batches that take less time than this say nothing of the machine (waking a helper thread
takes a part of it)."""

SERIAL_AFTER_CROWDED_S: Final = 5.0
"""Seconds a counter counts on the calling thread alone, by default, after its threads did
not run side by side."""


def default_threads() -> int:
    """Threads a tokenizer counts a batch on by default: the CPUs, at most 4."""
    return max(1, min(4, os.cpu_count() or 1))


def check_threads(threads: object) -> int:
    """``threads`` as given (a whole number of at least 1), or the default for None."""
    if threads is None:
        return default_threads()
    if type(threads) is not int or threads < 1:
        raise TokenizerError(f"threads must be a whole number of at least 1, got {threads!r}")
    return threads


def count_each(encode: Encode, texts: Sequence[str]) -> list[int]:
    """The number of tokens ``encode`` gives each of ``texts``, on this thread."""
    return [len(encode(text)) for text in texts]


class ThreadedCounter:
    """Counts batches with ``encode`` on ``threads`` threads, the calling one among them;
    on the calling thread alone for ``serial_after_crowded_s`` seconds after a batch whose
    threads did not run side by side."""

    def __init__(
        self, encode: Encode, threads: int, serial_after_crowded_s: float = SERIAL_AFTER_CROWDED_S
    ) -> None:
        self._encode = encode
        self.threads = threads
        self.serial_after_crowded_s = serial_after_crowded_s
        self._pool: tuple[int, ThreadPoolExecutor] | None = None  # (owner's pid, executor)
        self._lock = threading.Lock()
        self._serial_until = 0.0  # time.monotonic() before which batches are counted serially

    def pays(self) -> bool:
        """Whether a long batch is counted on several threads now."""
        return self.threads > 1 and time.monotonic() >= self._serial_until

    def count_many(self, texts: Sequence[str], min_chars: int) -> list[int]:
        """The counts of ``texts``, in order; on several threads when they hold at least
        ``min_chars`` characters and :meth:`pays`."""
        parts = min(len(texts), 4 * self.threads)  # small parts: a long text evens out
        if parts < 2 or not self.pays() or sum(map(len, texts)) < min_chars:
            return count_each(self._encode, texts)
        started, cpu_started = time.perf_counter(), time.process_time()
        counts = [0] * len(texts)
        left = iter(range(parts))  # the parts no thread took yet
        lock = threading.Lock()

        def count_parts() -> None:
            while True:
                with lock:
                    part = next(left, None)
                if part is None:
                    return
                counts[part::parts] = count_each(self._encode, texts[part::parts])

        helpers = [self._executor().submit(count_parts) for _ in range(self.threads - 1)]
        try:
            count_parts()  # this thread counts parts too, rather than wait idle
        finally:
            with lock:  # after an error here, the helpers take no further part
                for _ in left:
                    pass
            for helper in helpers:
                helper.result()
        took = time.perf_counter() - started
        if took >= JUDGED_FROM_S and time.process_time() - cpu_started < SIDE_BY_SIDE * took:
            self._serial_until = time.monotonic() + self.serial_after_crowded_s
        return counts

    def _executor(self) -> ThreadPoolExecutor:
        """The helper threads, started on first use (anew in a forked child)."""
        pid = os.getpid()
        pool = self._pool
        if pool is None or pool[0] != pid:
            with self._lock:
                pool = self._pool
                if pool is None or pool[0] != pid:
                    executor = ThreadPoolExecutor(
                        self.threads - 1, thread_name_prefix="memctx-count"
                    )
                    pool = self._pool = (pid, executor)
        return pool[1]
