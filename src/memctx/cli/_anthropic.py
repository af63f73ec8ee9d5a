"""``memctx import-anthropic``: an Anthropic Messages API request into a state file."""

from __future__ import annotations

import click

from memctx.cli._import import check_report_output, transcript_options, write_imported
from memctx.cli._options import format_option
from memctx.cli._support import about_file, display_name, read_json, working


@click.command("import-anthropic")
@transcript_options
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
    from memctx.importers import load_anthropic_messages

    check_report_output(output_format, output)
    data = read_json(transcript)
    messages = data.get("messages") if isinstance(data, dict) else data
    size = len(messages) if isinstance(messages, list) else 0
    with about_file(transcript), working(f"importing {display_name(transcript)}", size):
        state, report = load_anthropic_messages(
            data, thread_id=thread_id, unknown_roles="error" if strict else "keep"
        )
    write_imported(transcript, output, output_format, state, report, blocks=True)
