"""The ``memctx`` command line.

Adding a command
----------------
Define it in a module of your own (``memctx/cli/_team.py``, ...) as a plain
``@click.command()`` (or ``@click.group()``) and register it with one line in
:data:`COMMANDS` below: ``"name": "module:attribute"``. Commands are imported
only when they run (or when ``--help`` lists them), so ``memctx`` starts fast
whatever the commands import. Use the shared pieces:

- errors: raise :class:`~memctx.cli._support.CliError` or call ``fail(message)``;
  let :class:`~memctx.MemctxError` and ``OSError`` escape — the group prints
  them as one ``memctx: error: ...`` line (exit 1; usage errors exit 2), with
  parameter names replaced by the options as typed;
- files: ``click.Path(allow_dash=True)`` arguments read with ``read_input`` /
  ``read_json`` and written with ``write_output`` (``-`` is stdin/stdout);
- build options: ``@all_build_options`` and ``build_kwargs(params)`` from
  :mod:`memctx.cli._options`; ``--format`` with ``format_option``, choices with
  ``choice`` (case-insensitive);
- notes with ``note`` (silenced by ``--quiet``), JSON with ``echo_json``, long
  loops in ``progress``, and ``logging.getLogger(__name__)`` in the library
  (``-v`` shows INFO, ``-vv`` DEBUG);
- a library call that takes ``on_progress`` gets ``progress_bar(label)``'s
  callback, and large JSON is written with ``dumps_json_with_bar``
  (:mod:`memctx.cli._progress`).

``-V/--version``, ``-q/--quiet`` and ``-v/--verbose`` belong to ``memctx`` and are
also accepted after any sub-command name.
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import click

from memctx._exceptions import MemctxError
from memctx.cli._import import check_report_output, transcript_options, write_imported
from memctx.cli._options import (
    all_build_options,
    build_kwargs,
    format_option,
    print_build_result,
    result_to_json,
)
from memctx.cli._support import (
    FILE,
    STDIO,
    CliError,
    about_file,
    add_verbosity,
    configure_logging,
    display_name,
    echo_json,
    error_message,
    fail,
    friendly_errors,
    is_broken_pipe,
    load_state_file,
    note,
    read_input,
    read_json,
    set_quiet,
    silence_stdout,
    write_output,
)

#: Sub-commands defined in other modules: ``name: "module:attribute"``. Add yours here.
COMMANDS: dict[str, str] = {
    "thread": "memctx.cli._thread:thread",
    "inspect": "memctx.cli._inspect:inspect",
    "chat": "memctx.cli._chat:chat",
    "team": "memctx.cli._team:team",
    "compress": "memctx.cli._compress:compress_command",
    "compact": "memctx.cli._compress:compact_command",
    "import-anthropic": "memctx.cli._anthropic:import_anthropic",
    "replay": "memctx.cli._replay:replay_command",
}


# -- the group: lazy commands, global options, one-line errors --------------------------


def _quiet_option(ctx: click.Context, param: click.Parameter, value: bool) -> None:
    if value:
        set_quiet(ctx, True)
        configure_logging(ctx)


def _verbose_option(ctx: click.Context, param: click.Parameter, value: int) -> None:
    if value:
        add_verbosity(ctx, value)
        configure_logging(ctx)


def _global_options() -> list[click.Option]:
    return [
        click.Option(
            ["-q", "--quiet"],
            is_flag=True,
            expose_value=False,
            callback=_quiet_option,
            help="Print only data and errors: no notes, summaries or progress bars.",
        ),
        click.Option(
            ["-v", "--verbose"],
            count=True,
            expose_value=False,
            callback=_verbose_option,
            help="Log what memctx does on stderr (-v: info, -vv: debug).",
        ),
    ]


def _adopt(command: click.Command) -> click.Command:
    """Give a registered command the shared manners: ``-q``/``-v`` after its name and
    one-line errors named after its own options (its sub-commands too)."""
    if getattr(command, "_memctx_adopted", False):
        return command
    taken = {opt for p in command.params for opt in getattr(p, "opts", ())}
    command.params.extend(
        o for o in _global_options() if not taken.intersection(o.opts + o.secondary_opts)
    )
    if command.callback is not None:
        command.callback = friendly_errors(command.callback)
    command._memctx_adopted = True  # type: ignore[attr-defined]
    if isinstance(command, click.Group):
        for sub in command.commands.values():
            _adopt(sub)
    return command


class MemctxGroup(click.Group):
    """The ``memctx`` group: commands from :data:`COMMANDS`, one-line errors, quiet pipes."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted({*super().list_commands(ctx), *COMMANDS})

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        command = super().get_command(ctx, cmd_name)
        if command is None and cmd_name in COMMANDS:
            module_name, _, attribute = COMMANDS[cmd_name].partition(":")
            command = getattr(importlib.import_module(module_name), attribute)
        return None if command is None else _adopt(command)

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except OSError as exc:
            if not is_broken_pipe(exc):
                raise CliError(error_message(exc)) from exc
            silence_stdout()  # the reader went away: stop quietly
            raise click.exceptions.Exit(0) from None
        except MemctxError as exc:
            raise CliError(error_message(exc)) from exc

    def main(
        self,
        args: Sequence[str] | None = None,
        prog_name: str | None = None,
        complete_var: str | None = None,
        standalone_mode: bool = True,
        **extra: Any,
    ) -> Any:
        if not standalone_mode:
            return super().main(args, prog_name, complete_var, False, **extra)
        try:
            code = super().main(args, prog_name, complete_var, False, **extra)
        except click.exceptions.NoArgsIsHelpError as exc:
            exc.show()  # a group without a command: its help
            sys.exit(exc.exit_code)
        except click.UsageError as exc:
            hint = ""
            if exc.ctx is not None:
                hint = f" (see '{exc.ctx.command_path} --help')"
            click.echo(f"memctx: error: {exc.format_message()}{hint}", err=True)
            sys.exit(exc.exit_code)
        except click.ClickException as exc:
            exc.show()
            sys.exit(exc.exit_code)
        except click.Abort:
            click.echo("memctx: error: aborted", err=True)
            sys.exit(1)
        sys.exit(code if isinstance(code, int) else 0)


def _show_version(ctx: click.Context, param: click.Parameter, value: bool) -> None:
    if not value or ctx.resilient_parsing:
        return
    from importlib.metadata import version

    click.echo(f"memctx {version('memctx')} (Python {sys.version.split()[0]})")
    ctx.exit()


@click.group(cls=MemctxGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.option(
    "-V",
    "--version",
    is_flag=True,
    expose_value=False,
    is_eager=True,
    callback=_show_version,
    help="Print the version and exit.",
)
@click.option(
    "-q",
    "--quiet",
    is_flag=True,
    expose_value=False,
    callback=_quiet_option,
    help="Print only data and errors: no notes, summaries or progress bars.",
)
@click.option(
    "-v",
    "--verbose",
    count=True,
    expose_value=False,
    callback=_verbose_option,
    help="Log what memctx does on stderr (-v: info, -vv: debug).",
)
def main() -> None:
    """Turn an agent's memory into the exact messages the model is called with.

    FILE arguments and -o options take '-' for stdin / stdout. Shell completion:
    eval "$(_MEMCTX_COMPLETE=bash_source memctx)" (zsh_source, fish_source).
    """
    configure_logging(click.get_current_context())


# -- commands ------------------------------------------------------------------------


def _load_state(source: str) -> Any:
    """The state in ``source`` (``-``: stdin); errors name the file, with a hint."""
    return load_state_file(source)


@main.command()
@click.argument("state_file", type=FILE)
@click.option(
    "--model",
    default=None,
    help="Also count each chunk's tokens with this model or encoding (e.g. gpt-4o).",
)
@format_option(
    "text",
    "json",
    help="text: '[role] id' then the XML, per chunk; json: [{id, type, role, xml, tokens}] "
    "(tokens is null without --model).",
)
@friendly_errors
def render(state_file: str, model: str | None, output_format: str) -> None:
    """Print each chunk of STATE_FILE ('-': stdin) as XML, under its role."""
    from memctx._build.builder import counts_of, create_builder
    from memctx._render.tokens import create_tokenizer

    state = _load_state(state_file)
    tokenizer = create_tokenizer(model) if model is not None else None
    builder = create_builder()
    rows = []
    for chunk in state:
        role, xml = builder.render(chunk)
        tokens = counts_of(builder).tokens(chunk, tokenizer) if tokenizer is not None else None
        if output_format == "json":
            rows.append(
                {
                    "id": chunk.id,
                    "type": chunk.type.value,
                    "role": role,
                    "xml": xml,
                    "tokens": tokens,
                }
            )
            continue
        suffix = f" ({tokens} tokens)" if tokens is not None else ""
        click.echo(f"[{role}] {chunk.id}{suffix}")
        click.echo(xml)
    if output_format == "json":
        echo_json(rows)


@main.command()
@click.argument("state_file", type=FILE)
@all_build_options
@friendly_errors
def build(state_file: str, output_format: str, **params: Any) -> None:
    """Build the messages for STATE_FILE ('-': stdin); the report goes to stderr."""
    from memctx._build.builder import create_builder

    state = _load_state(state_file)
    options = build_kwargs(params)
    result = create_builder(options["tokenizer"]).build(state, **options)
    print_build_result(result, output_format)


@main.command("import-openai")
@transcript_options
@click.option("--strict", is_flag=True, help="Fail on a message role that is not an OpenAI one.")
@format_option(
    "text",
    "json",
    help="How to print the import report: text notes on stderr, or json on stdout "
    "(needs -o FILE): {output, chunks, unknown_roles: [{index, role}], unanswered_calls}.",
)
@friendly_errors
def import_openai(
    transcript: str, output: str, thread_id: str | None, strict: bool, output_format: str
) -> None:
    """Convert an OpenAI chat transcript (a list of messages, or {"messages": [...]}).

    TRANSCRIPT may be '-' (stdin); the state goes to -o (stdout by default).
    """
    from memctx.cli._progress import THRESHOLD, progress_bar
    from memctx.importers import load_openai_transcript

    check_report_output(output_format, output)
    data = read_json(transcript)
    label = f"importing {display_name(transcript)}"
    with about_file(transcript), progress_bar(label, threshold=THRESHOLD // 2) as tell:
        state, report = load_openai_transcript(
            data,
            thread_id=thread_id,
            unknown_roles="error" if strict else "keep",
            on_progress=tell,
        )
    write_imported(transcript, output, output_format, state, report, blocks=False)


EXAMPLE_NAME = "coding_agent.json"


@main.command()
@click.option(
    "-o",
    "--output",
    type=FILE,
    default=EXAMPLE_NAME,
    show_default=True,
    help="Where to write the example state file ('-': stdout).",
)
@click.option("--force", is_flag=True, help="Overwrite the file if it exists.")
@friendly_errors
def example(output: str, force: bool) -> None:
    """Write the bundled example state: a coding agent that reads a file, delegates to a
    researcher, compacts its progress and completes.

    Then: memctx build coding_agent.json --max-tokens 800 --model gpt-4o
    """
    from importlib.resources import files

    text = (files("memctx.cli") / "_examples" / EXAMPLE_NAME).read_text(encoding="utf-8")
    if output != STDIO and Path(output).exists() and not force:
        fail(f"{output} exists; add --force to overwrite it")
    write_output(output, text)
    if output != STDIO:
        note(f"wrote {output}; try: memctx build {output} --max-tokens 800 --model gpt-4o")


__all__ = [
    "COMMANDS",
    "CliError",
    "MemctxGroup",
    "fail",
    "friendly_errors",
    "main",
    "read_input",
    "result_to_json",
    "write_output",
]

if __name__ == "__main__":  # pragma: no cover
    main()
