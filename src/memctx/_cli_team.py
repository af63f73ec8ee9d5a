"""``memctx team ...``: team conversations kept in the store, from the command line.

Every command takes ``--db URL`` like ``memctx thread`` (a database URL or a
SQLite file; the default database otherwise). A team is a store thread: the
commands that write (``add``, ``task``, ``import``) create it, the others
need it to exist. Data goes to stdout, notes to stderr; bad input is one
``memctx: error: ...`` line and a non-zero exit.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import click

from memctx._cli_errors import fail
from memctx._cli_options import build_options, print_build_result
from memctx.store._cli_common import db_option, friendly, note, open_store, read_json

if TYPE_CHECKING:
    from memctx.store import MemoryStore
    from memctx.team import AgentContext, TeamConversation

F = TypeVar("F", bound=Callable[..., Any])


def _open(store: MemoryStore, team_id: str, *, create: bool = False) -> TeamConversation:
    from memctx.team import TeamConversation

    return TeamConversation.open(store, team_id, create=create)


def _text(value: str) -> str:
    """The text given, or stdin's when it is ``-``."""
    return sys.stdin.read() if value == "-" else value


@click.group("team", context_settings={"help_option_names": ["-h", "--help"]})
@db_option
def team() -> None:
    """Team conversations: several agents and people, each agent with its own context."""


@team.command("add")
@click.argument("team_id", metavar="TEAM")
@click.argument("text")
@click.option("--speaker", "role_id", required=True, help="Role id of who writes it.")
@click.option("--name", "role_name", default=None, help="Display name [default: the role id].")
@click.option("--ai", is_flag=True, help="The speaker is an AI agent (default: a person).")
@click.option(
    "--to",
    "addressees",
    multiple=True,
    help="Addressee (repeat for several) [default: the text's [NEXT:…] names; none: all].",
)
@db_option
@friendly
def add(
    team_id: str,
    text: str,
    role_id: str,
    role_name: str | None,
    ai: bool,
    addressees: tuple[str, ...],
) -> None:
    """Add the message TEXT ('-': stdin) to TEAM; print its id."""
    from memctx.team import Speaker, parse_next_markers

    content = _text(text)
    speaker = Speaker(
        role_id, role_name if role_name is not None else role_id, "ai" if ai else "human"
    )
    with open_store() as store:
        message = _open(store, team_id, create=True).add_message(
            content, speaker=speaker, addressees=addressees or parse_next_markers(content)
        )
    click.echo(message.id)


@team.command("task")
@click.argument("team_id", metavar="TEAM")
@click.argument("text", required=False)
@db_option
@friendly
def task(team_id: str, text: str | None) -> None:
    """Set TEAM's task to TEXT ('-': stdin; cut to 5 KB), or print it when TEXT is omitted."""
    with open_store() as store:
        if text is None:
            current = _open(store, team_id).team_task
            if current is None:
                note(f"{team_id} has no team task")
            else:
                click.echo(current)
            return
        conversation = _open(store, team_id, create=True)
        conversation.set_team_task(_text(text))
        stored = conversation.team_task or ""
    note(f"{team_id}: team task set ({len(stored.encode('utf-8'))} bytes)")


@team.command("show")
@click.argument("team_id", metavar="TEAM")
@click.option("--format", "output_format", type=click.Choice(["text", "json"]), default="text")
@db_option
@friendly
def show(team_id: str, output_format: str) -> None:
    """Print TEAM's messages as written (markers included), oldest first."""
    from memctx.team import format_addressees

    with open_store() as store:
        conversation = _open(store, team_id)
        messages, task_text = conversation.messages, conversation.team_task
    if output_format == "json":
        click.echo(json.dumps([m.to_dict() for m in messages], ensure_ascii=False, indent=2))
        return
    click.echo(f"# team {team_id}: {len(messages)} message(s)")
    if task_text is not None:
        click.echo(f"# task: {task_text}")
    for m in messages:
        who = f"{m.speaker.role_name} ({m.speaker.type})"
        click.echo(f"[{m.id}] {who} → {format_addressees(m.addressees)}")
        click.echo(m.content)


def _agent_options(func: F) -> F:
    """The options of ``context`` and ``prompt``: the agent, its type and instructions."""
    options = (
        click.argument("team_id", metavar="TEAM"),
        click.argument("agent_id", metavar="AGENT"),
        click.option(
            "--type",
            "agent_type",
            required=True,
            help="Agent type: claude(-code), codex/openai-codex, gemini/google-gemini, other.",
        ),
        click.option(
            "--window",
            type=click.IntRange(min=0),
            default=None,
            help="Messages before the current one [default: 5].",
        ),
        click.option("--system", "system_instruction", default=None, help="System instruction."),
        click.option(
            "--instruction-file",
            type=click.Path(exists=True, dir_okay=False, path_type=Path),
            default=None,
            help="A file of instructions for the agent (e.g. its AGENTS.md).",
        ),
        click.option(
            "--max-bytes",
            type=click.IntRange(min=1),
            default=None,
            help="Largest prompt in bytes [default: 786432].",
        ),
        click.option(
            "--format", "output_format", type=click.Choice(["text", "json"]), default="text"
        ),
    )
    for option in reversed(options):
        func = option(func)
    return func


def _context(
    team_id: str,
    agent_id: str,
    agent_type: str,
    window: int | None,
    system_instruction: str | None,
    instruction_file: Path | None,
    max_bytes: int | None,
) -> AgentContext:
    from memctx.team import DEFAULT_MAX_BYTES, TeamConversation

    instructions = instruction_file.read_text(encoding="utf-8") if instruction_file else None
    with open_store() as store:
        conversation = TeamConversation.open(
            store, team_id, create=False, max_bytes=max_bytes or DEFAULT_MAX_BYTES
        )
        return conversation.context_for_agent(
            agent_id,
            agent_type,
            window_size=window,
            system_instruction=system_instruction,
            instruction_file_text=instructions,
        )


@team.command("context")
@_agent_options
@db_option
@friendly
def context(team_id: str, agent_id: str, output_format: str, **options: Any) -> None:
    """Print the context AGENT gets to answer TEAM's latest message."""
    ctx = _context(team_id, agent_id, **options)
    if output_format == "json":
        data = {
            "context_messages": [
                {"from": m.from_, "to": m.to, "content": m.content} for m in ctx.context_messages
            ],
            "current_message": ctx.current_message,
            "team_task": ctx.team_task,
            "system_instruction": ctx.system_instruction,
            "instruction_file_text": ctx.instruction_file_text,
            "max_bytes": ctx.max_bytes,
        }
        click.echo(json.dumps(data, ensure_ascii=False, indent=2))
        return
    click.echo(f"# team task\n{ctx.team_task if ctx.team_task is not None else '(none)'}")
    click.echo(f"# context ({len(ctx.context_messages)} message(s))")
    for m in ctx.context_messages:
        click.echo(f"[{m.from_} → {m.to}] {m.content}")
    click.echo(f"# current message\n{ctx.current_message}")


@team.command("prompt")
@_agent_options
@db_option
@friendly
def prompt(team_id: str, agent_id: str, output_format: str, **options: Any) -> None:
    """Print the prompt assembled for AGENT's type; the system flag goes to stderr."""
    from memctx.team import TeamConversation

    ctx = _context(team_id, agent_id, **options)
    out = TeamConversation().assemble_prompt(options["agent_type"], ctx)
    if output_format == "json":
        data = {"prompt": out.prompt, "system_flag": out.system_flag}
        click.echo(json.dumps(data, ensure_ascii=False, indent=2))
        return
    click.echo(out.prompt, nl=False)
    if out.system_flag is not None:
        note(f"system flag: {out.system_flag}")


@team.command("build")
@click.argument("team_id", metavar="TEAM")
@click.argument("agent_id", metavar="AGENT")
@build_options
@db_option
@friendly
def build(
    team_id: str,
    agent_id: str,
    max_tokens: int | None,
    reserve_tokens: int,
    model: str,
    system_prompt: str | None,
    strategy: str,
    output_format: str,
) -> None:
    """Build AGENT's view of TEAM as messages within a token budget; report on stderr."""
    from memctx import create_tokenizer

    tokenizer = create_tokenizer(model)
    with open_store() as store:
        result = _open(store, team_id).build_for_agent(
            agent_id,
            max_tokens,
            tokenizer=tokenizer,
            reserve_tokens=reserve_tokens,
            system_prompt=system_prompt,
            strategy=strategy,
        )
    print_build_result(result, output_format)


@team.command("export")
@click.argument("team_id", metavar="TEAM")
@click.option(
    "-o",
    "--output",
    type=click.Path(dir_okay=False, path_type=Path),
    help="Write the snapshot here (atomically) instead of to stdout.",
)
@db_option
@friendly
def export(team_id: str, output: Path | None) -> None:
    """Print (or write) TEAM as a team snapshot: task and messages."""
    from memctx.statefile import write_text_atomic

    with open_store() as store:
        text = json.dumps(_open(store, team_id).export_snapshot(), ensure_ascii=False, indent=2)
    if output is None:
        click.echo(text)
    else:
        write_text_atomic(output, text + "\n")
        note(f"wrote {team_id} to {output}")


@team.command("import")
@click.argument("team_id", metavar="TEAM")
@click.argument("source", metavar="FILE")
@db_option
@friendly
def import_(team_id: str, source: str) -> None:
    """Replace TEAM's task and messages with a team snapshot (FILE, or '-' for stdin)."""
    data = read_json(source)
    with open_store() as store:
        conversation = _open(store, team_id, create=True)
        conversation.import_snapshot(data)
        count = len(conversation.messages)
    note(f"{team_id}: imported {count} message(s)")


@team.command("clear")
@click.argument("team_id", metavar="TEAM")
@click.option("--yes", is_flag=True, help="Confirm: the messages and the task are cleared.")
@db_option
@friendly
def clear(team_id: str, yes: bool) -> None:
    """Clear TEAM's messages and task (they stay in the thread's history); needs --yes."""
    if not yes:
        fail(f"clearing {team_id} hides its messages and task; add --yes to confirm")
    with open_store() as store:
        _open(store, team_id).clear()
    note(f"cleared {team_id}")
