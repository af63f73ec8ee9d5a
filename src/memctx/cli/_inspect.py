"""``memctx inspect`` and ``memctx thread inspect``: write a build's HTML report.

Both take the options of ``memctx build`` (but its ``--format``: the output is
the report, an HTML page or, with ``--format json``, the page's data). The
report goes to ``-o FILE`` (written atomically) or to stdout; the build's
summary goes to stderr.
"""

from __future__ import annotations

import sys
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

import click
from click.core import ParameterSource

from memctx._build.builder import ContextBuilder, create_builder
from memctx._result import ContextBuildResult
from memctx._state import MemoryState
from memctx.cli._errors import fail, friendly_errors
from memctx.cli._options import build_kwargs, build_options_without_format, format_option
from memctx.cli._support import STDIO, dumps_json, load_state_file, write_output
from memctx.cli._thread_common import db_option, note, open_store
from memctx.inspect._data import report_data, row_xml
from memctx.inspect._page import render_page
from memctx.inspect._report import default_title

if TYPE_CHECKING:
    from memctx.store._store import MemoryStore

_output_option = click.option(
    "-o",
    "--output",
    type=click.Path(dir_okay=False, allow_dash=True),
    default=None,
    help="Write the report here (atomically; '-': stdout) [default: stdout, but not onto "
    "a terminal for the HTML page].",
)

_format_option = format_option(
    "html",
    "json",
    help="html: one self-contained page; json: the page's data: {title, thread_id, build: "
    "{token_count, token_count_exact, tokenizer, strategy, max_tokens, reserve_tokens, "
    "included, excluded}, chunks: [{id, type, tag, role, tokens, status, message, unit, "
    "pinned, replaced, priority, created_at, metadata, content, xml, change}], units: [{kind, key, "
    "members}], messages: [{role, chunks, chars}], totals: {by_type, by_status}, compare}.",
)


def _check_output(output: str | None, output_format: str) -> None:
    """Refuse to print a page (megabytes at 10,000 chunks) onto a terminal, unless ``-o -``."""
    if output is None and output_format == "html" and sys.stdout.isatty():
        fail("the report is an HTML page: give -o FILE, or redirect stdout to a file")


def _emit(
    output_format: str,
    output: str | None,
    result: ContextBuildResult,
    state: MemoryState,
    builder: ContextBuilder,
    **comparison: Any,
) -> None:
    """The report as a page or its JSON data, to ``output`` (stdout when None or ``-``)."""
    data = report_data(result, state, builder, title=default_title(state), **comparison)
    if output_format == "html":
        text = render_page(data)
    else:
        for row in data["chunks"]:  # the page splits the XML around the content; JSON has it
            xml = row_xml(row)
            row.pop("xml_head", None)
            row.pop("xml_tail", None)
            row["xml"] = xml
        text = dumps_json(data) + "\n"
    write_output(STDIO if output is None else output, text)
    if output not in (None, STDIO):
        note(f"wrote the report to {output}")


def _compare_note(result: ContextBuildResult, previous: ContextBuildResult, label: str) -> str:
    now, before = set(result.included_chunk_ids), set(previous.included_chunk_ids)
    return f"compared with {label}: {len(now - before)} entered, {len(before - now)} left"


@click.command("inspect")
@click.argument("state_file", type=click.Path(dir_okay=False, allow_dash=True))
@build_options_without_format
@_output_option
@_format_option
@click.option(
    "--compare",
    "compare_file",
    type=click.Path(dir_okay=False, allow_dash=True),
    default=None,
    help="An earlier state file of the same history ('-': stdin): show what entered and "
    "left since its build (same options) and how many leading tokens both requests share.",
)
@click.option(
    "--compare-max-tokens",
    type=click.IntRange(min=1),
    default=None,
    help="Build the compared state (--compare, else STATE_FILE) with this budget instead.",
)
@friendly_errors
def inspect(
    state_file: str,
    output: str | None,
    output_format: str,
    compare_file: str | None,
    compare_max_tokens: int | None,
    **params: Any,
) -> None:
    """Write a report of the build of STATE_FILE ('-': stdin): every chunk, why it is in
    or out; an HTML page, or its data as JSON."""
    _check_output(output, output_format)
    if state_file == STDIO and compare_file == STDIO:
        fail("STATE_FILE and --compare cannot both be read from stdin ('-')")
    state = load_state_file(state_file)
    earlier = load_state_file(compare_file) if compare_file is not None else None
    options: dict[str, Any] = build_kwargs(params)
    max_tokens = options.pop("max_tokens")
    builder = create_builder(options["tokenizer"])
    result = builder.build(state, max_tokens=max_tokens, **options)
    note(result.summary())
    previous = None
    label = ""
    if compare_file is not None or compare_max_tokens is not None:
        budget = compare_max_tokens if compare_max_tokens is not None else max_tokens
        previous = builder.build(
            earlier if earlier is not None else state, max_tokens=budget, **options
        )
        label = _file_label(compare_file) if compare_file is not None else "this state"
        if budget != max_tokens:
            label += f" at {'no limit' if budget is None else f'{budget} tokens'}"
        note(_compare_note(result, previous, label))
    _emit(
        output_format,
        output,
        result,
        state,
        builder,
        previous=previous,
        previous_label=label,
    )


def _file_label(source: str) -> str:
    from pathlib import Path

    return "<stdin>" if source == STDIO else Path(source).name


def _recorded_builds(store: MemoryStore, thread_id: str, last: int) -> list[Mapping[str, Any]]:
    events = store.events(thread_id, "context.built")
    if len(events) < last:
        fail(
            f"{thread_id} has {len(events)} recorded build(s) (context.built events); "
            f"--last {last} needs {last}"
        )
    return [event.payload for event in events[-last:]]


def _rebuild(
    builder: ContextBuilder,
    visible: MemoryState,
    payload: Mapping[str, Any],
    batch: int,
    system_prompt: str | None,
) -> tuple[MemoryState, ContextBuildResult]:
    """The state a recorded build saw (the current batch's first ``visible`` chunks), rebuilt."""
    if payload.get("batch") != batch:
        fail(
            f"a recorded build was made in batch {payload.get('batch')}, before a view "
            f"operation started batch {batch}; the chunks it saw cannot be recovered"
        )
    if payload.get("tokenizer") != builder.tokenizer.name:
        fail(
            f"a recorded build counted with {payload.get('tokenizer')!r}, not "
            f"{builder.tokenizer.name!r}: pass its --model"
        )
    count = int(payload["visible"])
    state = MemoryState(visible.chunks[:count], thread_id=visible.thread_id)
    result = builder.build(
        state,
        max_tokens=payload["max_tokens"],
        reserve_tokens=payload["reserve_tokens"],
        strategy=payload["strategy"],
        system_prompt=system_prompt,
    )
    if result.token_count != payload.get("token_count"):
        note(
            f"note: the rebuild has {result.token_count} tokens, the recorded build had "
            f"{payload.get('token_count')} (was another system prompt or renderer used?)"
        )
    return state, result


_RECORDED = {"max_tokens": "--max-tokens", "reserve_tokens": "--reserve", "strategy": "--strategy"}


@click.command("inspect")
@click.argument("thread_id")
@build_options_without_format
@_output_option
@_format_option
@click.option(
    "--last",
    type=click.IntRange(1, 2),
    default=None,
    help="Report the thread's last recorded build (1), or compare its last two (2); their "
    "budget, reserve and strategy come from the recorded context.built events.",
)
@db_option
@friendly_errors
def thread_inspect(
    thread_id: str,
    output: str | None,
    output_format: str,
    last: int | None,
    **params: Any,
) -> None:
    """Write a report of a build of THREAD_ID's visible chunks (nothing is recorded): an
    HTML page, or its data as JSON."""
    _check_output(output, output_format)
    options: dict[str, Any] = build_kwargs(params)
    max_tokens = options.pop("max_tokens")
    system_prompt = options["system_prompt"]
    builder = create_builder(options["tokenizer"])
    context = click.get_current_context()
    with open_store() as store:
        visible = store.get_current_state(thread_id)
        batch = store.thread_info(thread_id).batch
        payloads: Sequence[Mapping[str, Any]] = ()
        if last is not None:
            given = [
                flag
                for name, flag in _RECORDED.items()
                if context.get_parameter_source(name) is not ParameterSource.DEFAULT
            ]
            if given:
                fail(f"--last rebuilds with the recorded budget and strategy; drop {given[0]}")
            payloads = _recorded_builds(store, thread_id, last)
    previous = None
    if payloads:
        builds = [_rebuild(builder, visible, p, batch, system_prompt) for p in payloads]
        state, result = builds[-1]
        if len(builds) == 2:
            previous = builds[0][1]
    else:
        state = visible
        result = builder.build(state, max_tokens=max_tokens, **options)
    note(result.summary())
    label = "the build before"
    if previous is not None:
        note(_compare_note(result, previous, label))
    _emit(
        output_format,
        output,
        result,
        state,
        builder,
        previous=previous,
        previous_label=label,
    )
