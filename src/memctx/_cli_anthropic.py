"""``memctx import-anthropic``: an Anthropic Messages API request into a state file."""

from __future__ import annotations

import logging

import click

from memctx._cli_options import format_option
from memctx._cli_support import (
    STDIO,
    about_file,
    display_name,
    echo_json,
    note,
    read_json,
    working,
    write_output,
)

_log = logging.getLogger(__name__)

FILE = click.Path(dir_okay=False, allow_dash=True, path_type=str)


@click.command("import-anthropic")
@click.argument("transcript", type=FILE)
@click.option(
    "-o",
    "--output",
    type=FILE,
    default=STDIO,
    show_default=True,
    help="Where to write the state file ('-': stdout).",
)
@click.option("--thread-id", default=None, help="thread_id to record in the state.")
@click.option(
    "--strict", is_flag=True, help="Fail on a message role that is not user or assistant."
)
@format_option(
    "text",
    "json",
    help="How to print the import report: text notes on stderr, or json on stdout "
    "(needs -o FILE): {output, chunks, unknown_roles: [{index, role}], unanswered_calls, "
    "unknown_blocks: [{index, type}]}.",
)
def import_anthropic(
    transcript: str, output: str, thread_id: str | None, strict: bool, output_format: str
) -> None:
    """Convert Anthropic Messages API arguments ({"system": ..., "messages": [...]}, or a
    list of messages).

    TRANSCRIPT may be '-' (stdin); the state goes to -o (stdout by default).
    """
    from memctx._cli_progress import dumps_json_with_bar
    from memctx.importers import load_anthropic_messages
    from memctx.statefile import state_to_dict

    if output_format == "json" and output == STDIO:
        raise click.UsageError("--format json prints the report on stdout: give -o FILE")
    data = read_json(transcript)
    messages = data.get("messages") if isinstance(data, dict) else data
    size = len(messages) if isinstance(messages, list) else 0
    with about_file(transcript), working(f"importing {display_name(transcript)}", size):
        state, report = load_anthropic_messages(
            data, thread_id=thread_id, unknown_roles="error" if strict else "keep"
        )
    where = "stdout" if output == STDIO else output
    text = dumps_json_with_bar(state_to_dict(state), f"writing {where}")
    write_output(output, text + "\n")
    _log.info("imported %d chunks from %s", len(state), display_name(transcript))
    if output_format == "json":
        echo_json(
            {
                "output": output,
                "chunks": len(state),
                "unknown_roles": [{"index": i, "role": r} for i, r in report.unknown_roles],
                "unanswered_calls": list(report.unanswered_calls),
                "unknown_blocks": [{"index": i, "type": t} for i, t in report.unknown_blocks],
            }
        )
        return
    note(f"wrote {len(state)} chunks to {where}")
    for index, role in report.unknown_roles:
        note(f"note: message {index} has role {role!r}; kept as a CUSTOM chunk")
    for index, kind in report.unknown_blocks:
        note(f"note: message {index} has a {kind!r} block; kept as a CUSTOM chunk")
    if report.unanswered_calls:
        ids = ", ".join(report.unanswered_calls)
        count = len(report.unanswered_calls)
        note(f"note: {count} tool call(s) have no result (pending): {ids}")
