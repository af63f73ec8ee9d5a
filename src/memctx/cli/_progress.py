"""Progress bars for one long library call, and JSON written with a bar.

The store's ``append``, ``import_snapshot`` and ``export_snapshot`` tell an
``on_progress(done, total)`` callback how far they are; :func:`progress_bar`
gives such a callback that draws a bar on stderr. :func:`dumps_json_counted`
writes JSON exactly as ``json.dumps(data, ensure_ascii=False, indent=2)`` does
while counting the items of its large arrays, so that writing a large snapshot
or state file shows a bar too.

As for :func:`memctx.cli._support.progress`, a bar is drawn only when stderr
is a terminal, ``--quiet`` is off and the work has at least ``threshold``
steps; otherwise nothing is written, so pipes and logs stay clean.
"""

from __future__ import annotations

import contextlib
import json
import sys
from collections.abc import Callable, Iterator
from typing import Any

import click

from memctx._progress import Progress
from memctx.cli._support import quiet

OnProgress = Callable[[int, int], None]

THRESHOLD = 4000
"""Fewest steps that show a bar (a chunk is one to three steps of a store operation)."""


@contextlib.contextmanager
def progress_bar(label: str, *, threshold: int = THRESHOLD) -> Iterator[OnProgress]:
    """A ``callback(done, total)`` that draws ``label`` and a bar on stderr.

    The bar appears at the first call whose ``total`` reaches ``threshold``
    (on a terminal, without ``--quiet``) and is finished when the block ends.
    """
    bar: Any = None
    shown = False

    def update(done: int, total: int) -> None:
        nonlocal bar, shown
        if bar is None:
            if shown or total < threshold or quiet() or not sys.stderr.isatty():
                shown = True  # decided once: no bar for this block
                return
            bar = click.progressbar(length=total, label=label, file=sys.stderr)
            bar.__enter__()
        if done > bar.pos:
            bar.update(done - bar.pos)

    try:
        yield update
    finally:
        if bar is not None:
            bar.__exit__(None, None, None)


def dumps_json_with_bar(data: Any, label: str) -> str:
    """``data`` as indented JSON text (non-ASCII kept, lone surrogates escaped), with a bar
    over the items of its large arrays while it is written."""
    from memctx.statefile import escape_surrogates

    with progress_bar(label, threshold=THRESHOLD // 2) as tell:
        progress = Progress(tell)
        progress.start(count_items(data))
        text = dumps_json_counted(data, progress.advance)
        progress.finish()
    return escape_surrogates(text)


def dumps_json_counted(data: Any, on_items: Callable[[int], None]) -> str:
    """``json.dumps(data, ensure_ascii=False, indent=2)``, calling ``on_items(n)`` as the
    items of every array held by an object at the top two levels of ``data`` are written
    (about a hundred times per array, ``n`` items each).

    Those arrays (a state's ``chunks``; a snapshot's ``chunks``, ``store.history`` and
    ``store.batches``) are what makes a document large; :func:`count_items` says how
    many items the calls add up to.
    """
    return _encode(data, 0, on_items)


def count_items(data: Any) -> int:
    """How many items :func:`dumps_json_counted` counts in ``data``."""
    return _count(data, 0)


_MAX_DEPTH = 2  # objects this deep or less have their arrays counted item by item


def _count(value: Any, depth: int) -> int:
    if not isinstance(value, dict) or depth > _MAX_DEPTH:
        return 0
    if not all(isinstance(key, str) for key in value):
        return 0
    total = 0
    for item in value.values():
        if isinstance(item, list):
            total += len(item)
        else:
            total += _count(item, depth + 1)
    return total


_ENCODER = json.JSONEncoder(ensure_ascii=False, indent=2)  # what json.dumps(...) makes per call


def _dumps(value: Any, depth: int) -> str:
    text = _ENCODER.encode(value)
    # JSON text holds no raw newline inside a string: every newline is layout.
    return text.replace("\n", "\n" + "  " * depth) if depth else text


def _encode(value: Any, depth: int, on_items: Callable[[int], None]) -> str:
    if (
        not isinstance(value, dict)
        or not value
        or depth > _MAX_DEPTH
        or not all(isinstance(key, str) for key in value)
    ):
        return _dumps(value, depth)
    inner = "  " * (depth + 1)
    parts = []
    for key, item in value.items():
        name = json.dumps(key, ensure_ascii=False)
        if isinstance(item, list):
            text = _encode_array(item, depth + 1, on_items)
        else:
            text = _encode(item, depth + 1, on_items)
        parts.append(f"{inner}{name}: {text}")
    return "{\n" + ",\n".join(parts) + "\n" + "  " * depth + "}"


_PARTS = 100  # an array is encoded in this many slices, each one call of the encoder


def _encode_array(items: list[Any], depth: int, on_items: Callable[[int], None]) -> str:
    if not items:
        return "[]"
    pad = "  " * depth
    size = -(-len(items) // _PARTS)
    parts = []
    for start in range(0, len(items), size):
        part = items[start : start + size]
        text = _ENCODER.encode(part)[2:-2]  # the items' lines, without "[\n" and "\n]"
        parts.append(pad + text.replace("\n", "\n" + pad) if depth else text)
        on_items(len(part))
    return "[\n" + ",\n".join(parts) + "\n" + pad + "]"


__all__ = ["THRESHOLD", "count_items", "dumps_json_counted", "dumps_json_with_bar", "progress_bar"]
