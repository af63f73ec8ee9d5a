"""What every ``memctx`` command shares: errors, files and ``-``, notes, JSON, progress.

Rules every command follows (new commands too):

- **Errors** (:mod:`memctx.cli._errors`) are one line on stderr,
  ``memctx: error: ...``, and a non-zero exit: 2 for usage errors, 1 for the
  rest. Raise :class:`CliError` (or call :func:`fail`) for your own; a
  :class:`~memctx.MemctxError` or an ``OSError`` escaping a command becomes that
  line (:func:`error_message`), Python parameter names (``keep_first``) replaced
  by the command's options as typed (``--keep-first``). A closed stdout
  (``memctx render x.json | head -1``) ends the command quietly with status 0.
- **Files**: ``-`` is stdin for an input and stdout for an output. Read with
  :func:`read_input` (or :func:`read_json`, which names the file in its
  errors) and write with :func:`write_output` (atomic for files).
- **Data to stdout, notes to stderr**: :func:`note` for notes (silenced by
  ``--quiet``), :func:`echo_json` for JSON.
- **Progress**: wrap long loops in :func:`progress` and long single calls in
  :func:`working`; they draw only when stderr is a terminal and ``--quiet`` is off.
"""

from __future__ import annotations

import contextlib
import itertools
import json
import logging
import os
import sys
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any, TypeVar

import click

from memctx._exceptions import MemctxError
from memctx.cli._errors import (
    CliError,
    error_message,
    fail,
    friendly_errors,
    is_broken_pipe,
    option_names,
    silence_stdout,
)

F = TypeVar("F", bound=Callable[..., Any])
T = TypeVar("T")

STDIO = "-"
FILE = click.Path(dir_okay=False, allow_dash=True, path_type=str)
"""A file argument or option where ``-`` means stdin or stdout."""
_QUIET = "memctx.quiet"
_VERBOSITY = "memctx.verbosity"
_HANDLER = "memctx.log_handler"
_PREVIOUS_LEVEL = "memctx.log_level"


# -- notes and output ------------------------------------------------------------------


def quiet() -> bool:
    ctx = click.get_current_context(silent=True)
    return bool(ctx is not None and ctx.find_root().meta.get(_QUIET))


def set_quiet(ctx: click.Context, value: bool) -> None:
    ctx.find_root().meta[_QUIET] = value


def note(message: str) -> None:
    """An informational line on stderr (silenced by ``--quiet``)."""
    if not quiet():
        click.echo(message, err=True)


def dumps_json(data: Any) -> str:
    from memctx.statefile import escape_surrogates

    return escape_surrogates(json.dumps(data, ensure_ascii=False, indent=2))


def echo_json(data: Any) -> None:
    """Print ``data`` as indented JSON (non-ASCII kept) on stdout."""
    click.echo(dumps_json(data))


# -- files and "-" ---------------------------------------------------------------------


def read_input(source: str | os.PathLike[str]) -> bytes:
    """The bytes of ``source``: a file, or stdin for ``-``."""
    if os.fspath(source) == STDIO:
        return sys.stdin.buffer.read()
    return Path(source).read_bytes()


def display_name(source: str | os.PathLike[str]) -> str:
    return "<stdin>" if os.fspath(source) == STDIO else os.fspath(source)


def read_json(source: str | os.PathLike[str]) -> Any:
    """Parse the JSON in ``source`` (``-``: stdin); a syntax error names the file."""
    from memctx.statefile import parse_json

    raw = read_input(source)
    with about_file(source):
        return parse_json(raw)


@contextlib.contextmanager
def about_file(source: str | os.PathLike[str], hint: str = "") -> Iterator[None]:
    """Errors of the data read from ``source`` are reported with its name (and ``hint``)."""
    try:
        yield
    except MemctxError as exc:
        detail = error_message(exc, click.get_current_context(silent=True))
        raise CliError(f"{display_name(source)}: {detail}{hint}") from exc


_OPENAI_HINT = (
    " (this looks like an OpenAI chat transcript: convert it with "
    "'memctx import-openai {name} -o state.json')"
)


def load_state_file(source: str | os.PathLike[str]) -> Any:
    """The :class:`~memctx.MemoryState` in the state file ``source`` (``-``: stdin).

    Errors name the file; an OpenAI transcript given by mistake gets a hint
    to convert it with ``memctx import-openai``.
    """
    from memctx.statefile import state_from_dict

    data = read_json(source)
    hint = ""
    if _looks_like_openai_transcript(data):
        name = display_name(source) if os.fspath(source) != STDIO else STDIO
        hint = _OPENAI_HINT.format(name=name)
    with about_file(source, hint):
        return state_from_dict(data)


def _looks_like_openai_transcript(data: Any) -> bool:
    messages = data.get("messages") if isinstance(data, dict) and "version" not in data else data
    return (
        isinstance(messages, list)
        and bool(messages)
        and all(isinstance(m, dict) and "role" in m for m in messages)
    )


def write_output(dest: str | os.PathLike[str], text: str) -> None:
    """Write ``text`` to ``dest`` atomically, or to stdout for ``-``."""
    if os.fspath(dest) == STDIO:
        click.echo(text, nl=False)
        return
    from memctx.statefile import write_text_atomic

    write_text_atomic(Path(dest), text)


# -- progress and logging --------------------------------------------------------------


def progress(items: Iterable[T], length: int, label: str, *, threshold: int = 2000) -> Iterator[T]:
    """Iterate ``items`` with a progress bar on stderr when it is a terminal.

    No bar for fewer than ``threshold`` items, under ``--quiet``, or when stderr
    is redirected (logs and pipes stay clean).
    """
    if not _show_progress(length, threshold):
        yield from items
        return
    with click.progressbar(items, length=length, label=label, file=sys.stderr) as bar:
        yield from bar


def _show_progress(size: int, threshold: int) -> bool:
    return size >= threshold and not quiet() and sys.stderr.isatty()


@contextlib.contextmanager
def working(label: str, size: int | None = None, *, threshold: int = 2000) -> Iterator[None]:
    """Show ``label``, a spinner and the seconds spent while one long call runs.

    For work done in one library call (an atomic append, an export), where
    there is no fraction to show. Drawn on stderr only when it is a terminal,
    ``--quiet`` is off, ``size`` (when known) reaches ``threshold``, and the
    call takes more than half a second; the line is erased at the end.
    """
    if not _show_progress(threshold if size is None else size, threshold):
        yield
        return
    stream = sys.stderr
    done = threading.Event()

    def spin() -> None:
        started = time.monotonic()
        if done.wait(0.5):
            return
        for frame in itertools.cycle("|/-\\"):
            elapsed = time.monotonic() - started
            stream.write(f"\r{label} {frame} {elapsed:.0f}s")
            stream.flush()
            if done.wait(0.1):
                stream.write("\r\033[K")
                stream.flush()
                return

    spinner = threading.Thread(target=spin, name="memctx-progress", daemon=True)
    spinner.start()
    try:
        yield
    finally:
        done.set()
        spinner.join()


class _StderrHandler(logging.Handler):
    """Writes to the current ``sys.stderr`` (which tests and click may swap)."""

    def emit(self, record: logging.LogRecord) -> None:
        try:
            click.echo(self.format(record), err=True)
        except Exception:  # pragma: no cover - logging must never break the command
            self.handleError(record)


def configure_logging(ctx: click.Context) -> None:
    """Show the ``memctx`` logger on stderr for this invocation.

    Warnings by default, INFO with ``-v``, DEBUG with ``-vv``, errors only with
    ``--quiet``. Undone when the command ends, so embedding applications and
    test runs keep their own logging set-up. Called again, it adjusts the level.
    """
    root = ctx.find_root()
    verbosity = int(root.meta.get(_VERBOSITY, 0))
    level = logging.ERROR if quiet() else max(logging.DEBUG, logging.WARNING - 10 * verbosity)
    logger = logging.getLogger("memctx")
    handler = root.meta.get(_HANDLER)
    if handler is None:
        handler = _StderrHandler()
        handler.setFormatter(logging.Formatter("memctx: %(levelname)s: %(message)s"))
        previous = logger.level
        logger.addHandler(handler)
        root.meta[_HANDLER] = handler
        root.meta[_PREVIOUS_LEVEL] = previous

        def restore() -> None:
            logger.removeHandler(handler)
            logger.setLevel(previous)

        root.call_on_close(restore)
    handler.setLevel(level)
    previous = root.meta[_PREVIOUS_LEVEL]
    logger.setLevel(min(level, previous) if previous else level)


def add_verbosity(ctx: click.Context, count: int) -> None:
    root = ctx.find_root()
    root.meta[_VERBOSITY] = int(root.meta.get(_VERBOSITY, 0)) + count


__all__ = [
    "STDIO",
    "CliError",
    "about_file",
    "add_verbosity",
    "configure_logging",
    "display_name",
    "dumps_json",
    "echo_json",
    "error_message",
    "fail",
    "friendly_errors",
    "is_broken_pipe",
    "load_state_file",
    "note",
    "option_names",
    "progress",
    "quiet",
    "read_input",
    "read_json",
    "set_quiet",
    "silence_stdout",
    "working",
    "write_output",
]
