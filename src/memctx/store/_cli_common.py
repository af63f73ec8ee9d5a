"""Helpers shared by the ``memctx thread`` commands."""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import click

from memctx._cli_errors import fail, friendly_errors

if TYPE_CHECKING:
    from memctx._chunk import Chunk
    from memctx.store._store import MemoryStore

F = TypeVar("F", bound=Callable[..., Any])


friendly = friendly_errors


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


def note(message: str) -> None:
    click.echo(message, err=True)


def read_json(source: str) -> Any:
    from memctx._json import JSONTextError, parse_json_text

    raw = sys.stdin.buffer.read() if source == "-" else Path(source).read_bytes()
    try:
        return parse_json_text(raw)
    except JSONTextError as exc:
        fail(f"{source}: {exc}")


def chunks_from_json(data: Any) -> list[Chunk]:
    """Chunks from a state file, an array of chunk objects, or one chunk object."""
    from memctx.statefile import chunk_from_dict, state_from_dict

    if isinstance(data, dict) and "version" in data:
        return list(state_from_dict(data).chunks)
    if isinstance(data, list):
        return [chunk_from_dict(item, index) for index, item in enumerate(data)]
    return [chunk_from_dict(data)]


def report(store: MemoryStore, thread_id: str, batch: int) -> None:
    """Tell (on stderr) which batch a view operation started and how much is visible."""
    visible = len(store.get_current_state(thread_id))
    note(f"{thread_id}: batch {batch}, {visible} chunk(s) visible")
