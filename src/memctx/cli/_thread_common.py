"""Helpers shared by the ``memctx thread`` commands."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, TypeVar

import click

from memctx.cli._support import echo_json, fail, friendly_errors, note, read_json

if TYPE_CHECKING:
    from memctx.store._store import MemoryStore

F = TypeVar("F", bound=Callable[..., Any])

friendly = friendly_errors

__all__ = [
    "db_option",
    "echo_json",
    "fail",
    "friendly",
    "note",
    "open_store",
    "read_json",
    "report",
]


def db_option(func: F) -> F:
    def remember(ctx: click.Context, param: click.Parameter, value: str | None) -> None:
        if value is not None:
            ctx.ensure_object(dict)["db"] = value

    return click.option(
        "--db",
        metavar="URL",
        expose_value=False,
        callback=remember,
        help="Database URL or SQLite file [default: $MEMCTX_DATABASE_URL, else the "
        "per-user SQLite file].",
    )(func)


@contextmanager
def open_store() -> Iterator[MemoryStore]:
    from memctx.store import MemoryStore

    ctx = click.get_current_context()
    url = None
    while ctx is not None and url is None:
        url = (ctx.obj or {}).get("db")
        ctx = ctx.parent  # type: ignore[assignment]
    with MemoryStore.open(url) as store:
        yield store


def report(store: MemoryStore, thread_id: str, batch: int, output_format: str = "text") -> None:
    """Say which batch a view operation started and how much is visible.

    A note on stderr, or ``{thread_id, batch, visible}`` on stdout for ``json``.
    """
    visible = len(store.get_current_state(thread_id))
    if output_format == "json":
        echo_json({"thread_id": thread_id, "batch": batch, "visible": visible})
    else:
        note(f"{thread_id}: batch {batch}, {visible} chunk(s) visible")
