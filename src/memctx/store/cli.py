"""``memctx thread ...``: the store from the command line.

Every command takes ``--db URL`` (a database URL or a SQLite file; before or
after the command name); without it the store opens ``$MEMCTX_DATABASE_URL``
or the default SQLite file. Data goes to stdout, notes to stderr; bad input is
one ``memctx: error: ...`` line and a non-zero exit.

The store (and SQLAlchemy) is imported only when a ``thread`` command runs,
so the other ``memctx`` commands start as fast as before.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

import click

from memctx._cli_errors import fail
from memctx._cli_inspect import thread_inspect
from memctx._cli_options import build_options, print_build_result
from memctx.store import _cli_views
from memctx.store._cli_common import (
    chunks_from_json,
    db_option,
    friendly,
    note,
    open_store,
    read_json,
)

if TYPE_CHECKING:
    from memctx._chunk import Chunk


@click.group("thread", context_settings={"help_option_names": ["-h", "--help"]})
@db_option
def thread() -> None:
    """Threads of chunks in the persistent store (SQLite by default, or PostgreSQL)."""


@thread.command("new")
@click.argument("thread_id", required=False)
@click.option("--exist-ok", is_flag=True, help="Succeed if the thread exists already.")
@db_option
@friendly
def new_thread(thread_id: str | None, exist_ok: bool) -> None:
    """Create a thread (THREAD_ID, or a fresh id) and print its id."""
    with open_store() as store:
        click.echo(store.create_thread(thread_id, exist_ok=exist_ok))


@thread.command("list")
@click.option("--format", "output_format", type=click.Choice(["text", "json"]), default="text")
@db_option
@friendly
def list_threads(output_format: str) -> None:
    """List the threads: id, chunks stored, current batch, creation time."""
    with open_store() as store:
        threads = store.list_threads()
    if output_format == "json":
        click.echo(
            json.dumps(
                [
                    {
                        "id": t.id,
                        "chunks": t.chunk_count,
                        "batch": t.batch,
                        "created_at": t.created_at.isoformat(),
                    }
                    for t in threads
                ],
                ensure_ascii=False,
                indent=2,
            )
        )
        return
    for t in threads:
        click.echo(
            f"{t.id}\t{t.chunk_count} chunks\tbatch {t.batch}\t{t.created_at:%Y-%m-%d %H:%M}"
        )


@thread.command("show")
@click.argument("thread_id")
@click.option("--all", "show_all", is_flag=True, help="Every stored chunk, hidden ones too.")
@click.option(
    "--format",
    "output_format",
    type=click.Choice(["text", "json"]),
    default="text",
    help="json: the visible chunks as a state file.",
)
@db_option
@friendly
def show(thread_id: str, show_all: bool, output_format: str) -> None:
    """Print the visible chunks of THREAD_ID as XML, under their roles."""
    from memctx import create_builder
    from memctx.statefile import dumps_state

    with open_store() as store:
        state = store.get_current_state(thread_id)
        if output_format == "json":
            click.echo(dumps_state(state))
            return
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


@thread.command("append")
@click.argument("thread_id")
@click.argument("source", required=False, metavar="[FILE]")
@click.option("--user", "user_text", help="Append a user message with this text.")
@click.option("--assistant", "assistant_text", help="Append an assistant message.")
@click.option("--system", "system_text", help="Append system context.")
@db_option
@friendly
def append(
    thread_id: str,
    source: str | None,
    user_text: str | None,
    assistant_text: str | None,
    system_text: str | None,
) -> None:
    """Append chunks to THREAD_ID.

    From FILE (a state file, a JSON array of chunk objects, or '-' for stdin),
    or one message given with --user, --assistant or --system.
    """
    from memctx import chunks as make

    factories: dict[str, Callable[[str], Chunk]] = {
        "user": make.user,
        "assistant": make.assistant,
        "system": make.system,
    }
    texts = {"user": user_text, "assistant": assistant_text, "system": system_text}
    given = [(name, text) for name, text in texts.items() if text is not None]
    if (source is None) == (not given) or len(given) > 1:
        fail("give either FILE or one of --user, --assistant, --system")
    if source is not None:
        new = chunks_from_json(read_json(source))
    else:
        name, text = given[0]
        new = [factories[name](text)]
    with open_store() as store:
        added = store.append(thread_id, *new)
    note(f"appended {added} new chunk(s) to {thread_id} ({len(new) - added} already stored)")


@thread.command("build")
@click.argument("thread_id")
@build_options
@db_option
@friendly
def build(
    thread_id: str,
    max_tokens: int | None,
    reserve_tokens: int,
    model: str,
    system_prompt: str | None,
    strategy: str,
    output_format: str,
) -> None:
    """Build the messages for THREAD_ID (recorded as a context.built event); report on stderr."""
    from memctx import create_tokenizer

    tokenizer = create_tokenizer(model)
    with open_store() as store:
        result = store.build(
            thread_id,
            max_tokens=max_tokens,
            reserve_tokens=reserve_tokens,
            tokenizer=tokenizer,
            system_prompt=system_prompt,
            strategy=strategy,
        )
    print_build_result(result, output_format)


@thread.command("export")
@click.argument("thread_id")
@click.option(
    "-o",
    "--output",
    type=click.Path(dir_okay=False, path_type=Path),
    help="Write the snapshot here (atomically) instead of to stdout.",
)
@db_option
@friendly
def export(thread_id: str, output: Path | None) -> None:
    """Print (or write) a snapshot of THREAD_ID: visible chunks, history and batches."""
    from memctx.statefile import write_text_atomic

    with open_store() as store:
        text = json.dumps(store.export_snapshot(thread_id), ensure_ascii=False, indent=2)
    if output is None:
        click.echo(text)
    else:
        write_text_atomic(output, text + "\n")
        note(f"wrote {thread_id} to {output}")


@thread.command("import")
@click.argument("source", metavar="FILE")
@click.option("--thread-id", default=None, help="Id of the new thread [default: the snapshot's].")
@db_option
@friendly
def import_(source: str, thread_id: str | None) -> None:
    """Create a thread from a snapshot or state file (FILE, or '-' for stdin); print its id."""
    data = read_json(source)
    with open_store() as store:
        click.echo(store.import_snapshot(data, thread_id=thread_id))


@thread.command("events")
@click.argument("thread_id")
@click.option("--kind", default=None, help="Only events of this kind (e.g. context.built).")
@db_option
@friendly
def events(thread_id: str, kind: str | None) -> None:
    """Print the events of THREAD_ID, one JSON object per line."""
    with open_store() as store:
        for e in store.events(thread_id, kind):
            click.echo(
                json.dumps(
                    {
                        "id": e.id,
                        "kind": e.kind,
                        "created_at": e.created_at.isoformat(),
                        "payload": e.payload,
                    },
                    ensure_ascii=False,
                )
            )


@thread.command("delete")
@click.argument("thread_id")
@click.option("--yes", is_flag=True, help="Confirm: the thread and its history are deleted.")
@db_option
@friendly
def delete(thread_id: str, yes: bool) -> None:
    """Delete THREAD_ID with its whole history (needs --yes)."""
    if not yes:
        fail(f"deleting {thread_id} removes its whole history; add --yes to confirm")
    with open_store() as store:
        store.delete_thread(thread_id)
    note(f"deleted {thread_id}")


for _command in (
    thread_inspect,
    _cli_views.truncate,
    _cli_views.clear,
    _cli_views.filter_,
    _cli_views.rollback,
    _cli_views.batches,
):
    thread.add_command(_command)
