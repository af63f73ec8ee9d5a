"""The ``memctx`` command line.

Every command reports bad input as one ``memctx: error: ...`` line on stderr
and exits non-zero (2 for usage, 1 for bad data); never a traceback.
"""

from __future__ import annotations

from pathlib import Path

import click

from memctx._builder import create_builder
from memctx._cli_chat import chat
from memctx._cli_errors import fail, friendly_errors
from memctx._cli_inspect import inspect as inspect_command
from memctx._cli_options import build_options, print_build_result, result_to_json
from memctx._cli_team import team as team_commands
from memctx._json import JSONTextError, parse_json_text
from memctx._tokens import create_tokenizer
from memctx.statefile import load_state, save_state, write_text_atomic


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="memctx")
def main() -> None:
    """Turn an agent's memory into the exact messages the model is called with."""


@main.command()
@click.argument("state_file", type=click.Path(dir_okay=False, path_type=Path))
@friendly_errors
def render(state_file: Path) -> None:
    """Print each chunk of STATE_FILE as XML, under its role."""
    state = load_state(state_file)
    builder = create_builder()
    for chunk in state:
        role, xml = builder.render(chunk)
        click.echo(f"[{role}] {chunk.id}")
        click.echo(xml)


@main.command()
@click.argument("state_file", type=click.Path(dir_okay=False, path_type=Path))
@build_options
@friendly_errors
def build(
    state_file: Path,
    max_tokens: int | None,
    reserve_tokens: int,
    model: str,
    system_prompt: str | None,
    strategy: str,
    output_format: str,
) -> None:
    """Build the messages for STATE_FILE; the report goes to stderr."""
    state = load_state(state_file)
    tokenizer = create_tokenizer(model)
    result = create_builder(tokenizer).build(
        state,
        max_tokens=max_tokens,
        reserve_tokens=reserve_tokens,
        system_prompt=system_prompt,
        strategy=strategy,
    )
    print_build_result(result, output_format)


@main.command("import-openai")
@click.argument("transcript", type=click.Path(dir_okay=False, path_type=Path))
@click.option(
    "-o",
    "--output",
    type=click.Path(dir_okay=False, path_type=Path),
    required=True,
    help="Where to write the state file.",
)
@click.option("--thread-id", default=None, help="thread_id to record in the state.")
@click.option("--strict", is_flag=True, help="Fail on a message role that is not an OpenAI one.")
@friendly_errors
def import_openai(transcript: Path, output: Path, thread_id: str | None, strict: bool) -> None:
    """Convert an OpenAI chat transcript (a list of messages, or {"messages": [...]})."""
    from memctx.importers import load_openai_transcript

    try:
        data = parse_json_text(transcript.read_bytes())
    except JSONTextError as exc:
        fail(f"{transcript}: {exc}")
    state, report = load_openai_transcript(
        data, thread_id=thread_id, unknown_roles="error" if strict else "keep"
    )
    save_state(state, output)
    click.echo(f"wrote {len(state)} chunks to {output}", err=True)
    for index, role in report.unknown_roles:
        click.echo(f"note: message {index} has role {role!r}; kept as a CUSTOM chunk", err=True)
    if report.unanswered_calls:
        click.echo(f"note: {len(report.unanswered_calls)} tool call(s) have no result", err=True)


main.add_command(inspect_command)


def _register_store_commands() -> None:
    try:
        from memctx.store.cli import thread
    except ImportError:  # the store is optional at this stage of development
        return
    main.add_command(thread)


_register_store_commands()
main.add_command(chat)
main.add_command(team_commands)

from memctx._cli_compress import register_compress_commands  # noqa: E402

register_compress_commands(main)

__all__ = ["fail", "friendly_errors", "main", "result_to_json", "write_text_atomic"]
