"""``memctx inspect`` and ``memctx thread inspect``: write a build's HTML report.

Both take the options of ``memctx build`` (but ``--format``: the output is the
page). The page goes to ``-o FILE`` (written atomically) or to stdout; the
build's summary goes to stderr.
"""

from __future__ import annotations

import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click
from click.core import ParameterSource

from memctx._builder import ContextBuilder, create_builder
from memctx._cli_errors import fail, friendly_errors
from memctx._cli_options import build_kwargs, build_options_without_format
from memctx._inspect import report_html
from memctx._result import ContextBuildResult
from memctx._state import MemoryState
from memctx.statefile import load_state, write_text_atomic
from memctx.store._cli_common import db_option, note, open_store

if TYPE_CHECKING:
    from memctx.store._store import MemoryStore

_output_option = click.option(
    "-o",
    "--output",
    type=click.Path(dir_okay=False, path_type=Path),
    default=None,
    help="Write the HTML report here (atomically) [default: stdout].",
)


def _check_output(output: Path | None) -> None:
    """Refuse to print a page (megabytes at 10,000 chunks) onto a terminal."""
    if output is None and sys.stdout.isatty():
        fail("the report is an HTML page: give -o FILE, or redirect stdout to a file")


def _emit(page: str, output: Path | None) -> None:
    if output is None:
        click.echo(page, nl=False)
    else:
        write_text_atomic(output, page)
        note(f"wrote the report to {output}")


def _compare_note(result: ContextBuildResult, previous: ContextBuildResult, label: str) -> str:
    now, before = set(result.included_chunk_ids), set(previous.included_chunk_ids)
    return f"compared with {label}: {len(now - before)} entered, {len(before - now)} left"


@click.command("inspect")
@click.argument("state_file", type=click.Path(dir_okay=False, path_type=Path))
@build_options_without_format
@_output_option
@click.option(
    "--compare",
    "compare_file",
    type=click.Path(dir_okay=False, path_type=Path),
    default=None,
    help="An earlier state file of the same history: show what entered and left since "
    "its build (same options) and how many leading tokens both requests share.",
)
@click.option(
    "--compare-max-tokens",
    type=click.IntRange(min=1),
    default=None,
    help="Build the compared state (--compare, else STATE_FILE) with this budget instead.",
)
@friendly_errors
def inspect(
    state_file: Path,
    output: Path | None,
    compare_file: Path | None,
    compare_max_tokens: int | None,
    **params: Any,
) -> None:
    """Write an HTML report of the build of STATE_FILE: every chunk, why it is in or out."""
    _check_output(output)
    state = load_state(state_file)
    options: dict[str, Any] = build_kwargs(params)
    max_tokens = options.pop("max_tokens")
    builder = create_builder(options["tokenizer"])
    result = builder.build(state, max_tokens=max_tokens, **options)
    click.echo(result.summary(), err=True)
    previous = previous_state = None
    label = ""
    if compare_file is not None or compare_max_tokens is not None:
        previous_state = load_state(compare_file) if compare_file is not None else state
        budget = compare_max_tokens if compare_max_tokens is not None else max_tokens
        previous = builder.build(previous_state, max_tokens=budget, **options)
        label = compare_file.name if compare_file is not None else "this state"
        if budget != max_tokens:
            label += f" at {'no limit' if budget is None else f'{budget} tokens'}"
        note(_compare_note(result, previous, label))
    page = report_html(
        result,
        state,
        builder,
        previous=previous,
        previous_state=previous_state,
        previous_label=label,
    )
    _emit(page, output)


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
    output: Path | None,
    last: int | None,
    **params: Any,
) -> None:
    """Write an HTML report of a build of THREAD_ID's visible chunks (nothing is recorded)."""
    _check_output(output)
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
    previous = previous_state = None
    if payloads:
        builds = [_rebuild(builder, visible, p, batch, system_prompt) for p in payloads]
        state, result = builds[-1]
        if len(builds) == 2:
            previous_state, previous = builds[0]
    else:
        state = visible
        result = builder.build(state, max_tokens=max_tokens, **options)
    click.echo(result.summary(), err=True)
    label = "the build before"
    if previous is not None:
        note(_compare_note(result, previous, label))
    page = report_html(
        result,
        state,
        builder,
        previous=previous,
        previous_state=previous_state,
        previous_label=label,
    )
    _emit(page, output)
