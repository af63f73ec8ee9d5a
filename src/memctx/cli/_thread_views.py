"""The view commands of ``memctx thread``: truncate, clear, filter, rollback, batches."""

from __future__ import annotations

import json
from typing import Any

import click

from memctx.cli._options import CHUNK_TYPES, ROLES, choice, format_option
from memctx.cli._support import echo_json, fail
from memctx.cli._thread_common import db_option, open_store, report

_CHANGE_FORMAT = format_option(
    "text", "json", help="text: a note on stderr; json: {thread_id, batch, visible} on stdout."
)
_TRUNCATE_OPTIONS = ("--keep-first", "--keep-last", "--remove-first", "--remove-last", "--range")


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
@_CHANGE_FORMAT
@db_option
def truncate(thread_id: str, output_format: str, **options: Any) -> None:
    """Hide part of the visible chunks of THREAD_ID (a new batch; history is kept)."""
    options["range"] = options.pop("range_")
    given = [name for name, value in options.items() if value is not None]
    if len(given) != 1:
        fail(f"truncate takes exactly one of {', '.join(_TRUNCATE_OPTIONS)}")
    with open_store() as store:
        report(store, thread_id, store.truncate(thread_id, **options), output_format)


@click.command("clear")
@click.argument("thread_id")
@click.option("--drop-system", is_flag=True, help="Hide the SYSTEM chunks too.")
@click.option(
    "--keep",
    "keep",
    multiple=True,
    metavar="CHUNK_ID",
    help="Show this chunk after the clear too, visible before or not (e.g. a tool description).",
)
@_CHANGE_FORMAT
@db_option
def clear(thread_id: str, drop_system: bool, keep: tuple[str, ...], output_format: str) -> None:
    """Hide every visible chunk but the SYSTEM ones (a new batch; history is kept)."""
    with open_store() as store:
        batch = store.clear(thread_id, keep_system=not drop_system, keep=keep)
        report(store, thread_id, batch, output_format)


@click.command("filter")
@click.argument("thread_id")
@click.option(
    "--role",
    "roles",
    type=choice((*ROLES, "tool")),
    multiple=True,
    help="Keep chunks rendered under this role (tool: tool and skill results).",
)
@click.option(
    "--type", "types", type=choice(CHUNK_TYPES), multiple=True, help="Keep chunks of this type."
)
@click.option("--contains", multiple=True, help="Keep chunks whose content contains this.")
@click.option("--excludes", multiple=True, help="Hide chunks whose content contains this.")
@_CHANGE_FORMAT
@db_option
def filter_(
    thread_id: str,
    roles: tuple[str, ...],
    types: tuple[str, ...],
    contains: tuple[str, ...],
    excludes: tuple[str, ...],
    output_format: str,
) -> None:
    """Keep visible only the chunks that meet every criterion (a new batch).

    Each option is repeatable: a chunk is kept when its role is one of the
    --role values, its type one of the --type values, its content contains
    every --contains and no --excludes text.
    """
    if not (roles or types or contains or excludes):
        fail("filter needs at least one of --role, --type, --contains, --excludes")
    with open_store() as store:
        batch = store.filter(
            thread_id,
            roles=roles or None,
            types=types or None,
            contains=contains or None,
            excludes=excludes or None,
        )
        report(store, thread_id, batch, output_format)


@click.command("rollback")
@click.argument("thread_id")
@click.argument("batch", type=int)
@_CHANGE_FORMAT
@db_option
def rollback(thread_id: str, batch: int, output_format: str) -> None:
    """Show again what BATCH showed, plus the chunks appended since (a new batch)."""
    with open_store() as store:
        report(store, thread_id, store.rollback(thread_id, batch), output_format)


@click.command("batches")
@click.argument("thread_id")
@format_option(
    "text",
    "json",
    help="text: number, operation, params ('*' marks the current batch); json: [{number, "
    "operation, params, created_at, current}].",
)
@db_option
def batches(thread_id: str, output_format: str) -> None:
    """List the batches of THREAD_ID; the current one is marked with '*'."""
    with open_store() as store:
        found = store.batches(thread_id)
    if output_format == "json":
        echo_json(
            [
                {
                    "number": b.number,
                    "operation": b.operation,
                    "params": b.params,
                    "created_at": b.created_at.isoformat(),
                    "current": b.current,
                }
                for b in found
            ]
        )
        return
    for b in found:
        params = json.dumps(b.params, ensure_ascii=False)
        click.echo(f"{'*' if b.current else ' '} {b.number}\t{b.operation}\t{params}")
