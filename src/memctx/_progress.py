"""Progress of one long operation, told to a callback as ``(done, total)``.

The store's ``append``, ``import_snapshot`` and ``export_snapshot`` take
``on_progress=callback``: the operation counts its steps (a chunk read,
converted or written is a step) in a :class:`Progress` and calls
``callback(done, total)`` about a hundred times whatever its size — the first
time with ``done == 0``, the last with ``done == total``. Without a callback
counting costs one attribute test per step.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from typing import TypeVar

from memctx._exceptions import ArgumentError

T = TypeVar("T")

ProgressCallback = Callable[[int, int], object]
"""``callback(done, total)``: ``done`` steps of ``total`` are behind; ``done <= total``."""

_REPORTS = 100


class Progress:
    """Counts the steps of one operation; tells ``callback`` every ~1% of ``total``."""

    __slots__ = ("_callback", "_next", "done", "total")

    def __init__(
        self,
        callback: ProgressCallback | None,
        total: int = 0,
        *,
        error: type[ArgumentError] = ArgumentError,
    ) -> None:
        if callback is not None and not callable(callback):
            raise error(
                f"must be a function of (done, total), got {callback!r}", argument="on_progress"
            )
        self._callback = callback
        self.total = total
        self.done = 0
        self._next = 0

    def start(self, total: int) -> None:
        """Set the number of steps and report that none is done."""
        self.total = max(total, 0)
        self.done = 0
        self._next = 0
        self.advance(0)

    def advance(self, steps: int = 1) -> None:
        """``steps`` more are done (never counted past ``total``)."""
        if self._callback is None:
            return
        self.done = min(self.done + steps, self.total)
        if self.done >= self._next:
            self._callback(self.done, self.total)
            if self.done >= self.total:
                self._next = self.total + 1  # told that all is done: nothing more to tell
            else:
                self._next = min(self.done + max(1, self.total // _REPORTS), self.total)

    def over(self, items: Iterable[T]) -> Iterator[T]:
        """``items``, one step counted after each."""
        if self._callback is None:
            yield from items
            return
        for item in items:
            yield item
            self.advance()

    def finish(self) -> None:
        """Every step is done (steps that turned out not to be needed are skipped)."""
        if self._callback is not None and self.done < self.total:
            self.advance(self.total - self.done)


__all__ = ["Progress", "ProgressCallback"]
