"""The view commands of ``memctx thread``: truncate, clear, filter, rollback, batches."""

from __future__ import annotations

import json
from typing import Any

import click

from memctx.store._cli_common import db_option, friendly, open_store, report


def _range(ctx: click.Context, param: click.Parameter, value: str | None) -> Any:
    if value is None:
        return None
    start, sep, end = value.partition(":")
    try:
        if not sep:
            raise ValueError
        return (int(start) if start else None, int(end) if end else None)
    except ValueError:
        raise click.BadParameter(
            f"expected START:END (e.g. 2:10, :5, -3:), got {value!r}"
        ) from None


@click.command("truncate")
@click.argument("thread_id")
@click.option("--keep-first", type=int, help="Keep the first N visible chunks.")
@click.option("--keep-last", type=int, help="Keep the last N visible chunks.")
@click.option("--remove-first", type=int, help="Hide the first N visible chunks.")
@click.option("--remove-last", type=int, help="Hide the last N visible chunks.")
@click.option(
    "--range",
    "range_",
    callback=_range,
    metavar="START:END",
    help="Keep a slice of the visible chunks (END excluded).",
)
@db_option
@friendly
def truncate(thread_id: str, **options: Any) -> None:
    """Hide part of the visible chunks of THREAD_ID (a new batch; history is kept)."""
    options["range"] = options.pop("range_")
    with open_store() as store:
        report(store, thread_id, store.truncate(thread_id, **options))


@click.command("clear")
@click.argument("thread_id")
@click.option("--drop-system", is_flag=True, help="Hide the SYSTEM chunks too.")
@db_option
@friendly
def clear(thread_id: str, drop_system: bool) -> None:
    """Hide every visible chunk but the SYSTEM ones (a new batch; history is kept)."""
    with open_store() as store:
        report(store, thread_id, store.clear(thread_id, keep_system=not drop_system))


@click.command("filter")
@click.argument("thread_id")
@click.option("--role", "roles", multiple=True, help="Keep chunks rendered under this role.")
@click.option("--type", "types", multiple=True, help="Keep chunks of this ChunkType.")
@click.option("--contains", multiple=True, help="Keep chunks whose content contains this.")
@click.option("--excludes", multiple=True, help="Hide chunks whose content contains this.")
@db_option
@friendly
def filter_(
    thread_id: str,
    roles: tuple[str, ...],
    types: tuple[str, ...],
    contains: tuple[str, ...],
    excludes: tuple[str, ...],
) -> None:
    """Keep visible only the chunks that meet every criterion (a new batch)."""
    with open_store() as store:
        batch = store.filter(
            thread_id,
            roles=roles or None,
            types=types or None,
            contains=contains or None,
            excludes=excludes or None,
        )
        report(store, thread_id, batch)


@click.command("rollback")
@click.argument("thread_id")
@click.argument("batch", type=int)
@db_option
@friendly
def rollback(thread_id: str, batch: int) -> None:
    """Show again what BATCH showed, plus the chunks appended since (a new batch)."""
    with open_store() as store:
        report(store, thread_id, store.rollback(thread_id, batch))


@click.command("batches")
@click.argument("thread_id")
@db_option
@friendly
def batches(thread_id: str) -> None:
    """List the batches of THREAD_ID; the current one is marked with '*'."""
    with open_store() as store:
        for b in store.batches(thread_id):
            params = json.dumps(b.params, ensure_ascii=False)
            click.echo(f"{'*' if b.current else ' '} {b.number}\t{b.operation}\t{params}")
