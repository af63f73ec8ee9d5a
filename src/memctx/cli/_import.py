"""What the transcript import commands share: their options and how they write the state.

``memctx import-openai`` and ``memctx import-anthropic`` read a transcript
(``-`` for stdin), write a state file to ``-o`` (stdout by default) and report
what they could not map: as notes on stderr, or as JSON on stdout (which then
needs ``-o FILE``).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any, TypeVar

import click

from memctx._state import MemoryState
from memctx.cli._progress import dumps_json_with_bar
from memctx.cli._support import FILE, STDIO, display_name, echo_json, note, write_output
from memctx.importers._report import ImportReport

_log = logging.getLogger(__name__)

F = TypeVar("F", bound=Callable[..., Any])


def transcript_options(function: F) -> F:
    """``TRANSCRIPT``, ``-o/--output`` and ``--thread-id``."""
    function = click.option("--thread-id", default=None, help="thread_id to record in the state.")(
        function
    )
    function = click.option(
        "-o",
        "--output",
        type=FILE,
        default=STDIO,
        show_default=True,
        help="Where to write the state file ('-': stdout).",
    )(function)
    return click.argument("transcript", type=FILE)(function)


def check_report_output(output_format: str, output: str) -> None:
    """A JSON report goes to stdout, so the state must go to a file."""
    if output_format == "json" and output == STDIO:
        raise click.UsageError("--format json prints the report on stdout: give -o FILE")


def write_imported(
    transcript: str,
    output: str,
    output_format: str,
    state: MemoryState,
    report: ImportReport,
    *,
    blocks: bool,
) -> None:
    """Write ``state`` to ``output``, then the report: JSON ``{output, chunks,
    unknown_roles, unanswered_calls}`` (and ``unknown_blocks`` for a format with content
    blocks), or a line saying where the state went and a note on each thing not mapped."""
    from memctx.statefile import state_to_dict

    where = "stdout" if output == STDIO else output
    text = dumps_json_with_bar(state_to_dict(state), f"writing {where}")
    write_output(output, text + "\n")
    _log.info("imported %d chunks from %s", len(state), display_name(transcript))
    if output_format == "json":
        data: dict[str, Any] = {
            "output": output,
            "chunks": len(state),
            "unknown_roles": [{"index": i, "role": r} for i, r in report.unknown_roles],
            "unanswered_calls": list(report.unanswered_calls),
        }
        if blocks:
            data["unknown_blocks"] = [{"index": i, "type": t} for i, t in report.unknown_blocks]
        echo_json(data)
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
