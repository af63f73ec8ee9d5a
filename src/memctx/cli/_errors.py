"""How every memctx command reports an error: one line on stderr and a non-zero exit.

``memctx: error: ...`` and exit status 1 for bad data (:class:`CliError`,
:func:`fail`); click's usage errors are printed the same way with status 2 by
the ``memctx`` group. A :class:`~memctx.MemctxError` or ``OSError`` escaping a
command becomes that line through :func:`friendly_errors` (which the group
applies to every registered command), worded by :func:`error_message`: Python
parameter names become the options as typed. A closed stdout is not an error
(:func:`is_broken_pipe`): the command ends quietly.
"""

from __future__ import annotations

import contextlib
import errno
import os
import re
import sys
from collections.abc import Callable
from functools import wraps
from typing import Any, NoReturn, TypeVar

import click

from memctx._exceptions import MemctxError

F = TypeVar("F", bound=Callable[..., Any])


class CliError(click.ClickException):
    """An error a command reports as one ``memctx: error: ...`` line (exit status 1)."""

    exit_code = 1

    def show(self, file: Any = None) -> None:
        click.echo(f"memctx: error: {self.format_message()}", err=True)


def fail(message: str) -> NoReturn:
    """Stop the command with one error line and exit status 1."""
    raise CliError(message)


def option_names(ctx: click.Context | None) -> dict[str, str]:
    """Python parameter name → the option as typed, for the command of ``ctx``."""
    names: dict[str, str] = {}
    while ctx is not None:
        for param in ctx.command.params:
            if isinstance(param, click.Option) and param.name:
                longest = max(param.opts, key=len)
                names.setdefault(param.name, longest)
        ctx = ctx.parent
    return names


def error_message(exc: BaseException, ctx: click.Context | None = None) -> str:
    """The one-line message for an error escaping a command."""
    if isinstance(exc, OSError):
        where = exc.filename if exc.filename is not None else ""
        reason = exc.strerror or str(exc)
        return f"{where}: {reason}" if where else reason
    message = str(exc).replace("\n", " ")
    names = option_names(ctx)
    option = getattr(exc, "option", None)
    if isinstance(option, str) and option in names:
        message = names[option] + message[len(option) :] if message.startswith(option) else message
    # Python identifiers of this command's options (``keep_first``) become ``--keep-first``.
    underscored = sorted((n for n in names if "_" in n), key=len, reverse=True)
    if underscored:
        pattern = re.compile(r"(?<![\w-])(" + "|".join(map(re.escape, underscored)) + r")(?!\w)")
        message = pattern.sub(lambda m: names[m.group(1)], message)
    return message


def is_broken_pipe(exc: BaseException) -> bool:
    return isinstance(exc, BrokenPipeError) or (
        isinstance(exc, OSError) and exc.errno in (errno.EPIPE, errno.EINVAL) and _stdout_closed()
    )


def _stdout_closed() -> bool:
    try:
        sys.stdout.flush()
    except (OSError, ValueError):
        return True
    return False


def silence_stdout() -> None:
    """After a closed pipe: point stdout at /dev/null so the final flush cannot fail."""
    with contextlib.suppress(OSError, ValueError, AttributeError):
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)


def friendly_errors(func: F) -> F:
    """Turn memctx errors and OS errors raised by ``func`` into :class:`CliError`.

    The ``memctx`` group does this for every command already; the decorator
    keeps a command well-behaved when it is invoked on its own.
    """

    @wraps(func)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return func(*args, **kwargs)
        except (MemctxError, OSError) as exc:
            if is_broken_pipe(exc):
                raise
            raise CliError(error_message(exc, click.get_current_context(silent=True))) from exc

    return wrapper  # type: ignore[return-value]
