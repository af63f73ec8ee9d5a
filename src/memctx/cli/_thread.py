"""``memctx thread ...``: the store from the command line.

Every command takes ``--db URL`` (a database URL or a SQLite file; before or
after the command name); without it the store opens ``$MEMCTX_DATABASE_URL``
or the default SQLite file. Data goes to stdout, notes to stderr; bad input is
one ``memctx: error: ...`` line and a non-zero exit (the ``memctx`` group turns
errors escaping a command into that line: see :mod:`memctx.cli._main`). Commands
that print data take ``--format json``; the view commands print
``{thread_id, batch, visible}`` with it.

The store (and SQLAlchemy) is imported only when a ``thread`` command runs,
so the other ``memctx`` commands start as fast as before.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

import click

from memctx.cli import _thread_views
from memctx.cli._compress import register_thread_compress_commands
from memctx.cli._inspect import thread_inspect
from memctx.cli._options import (
    all_build_options,
    build_kwargs,
    format_option,
    print_build_result,
)
from memctx.cli._progress import dumps_json_with_bar, progress_bar
from memctx.cli._support import (
    STDIO,
    about_file,
    display_name,
    echo_json,
    fail,
    note,
    read_json,
    write_output,
)
from memctx.cli._thread_common import db_option, open_store, report
from memctx.cli._thread_messages import MessagesCommand, chunks_to_add, message_options
from memctx.cli._thread_search import search

if TYPE_CHECKING:
    from memctx.store._records import ThreadInfo


@click.group("thread", context_settings={"help_option_names": ["-h", "--help"]})
@db_option
def thread() -> None:
    """Threads of chunks in the persistent store (SQLite by default, or PostgreSQL)."""


def _thread_info_json(info: ThreadInfo) -> dict[str, Any]:
    return {
        "id": info.id,
        "chunks": info.chunk_count,
        "batch": info.batch,
        "created_at": info.created_at.isoformat(),
    }


@thread.command("new")
@click.argument("thread_id", required=False)
@click.option("--exist-ok", is_flag=True, help="Succeed if the thread exists already.")
@format_option("text", "json", help="text: the id; json: {id}.")
@db_option
def new_thread(thread_id: str | None, exist_ok: bool, output_format: str) -> None:
    """Create a thread (THREAD_ID, or a fresh id) and print its id."""
    with open_store() as store:
        created = store.create_thread(thread_id, exist_ok=exist_ok)
    if output_format == "json":
        echo_json({"id": created})
    else:
        click.echo(created)


@thread.command("list")
@format_option(
    "text",
    "json",
    help="text: id, chunks, batch, created, tab-separated; json: [{id, chunks, batch, "
    "created_at}].",
)
@db_option
def list_threads(output_format: str) -> None:
    """List the threads: id, chunks stored, current batch, creation time."""
    with open_store() as store:
        threads = store.list_threads()
    if output_format == "json":
        echo_json([_thread_info_json(t) for t in threads])
        return
    for t in threads:
        click.echo(
            f"{t.id}\t{t.chunk_count} chunks\tbatch {t.batch}\t{t.created_at:%Y-%m-%d %H:%M}"
        )


@thread.command("show")
@click.argument("thread_id")
@click.option("--all", "show_all", is_flag=True, help="Every stored chunk, hidden ones too.")
@format_option(
    "text",
    "json",
    help="text: each chunk's XML under its role; json: the visible chunks as a state file "
    "(with --all: every stored chunk).",
)
@db_option
def show(thread_id: str, show_all: bool, output_format: str) -> None:
    """Print the visible chunks of THREAD_ID as XML, under their roles."""
    from memctx import MemoryState, create_builder
    from memctx.statefile import dumps_state

    with open_store() as store:
        if output_format == "json":
            state = store.get_current_state(thread_id)
            if show_all:
                state = MemoryState(store.get_all_chunks(thread_id), thread_id=thread_id)
            click.echo(dumps_state(state))
            return
        state = store.get_current_state(thread_id)
        info = store.thread_info(thread_id)
        items = store.history(thread_id)
    click.echo(
        f"# thread {info.id}: batch {info.batch}, {len(state)} of {len(items)} chunks visible"
    )
    builder = create_builder()
    if not show_all:
        by_id = {item.chunk.id: item for item in items}
        items = tuple(by_id[chunk.id] for chunk in state)
    for item in items:
        role, xml = builder.render(item.chunk)
        prefix = f"#{item.seq} {'visible' if item.visible else 'hidden'} {item.origin} "
        click.echo(f"{prefix if show_all else ''}[{role}] {item.chunk.id}")
        click.echo(xml)


_CHANGE_FORMAT = format_option(
    "text", "json", help="text: a note on stderr; json: {thread_id, batch, visible} on stdout."
)


@thread.command("append", cls=MessagesCommand)
@click.argument("thread_id")
@click.argument("source", required=False, metavar="[FILE]")
@message_options
@format_option(
    "text",
    "json",
    help="text: a note on stderr; json: {thread_id, appended, already_stored, chunk_ids} "
    "on stdout.",
)
@db_option
def append(thread_id: str, source: str | None, output_format: str, **params: Any) -> None:
    """Append chunks to THREAD_ID, atomically.

    From FILE (a state file, a JSON array of chunk objects, one chunk object,
    or '-' for stdin), or messages given as options, in the order typed:
    memctx thread append t1 --user "Hi" --assistant "Hello" --user "Bye".
    """
    new = chunks_to_add(source, params)
    with open_store() as store, progress_bar(f"appending {len(new)} chunks") as tell:
        added = store.append(thread_id, *new, on_progress=tell)
    if output_format == "json":
        echo_json(
            {
                "thread_id": thread_id,
                "appended": added,
                "already_stored": len(new) - added,
                "chunk_ids": [c.id for c in new],
            }
        )
    else:
        note(f"appended {added} new chunk(s) to {thread_id} ({len(new) - added} already stored)")


@thread.command("insert", cls=MessagesCommand)
@click.argument("thread_id")
@click.argument("source", required=False, metavar="[FILE]")
@click.option(
    "--at",
    "position",
    type=int,
    required=True,
    help="Visible position the chunks go to (0: first; -1: the end).",
)
@message_options
@_CHANGE_FORMAT
@db_option
def insert(
    thread_id: str, source: str | None, position: int, output_format: str, **params: Any
) -> None:
    """Show new chunks at a visible position of THREAD_ID (a new batch; history is kept).

    The chunks come from FILE ('-': stdin) or the message options, in order.
    """
    new = chunks_to_add(source, params)
    with open_store() as store:
        report(store, thread_id, store.insert(thread_id, position, *new), output_format)


@thread.command("replace", cls=MessagesCommand)
@click.argument("thread_id")
@click.argument("source", required=False, metavar="[FILE]")
@click.option("--at", "index", type=int, help="Visible index of the chunk to replace (-1: last).")
@click.option("--chunk", "chunk_id", metavar="CHUNK_ID", help="Id of the chunk to replace.")
@message_options
@_CHANGE_FORMAT
@db_option
def replace(
    thread_id: str,
    source: str | None,
    index: int | None,
    chunk_id: str | None,
    output_format: str,
    **params: Any,
) -> None:
    """Show one new chunk in place of a visible one (a new batch; the old one stays in the
    history).

    The chunk comes from FILE ('-': stdin) or one message option; the chunk to
    replace is given by --at INDEX or --chunk CHUNK_ID.
    """
    if (index is None) == (chunk_id is None):
        fail("give exactly one of --at, --chunk")
    [chunk] = chunks_to_add(source, params, one=True)
    target: int | str = index if index is not None else str(chunk_id)
    with open_store() as store:
        report(store, thread_id, store.replace(thread_id, target, chunk), output_format)


@thread.command("build")
@click.argument("thread_id")
@all_build_options
@db_option
def build(thread_id: str, output_format: str, **params: Any) -> None:
    """Build the messages for THREAD_ID (recorded as a context.built event); report on stderr."""
    options = build_kwargs(params)
    with open_store() as store:
        result = store.build(thread_id, **options)
    print_build_result(result, output_format)


@thread.command("export")
@click.argument("thread_id")
@click.option(
    "-o",
    "--output",
    type=click.Path(dir_okay=False, allow_dash=True),
    default=STDIO,
    show_default=True,
    help="Write the snapshot here (atomically; '-': stdout).",
)
@db_option
def export(thread_id: str, output: str) -> None:
    """Print (or write) a snapshot of THREAD_ID: visible chunks, history and batches."""
    with open_store() as store, progress_bar(f"exporting {thread_id}") as tell:
        snapshot = store.export_snapshot(thread_id, on_progress=tell)
    where = "stdout" if output == STDIO else output
    text = dumps_json_with_bar(snapshot, f"writing {where}")
    write_output(output, text + "\n")
    if output != STDIO:
        note(f"wrote {thread_id} to {output}")


@thread.command("import")
@click.argument("source", metavar="FILE")
@click.option("--thread-id", default=None, help="Id of the new thread [default: the snapshot's].")
@format_option("text", "json", help="text: the new thread's id; json: {id, chunks, batch}.")
@db_option
def import_(source: str, thread_id: str | None, output_format: str) -> None:
    """Create a thread from a snapshot or state file (FILE, or '-' for stdin); print its id."""
    data = read_json(source)
    with open_store() as store:
        with about_file(source), progress_bar(f"importing {display_name(source)}") as tell:
            created = store.import_snapshot(data, thread_id=thread_id, on_progress=tell)
        info = store.thread_info(created)
    if output_format == "json":
        echo_json({"id": created, "chunks": info.chunk_count, "batch": info.batch})
    else:
        click.echo(created)


@thread.command("events")
@click.argument("thread_id")
@click.option("--kind", default=None, help="Only events of this kind (e.g. context.built).")
@format_option(
    "jsonl",
    "json",
    help="jsonl: one {id, kind, created_at, payload} object per line; json: an array of them.",
)
@db_option
def events(thread_id: str, kind: str | None, output_format: str) -> None:
    """Print the events of THREAD_ID, oldest first."""
    with open_store() as store:
        found = [
            {
                "id": e.id,
                "kind": e.kind,
                "created_at": e.created_at.isoformat(),
                "payload": e.payload,
            }
            for e in store.events(thread_id, kind)
        ]
    if output_format == "json":
        echo_json(found)
        return
    for event in found:
        click.echo(json.dumps(event, ensure_ascii=False))


@thread.command("delete")
@click.argument("thread_id")
@click.option("--yes", is_flag=True, help="Confirm: the thread and its history are deleted.")
@db_option
def delete(thread_id: str, yes: bool) -> None:
    """Delete THREAD_ID with its whole history (needs --yes)."""
    if not yes:
        fail(f"deleting {thread_id} removes its whole history; add --yes to confirm")
    with open_store() as store:
        store.delete_thread(thread_id)
    note(f"deleted {thread_id}")


for _command in (
    thread_inspect,
    _thread_views.truncate,
    _thread_views.clear,
    _thread_views.filter_,
    _thread_views.rollback,
    _thread_views.batches,
    search,
):
    thread.add_command(_command)

register_thread_compress_commands(thread)
