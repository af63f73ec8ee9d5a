"""Timing: medians of repeated runs, with warm-up and the collector held off."""

from __future__ import annotations

import gc
import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TypeVar

T = TypeVar("T")
V = TypeVar("V")


@dataclass
class Timing:
    """Wall-clock seconds of each timed run."""

    runs: list[float] = field(default_factory=list)

    @property
    def median(self) -> float:
        return statistics.median(self.runs)

    @property
    def ms(self) -> float:
        return self.median * 1e3

    @property
    def spread(self) -> float:
        """(max - min) / median: how noisy the runs were."""
        return (max(self.runs) - min(self.runs)) / self.median if self.median else 0.0


def measure(
    run: Callable[[T], object],
    prepare: Callable[[], T],
    *,
    repeats: int,
    warmup: int = 1,
) -> Timing:
    """Time ``run(prepare())`` ``repeats`` times after ``warmup`` untimed runs.

    ``prepare`` is not timed (it makes fresh inputs: a fresh copy of a state
    for a cold build, a new chunk for an incremental one). The cyclic
    garbage collector runs before each run and is off during it, as timeit
    does, so a collection triggered by earlier work does not land in a run.
    """
    timing = Timing()
    for iteration in range(warmup + repeats):
        elapsed = timed(run, prepare())
        if iteration >= warmup:
            timing.runs.append(elapsed)
    return timing


def timed(run: Callable[[T], object], argument: T) -> float:
    """Seconds of one ``run(argument)``, the collector run before and held off during it."""
    return timed_call(lambda: run(argument))[0]


def timed_call(function: Callable[[], V]) -> tuple[float, V]:
    """Seconds of one ``function()`` and what it returned, timed as :func:`timed` times."""
    gc.collect()
    gc.disable()
    try:
        start = time.perf_counter()
        value = function()
        return time.perf_counter() - start, value
    finally:
        gc.enable()


def measure_interleaved(
    first: Callable[[T], object],
    prepare: Callable[[], T],
    second: Callable[[], object],
    *,
    repeats: int,
    warmup: int = 1,
) -> tuple[Timing, Timing]:
    """Like :func:`measure`, but time ``second()`` right after each ``first`` run.

    On a shared, noisy machine both then see the same conditions, so their
    ratio is steadier than that of two separate series.
    """
    timings = Timing(), Timing()
    for iteration in range(warmup + repeats):
        elapsed = timed(first, prepare())
        after = timed(lambda _: second(), None)
        if iteration >= warmup:
            timings[0].runs.append(elapsed)
            timings[1].runs.append(after)
    return timings


def nothing() -> None:
    """A ``prepare`` for runs that need no fresh input."""
    return None
