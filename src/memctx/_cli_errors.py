"""How every memctx command reports an error: one line on stderr and a non-zero exit."""

from __future__ import annotations

import sys
from collections.abc import Callable
from functools import wraps
from typing import Any, NoReturn, TypeVar

import click

from memctx._exceptions import MemctxError

F = TypeVar("F", bound=Callable[..., Any])


def fail(message: str, code: int = 1) -> NoReturn:
    """Print one error line and exit with ``code``."""
    click.echo(f"memctx: error: {message}", err=True)
    sys.exit(code)


def friendly_errors(func: F) -> F:
    """Turn memctx errors and OS errors into one line and a non-zero exit."""

    @wraps(func)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return func(*args, **kwargs)
        except MemctxError as exc:
            fail(str(exc))
        except OSError as exc:
            fail(f"{exc.filename or ''}: {exc.strerror or exc}".lstrip(": "))

    return wrapper  # type: ignore[return-value]
