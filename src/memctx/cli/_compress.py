"""``memctx compress`` / ``memctx compact`` (state files) and ``memctx thread compress`` /
``memctx thread compact`` (stored threads).

Each prints a report of what changed: the state-file commands to stderr (the
new state goes to ``-o FILE`` or stdout), the thread commands to stdout.
Compaction from the command line uses :class:`ExtractiveSummarizer` (no model).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import click

from memctx._build.compress_report import CompressionReport
from memctx._render.tokens import create_tokenizer
from memctx.compress import compress
from memctx.compress._compaction import CompactionReport, compact
from memctx.compress._compressors import DEFAULT_MAX_CHARS, MaxChars, MaxChunks, TrimToolOutputs
from memctx.compress._extractive import ExtractiveSummarizer
from memctx.typing import Compressor

F = TypeVar("F", bound=Callable[..., Any])

_COMPRESS_OPTIONS = (
    click.option(
        "--max-chunks", type=click.IntRange(min=0), default=None, help="Keep the newest N chunks."
    ),
    click.option(
        "--max-chars",
        type=click.IntRange(min=1),
        default=None,
        help=f"Cap each chunk's content at N characters (the usual value: {DEFAULT_MAX_CHARS}).",
    ),
    click.option(
        "--trim-tool-outputs",
        "trim",
        type=click.IntRange(min=1),
        default=None,
        metavar="N",
        help="Shorten old tool and skill outputs to N characters (head and tail).",
    ),
    click.option(
        "--keep-recent",
        type=click.IntRange(min=0),
        default=3,
        show_default=True,
        help="With --trim-tool-outputs: how many of the newest outputs stay whole.",
    ),
    click.option(
        "--tool", "tools", multiple=True, help="With --trim-tool-outputs: only this tool (repeat)."
    ),
    click.option("--model", default="estimate", show_default=True, help="Count tokens as M does."),
    click.option(
        "--format",
        "output_format",
        type=click.Choice(["text", "json"]),
        default="text",
        show_default=True,
        help="The report of what changed as text or as one JSON object (the event payload).",
    ),
)

_COMPACT_OPTIONS = (
    click.option(
        "--keep-recent-tokens",
        type=click.IntRange(min=0),
        required=True,
        help="Tokens of the newest chunks kept as they are.",
    ),
    click.option("--model", default="estimate", show_default=True, help="Count tokens as M does."),
    click.option(
        "--format",
        "output_format",
        type=click.Choice(["text", "json"]),
        default="text",
        show_default=True,
        help="The report of what changed as text or as one JSON object (the event payload).",
    ),
)


def _with(options: tuple[Callable[[F], F], ...]) -> Callable[[F], F]:
    def decorate(func: F) -> F:
        for option in reversed(options):
            func = option(func)
        return func

    return decorate


def _compressors(
    max_chunks: int | None,
    max_chars: int | None,
    trim: int | None,
    keep_recent: int,
    tools: tuple[str, ...],
) -> list[Compressor]:
    chosen: list[Compressor] = []
    if max_chunks is not None:
        chosen.append(MaxChunks(max_chunks))
    if max_chars is not None:
        chosen.append(MaxChars(max_chars))
    if trim is not None:
        chosen.append(TrimToolOutputs(keep_recent=keep_recent, max_chars=trim, tools=tools or None))
    elif tools:
        raise click.UsageError("--tool only applies with --trim-tool-outputs")
    if not chosen:
        raise click.UsageError(
            "give at least one of --max-chunks, --max-chars, --trim-tool-outputs"
        )
    return chosen


def _as(output_format: str, report: CompressionReport | CompactionReport, text: str) -> str:
    if output_format == "json":
        return json.dumps(report.to_event(), ensure_ascii=False)
    return text


def _compression_report(report: CompressionReport) -> str:
    if not report.changed:
        return f"nothing was cut ({report.original_count} chunks, {report.tokens_before} tokens)"
    return report.summary()


def _compaction_report(report: CompactionReport) -> str:
    lines = [report.summary()]
    if report.compacted:
        lines.append("covered: " + " ".join(report.covered_ids))
    return "\n".join(lines)


def _write_state(state: Any, output: Path | None) -> None:
    from memctx.statefile import dumps_state, save_state

    if output is None:
        click.echo(dumps_state(state))
    else:
        save_state(state, output)


@click.command("compress")
@click.argument("state_file", type=click.Path(dir_okay=False, path_type=Path))
@_with(_COMPRESS_OPTIONS)
@click.option(
    "-o",
    "--output",
    type=click.Path(dir_okay=False, path_type=Path),
    default=None,
    help="Write the compressed state here (default: stdout).",
)
def compress_command(
    state_file: Path,
    max_chunks: int | None,
    max_chars: int | None,
    trim: int | None,
    keep_recent: int,
    tools: tuple[str, ...],
    model: str,
    output_format: str,
    output: Path | None,
) -> None:
    """Compress STATE_FILE; the report of what was cut goes to stderr."""
    from memctx.statefile import load_state

    chosen = _compressors(max_chunks, max_chars, trim, keep_recent, tools)
    state = load_state(state_file)
    new, report = compress(state, chosen, tokenizer=create_tokenizer(model))
    _write_state(new, output)
    click.echo(_as(output_format, report, _compression_report(report)), err=True)


@click.command("compact")
@click.argument("state_file", type=click.Path(dir_okay=False, path_type=Path))
@_with(_COMPACT_OPTIONS)
@click.option(
    "-o",
    "--output",
    type=click.Path(dir_okay=False, path_type=Path),
    default=None,
    help="Write the compacted state here (default: stdout).",
)
def compact_command(
    state_file: Path, keep_recent_tokens: int, model: str, output_format: str, output: Path | None
) -> None:
    """Replace the older chunks of STATE_FILE by an extractive summary; report to stderr."""
    from memctx.statefile import load_state

    state = load_state(state_file)
    new, report = compact(
        state,
        ExtractiveSummarizer(),
        keep_recent_tokens=keep_recent_tokens,
        tokenizer=create_tokenizer(model),
    )
    _write_state(new, output)
    click.echo(_as(output_format, report, _compaction_report(report)), err=True)


def register_thread_compress_commands(thread: click.Group) -> None:
    """Add ``compress`` and ``compact`` to the ``memctx thread`` group."""
    from memctx.cli._thread_common import db_option, friendly, open_store

    @thread.command("compress")
    @click.argument("thread_id")
    @_with(_COMPRESS_OPTIONS)
    @db_option
    @friendly
    def thread_compress(
        thread_id: str,
        max_chunks: int | None,
        max_chars: int | None,
        trim: int | None,
        keep_recent: int,
        tools: tuple[str, ...],
        model: str,
        output_format: str,
    ) -> None:
        """Compress the visible chunks of THREAD_ID (a view operation: rollback restores)."""
        chosen = _compressors(max_chunks, max_chars, trim, keep_recent, tools)
        with open_store() as store:
            report = store.compress(thread_id, chosen, tokenizer=create_tokenizer(model))
            batch = store.thread_info(thread_id).batch
        click.echo(_as(output_format, report, _compression_report(report)))
        if report.changed and output_format == "text":
            click.echo(f"batch {batch}; undo with: memctx thread rollback {thread_id} {batch - 1}")

    @thread.command("compact")
    @click.argument("thread_id")
    @_with(_COMPACT_OPTIONS)
    @db_option
    @friendly
    def thread_compact(
        thread_id: str, keep_recent_tokens: int, model: str, output_format: str
    ) -> None:
        """Replace the older visible chunks of THREAD_ID by an extractive summary."""
        with open_store() as store:
            report = store.compact(
                thread_id,
                ExtractiveSummarizer(),
                keep_recent_tokens=keep_recent_tokens,
                tokenizer=create_tokenizer(model),
            )
            batch = store.thread_info(thread_id).batch
        click.echo(_as(output_format, report, _compaction_report(report)))
        if report.compacted and output_format == "text":
            click.echo(f"batch {batch}; undo with: memctx thread rollback {thread_id} {batch - 1}")


def register_compress_commands(main: click.Group) -> None:
    """Add ``compress`` and ``compact`` to ``main``, and to its ``thread`` group if it has one."""
    main.add_command(compress_command)
    main.add_command(compact_command)
    thread = main.commands.get("thread")
    if isinstance(thread, click.Group):
        register_thread_compress_commands(thread)
