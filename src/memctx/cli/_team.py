"""``memctx team ...``: team conversations kept in the store, from the command line.

Every command takes ``--db URL`` like ``memctx thread`` (a database URL or a
SQLite file; the default database otherwise). A team is a store thread: the
commands that write (``add``, ``task``, ``import``) create it, the others
need it to exist. Data goes to stdout, notes to stderr; bad input is one
``memctx: error: ...`` line and a non-zero exit. Commands that print data
take ``--format json`` (the schema is in each ``--format`` help and in the
"JSON output" table of docs/cli.md).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TypeVar

import click

from memctx.cli._errors import fail
from memctx.cli._options import (
    all_build_options,
    build_kwargs,
    format_option,
    print_build_result,
)
from memctx.cli._support import (
    STDIO,
    about_file,
    display_name,
    echo_json,
    read_input,
    write_output,
)
from memctx.cli._thread_common import db_option, friendly, note, open_store, read_json

if TYPE_CHECKING:
    from memctx.store import MemoryStore
    from memctx.team import AgentContext, TeamConversation

F = TypeVar("F", bound=Callable[..., Any])


def _open(store: MemoryStore, team_id: str, *, create: bool = False) -> TeamConversation:
    from memctx.team import TeamConversation

    return TeamConversation.open(store, team_id, create=create)


def _text(value: str) -> str:
    """The text given, or stdin's when it is ``-``."""
    return _decode(read_input(STDIO), STDIO) if value == STDIO else value


def _decode(raw: bytes, source: str) -> str:
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        fail(f"{display_name(source)}: not UTF-8 text (byte {exc.start})")


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
@format_option("text", "json", help="text: the message's id; json: {team_id, id, addressees}.")
@db_option
@friendly
def add(
    team_id: str,
    text: str,
    role_id: str,
    role_name: str | None,
    ai: bool,
    addressees: tuple[str, ...],
    output_format: str,
) -> None:
    """Add the message TEXT ('-': stdin) to TEAM; print its id."""
    from memctx.team import Speaker, TeamConversation, parse_next_markers

    content = _text(text)
    speaker = Speaker(
        role_id, role_name if role_name is not None else role_id, "ai" if ai else "human"
    )
    to = addressees or parse_next_markers(content)
    TeamConversation().add_message(content, speaker=speaker, addressees=to)  # checked first
    with open_store() as store:
        message = _open(store, team_id, create=True).add_message(
            content, speaker=speaker, addressees=to
        )
    if output_format == "json":
        echo_json({"team_id": team_id, "id": message.id, "addressees": list(message.addressees)})
        return
    click.echo(message.id)


@team.command("task")
@click.argument("team_id", metavar="TEAM")
@click.argument("text", required=False)
@format_option(
    "text",
    "json",
    help="text: the task (when TEXT is omitted), else a note on stderr; json: {team_id, "
    "team_task, bytes} (team_task is null when there is none).",
)
@db_option
@friendly
def task(team_id: str, text: str | None, output_format: str) -> None:
    """Set TEAM's task to TEXT ('-': stdin; cut to 5 KB), or print it when TEXT is omitted."""
    new_task = None if text is None else _text(text)  # read before anything is written
    with open_store() as store:
        if new_task is None:
            current = _open(store, team_id).team_task
        else:
            conversation = _open(store, team_id, create=True)
            conversation.set_team_task(new_task)
            current = conversation.team_task
    size = len((current or "").encode("utf-8"))
    if output_format == "json":
        echo_json({"team_id": team_id, "team_task": current, "bytes": size})
    elif text is not None:
        note(f"{team_id}: team task set ({size} bytes)")
    elif current is None:
        note(f"{team_id} has no team task")
    else:
        click.echo(current)


@team.command("show")
@click.argument("team_id", metavar="TEAM")
@format_option(
    "text",
    "json",
    help="text: the task, then '[id] speaker (type) → addressees' and the text per message; "
    "json: [{id, content, speaker: {role_id, role_name, type}, addressees, created_at}].",
)
@db_option
@friendly
def show(team_id: str, output_format: str) -> None:
    """Print TEAM's messages as written (markers included), oldest first."""
    from memctx.team import format_addressees

    with open_store() as store:
        conversation = _open(store, team_id)
        messages, task_text = conversation.messages, conversation.team_task
    if output_format == "json":
        echo_json([m.to_dict() for m in messages])
        return
    click.echo(f"# team {team_id}: {len(messages)} message(s)")
    if task_text is not None:
        click.echo(f"# task: {task_text}")
    for m in messages:
        who = f"{m.speaker.role_name} ({m.speaker.type})"
        click.echo(f"[{m.id}] {who} → {format_addressees(m.addressees)}")
        click.echo(m.content)


def _agent_options(json_schema: str) -> Callable[[F], F]:
    """The options of ``context`` and ``prompt``: the agent, its type and instructions, and
    ``--format`` whose json output is ``json_schema``."""
    return lambda func: _add_agent_options(func, json_schema)


def _add_agent_options(func: F, json_schema: str) -> F:
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
            type=click.Path(exists=True, dir_okay=False, allow_dash=True),
            default=None,
            help="A file of instructions for the agent (e.g. its AGENTS.md; '-': stdin).",
        ),
        click.option(
            "--max-bytes",
            type=click.IntRange(min=1),
            default=None,
            help="Largest prompt in bytes [default: 786432].",
        ),
        format_option("text", "json", help=json_schema),
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
    instruction_file: str | None,
    max_bytes: int | None,
) -> AgentContext:
    from memctx.team import DEFAULT_MAX_BYTES, TeamConversation

    instructions = None
    if instruction_file is not None:
        instructions = _decode(read_input(instruction_file), instruction_file)
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
@_agent_options(
    "text: the task, the context messages and the current message; json: {context_messages: "
    "[{from, to, content}], current_message, team_task, system_instruction, "
    "instruction_file_text, max_bytes}."
)
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
        echo_json(data)
        return
    click.echo(f"# team task\n{ctx.team_task if ctx.team_task is not None else '(none)'}")
    click.echo(f"# context ({len(ctx.context_messages)} message(s))")
    for m in ctx.context_messages:
        click.echo(f"[{m.from_} → {m.to}] {m.content}")
    click.echo(f"# current message\n{ctx.current_message}")


@team.command("prompt")
@_agent_options(
    "text: the prompt on stdout, the system flag on stderr; json: {prompt, system_flag}."
)
@db_option
@friendly
def prompt(team_id: str, agent_id: str, output_format: str, **options: Any) -> None:
    """Print the prompt assembled for AGENT's type; the system flag goes to stderr."""
    from memctx.team import TeamConversation

    ctx = _context(team_id, agent_id, **options)
    out = TeamConversation().assemble_prompt(options["agent_type"], ctx)
    if output_format == "json":
        echo_json({"prompt": out.prompt, "system_flag": out.system_flag})
        return
    click.echo(out.prompt, nl=False)
    if out.system_flag is not None:
        note(f"system flag: {out.system_flag}")


@team.command("build")
@click.argument("team_id", metavar="TEAM")
@click.argument("agent_id", metavar="AGENT")
@all_build_options
@db_option
@friendly
def build(team_id: str, agent_id: str, output_format: str, **params: Any) -> None:
    """Build AGENT's view of TEAM as messages within a token budget; report on stderr.

    Takes every option of ``memctx build``; the team task is the chunk
    ``team-task`` and each message a chunk with the message's id (for
    --pin and --only).
    """
    options = build_kwargs(params)
    max_tokens = options.pop("max_tokens")
    with open_store() as store:
        result = _open(store, team_id).build_for_agent(agent_id, max_tokens, **options)
    print_build_result(result, output_format)


@team.command("export")
@click.argument("team_id", metavar="TEAM")
@click.option(
    "-o",
    "--output",
    type=click.Path(dir_okay=False, allow_dash=True),
    default=STDIO,
    show_default=True,
    help="Write the snapshot here (atomically; '-': stdout).",
)
@db_option
@friendly
def export(team_id: str, output: str) -> None:
    """Print (or write) TEAM as a team snapshot: task and messages."""
    from memctx.statefile import escape_surrogates

    with open_store() as store:
        text = json.dumps(_open(store, team_id).export_snapshot(), ensure_ascii=False, indent=2)
    write_output(output, escape_surrogates(text) + "\n")
    if output != STDIO:
        note(f"wrote {team_id} to {output}")


@team.command("import")
@click.argument("team_id", metavar="TEAM")
@click.argument("source", metavar="FILE", type=click.Path(dir_okay=False, allow_dash=True))
@format_option("text", "json", help="text: a note on stderr; json: {team_id, messages, team_task}.")
@db_option
@friendly
def import_(team_id: str, source: str, output_format: str) -> None:
    """Replace TEAM's task and messages with a team snapshot (FILE, or '-' for stdin)."""
    from memctx.team import TeamConversation

    data = read_json(source)
    with about_file(source):
        TeamConversation().import_snapshot(data)  # the whole snapshot checked first
    with open_store() as store:
        conversation = _open(store, team_id, create=True)
        with about_file(source):
            conversation.import_snapshot(data)
        count, task_text = len(conversation.messages), conversation.team_task
    if output_format == "json":
        echo_json({"team_id": team_id, "messages": count, "team_task": task_text})
        return
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
