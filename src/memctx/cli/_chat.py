"""``memctx chat ...``: chat sessions in the store from the command line.

``post`` stores a user message and shows the round: its targets and, for each,
the prompt it gets (persona and colleagues, the history window, the input),
built like ``memctx build`` builds a state. Every command takes ``--db URL``,
as ``memctx thread`` does, and ``--format json`` (the schemas are in each
``--format`` help and the "JSON output" table of docs/cli.md).
"""

from __future__ import annotations

import contextlib
import re
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

import click

from memctx._exceptions import ChatError
from memctx.chat._modes import MODES
from memctx.cli._errors import CliError, fail, friendly_errors
from memctx.cli._options import choice, format_option
from memctx.cli._support import STDIO, about_file, echo_json, read_input
from memctx.cli._thread_common import db_option, note, open_store, read_json

if TYPE_CHECKING:
    from memctx._result import ContextBuildResult
    from memctx.chat import ChatAgent, ChatMessage, ChatRound


def _agents_from(source: str) -> list[ChatAgent]:
    from memctx.chat import ChatAgent

    data = read_json(source)
    if isinstance(data, dict) and set(data) == {"agents"}:
        data = data["agents"]
    if not isinstance(data, list):
        fail(f'{source}: expected a JSON array of agents (or {{"agents": [...]}})')
    with about_file(source):
        return [ChatAgent.from_dict(item) for item in data]


def _text(value: str) -> str:
    """The text given, or stdin's when it is ``-``."""
    return read_input(STDIO).decode("utf-8") if value == STDIO else value


def _role_map(roles: tuple[str, ...]) -> dict[str, list[str]] | None:
    if not roles:
        return None
    role_map: dict[str, list[str]] = {}
    for item in roles:
        node, sep, agent = item.partition("=")
        if not sep or not node or not agent:
            fail(f"--role: expected NODE=AGENT_ID, got {item!r}")
        role_map.setdefault(node, []).append(agent)
    return role_map


_ROLE_MAP = re.compile(r"\brole_map(?:\['([^']*)'\])?")


@contextlib.contextmanager
def _roles_as_typed() -> Iterator[None]:
    """Errors about the library's ``role_map`` name ``--role`` (``role_map['coder']``:
    ``--role coder=...``)."""
    try:
        yield
    except ChatError as exc:
        message = str(exc)
        if "role_map" not in message:
            raise
        named = _ROLE_MAP.sub(lambda m: f"--role {m[1]}=..." if m[1] else "--role", message)
        raise CliError(named) from exc


role_option = click.option(
    "--role",
    "roles",
    multiple=True,
    metavar="NODE=AGENT",
    help="Who plays a workflow node (coder, reviewer, tester); repeat for each.",
)


@click.group("chat", context_settings={"help_option_names": ["-h", "--help"]})
@db_option
def chat() -> None:
    """Chat sessions: post messages, see which agents answer and what each is prompted with."""


_round_format = format_option(
    "text",
    "json",
    help="text: the targets, then each one's prompt as messages; json: {round, message_id, "
    "mode, node, targets, next_mode_state, prompt_user_text, prompt_history: [{role, content, "
    "agent_id, id}], workflow_task_prompt, prompts: {AGENT: {token_count, messages}}}.",
)


@chat.command("new")
@click.argument("session_id", required=False)
@click.option(
    "--agents",
    "agents_file",
    type=click.Path(dir_okay=False, allow_dash=True),
    required=True,
    metavar="FILE",
    help='JSON array of agents ({id, display_name, aliases, persona}; or {"agents": [...]}; '
    "'-': stdin).",
)
@click.option(
    "--mode",
    type=choice(MODES),
    default="free_chat",
    show_default=True,
    help="How targets are chosen: " + ", ".join(MODES) + ".",
)
@role_option
@click.option(
    "--window",
    type=click.IntRange(min=0),
    default=20,
    show_default=True,
    help="History messages per prompt.",
)
@format_option("text", "json", help="text: the session id; json: {id, agents, mode, window}.")
@db_option
@friendly_errors
def new_session(
    session_id: str | None,
    agents_file: str,
    mode: str,
    roles: tuple[str, ...],
    window: int,
    output_format: str,
) -> None:
    """Create the session SESSION_ID (or a fresh id) with the agents of FILE; print its id."""
    from memctx.chat import ChatSession

    agents = _agents_from(agents_file)
    with open_store() as store, _roles_as_typed():
        session = ChatSession.create(
            store, session_id, agents=agents, mode=mode, role_map=_role_map(roles), window=window
        )
    if output_format == "json":
        echo_json(
            {"id": session.id, "agents": [a.id for a in agents], "mode": mode, "window": window}
        )
        return
    click.echo(session.id)
    note(f"{session.id}: {len(agents)} agent(s), mode {mode}")


@chat.command("post")
@click.argument("session_id")
@click.argument("text")
@click.option(
    "--max-tokens", type=click.IntRange(min=1), default=None, help="Budget of each prompt."
)
@click.option("--model", default="estimate", show_default=True, help="Tokenizer to count with.")
@_round_format
@db_option
@friendly_errors
def post(
    session_id: str, text: str, max_tokens: int | None, model: str, output_format: str
) -> None:
    """Post TEXT ('-': stdin) as the user; show the targets and the prompt each one gets."""
    from memctx.chat import ChatSession

    text = _text(text)
    with open_store() as store:
        session = ChatSession.open(store, session_id)
        _prompts(session.preview(text), max_tokens, model)  # a failure stores nothing
        chat_round = session.post(text)
    _show_round(chat_round, max_tokens, model, output_format)


@chat.command("step")
@click.argument("session_id")
@click.option(
    "--max-tokens", type=click.IntRange(min=1), default=None, help="Budget of each prompt."
)
@click.option("--model", default="estimate", show_default=True, help="Tokenizer to count with.")
@_round_format
@db_option
@friendly_errors
def step(session_id: str, max_tokens: int | None, model: str, output_format: str) -> None:
    """Workflow: open a round without input; the next node takes its turn."""
    from memctx.chat import ChatSession

    with open_store() as store:
        session = ChatSession.open(store, session_id)
        _prompts(session.preview(), max_tokens, model)  # a failure stores nothing
        chat_round = session.step()
    _show_round(chat_round, max_tokens, model, output_format)


@chat.command("reply")
@click.argument("session_id")
@click.argument("round_number", type=int)
@click.argument("agent_id")
@click.argument("text")
@format_option(
    "text",
    "json",
    help="text: a note on stderr; json: {session_id, round, id, agent_id} on stdout.",
)
@db_option
@friendly_errors
def reply(session_id: str, round_number: int, agent_id: str, text: str, output_format: str) -> None:
    """Store AGENT_ID's answer TEXT ('-': stdin) to round ROUND_NUMBER."""
    from memctx.chat import ChatSession

    with open_store() as store:
        message = ChatSession.open(store, session_id).reply(round_number, agent_id, _text(text))
    if output_format == "json":
        out = {"session_id": session_id, "round": round_number, "id": message.id}
        echo_json({**out, "agent_id": agent_id})
        return
    note(f"{session_id}: stored {message.id} from {agent_id}")


@chat.command("history")
@click.argument("session_id")
@format_option(
    "text",
    "json",
    help="text: '[id] who: text' per message; json: {mode, mode_state, rounds, updated_at, "
    "messages: [{role, content, agent_id, id}]}.",
)
@db_option
@friendly_errors
def history(session_id: str, output_format: str) -> None:
    """Print the session's messages and its settings (mode, mode state, rounds)."""
    from memctx.chat import ChatSession

    with open_store() as store:
        session = ChatSession.open(store, session_id)
        messages = session.history()
        settings = session.settings()
    if output_format == "json":
        stored = settings.to_metadata()
        out = {key: stored[key] for key in ("mode", "mode_state", "rounds", "updated_at")}
        out["messages"] = [_message_json(m) for m in messages]
        echo_json(out)
        return
    click.echo(f"# mode {settings.mode}, {settings.rounds} round(s)")
    for message in messages:
        who = "user" if message.role == "user" else message.agent_id or "assistant"
        click.echo(f"[{message.id}] {who}: {message.content}")


@chat.command("mode")
@click.argument("session_id")
@click.argument("mode", type=choice(MODES), metavar="MODE")
@role_option
@format_option(
    "text",
    "json",
    help="text: a note on stderr; json: {session_id, mode, mode_state, role_map} on stdout.",
)
@db_option
@friendly_errors
def set_mode(session_id: str, mode: str, roles: tuple[str, ...], output_format: str) -> None:
    """Switch the session to MODE (a workflow starts at the coder)."""
    from memctx.chat import ChatSession

    with open_store() as store:
        session = ChatSession.open(store, session_id)
        with _roles_as_typed():
            session.set_mode(mode, role_map=_role_map(roles))
        stored = session.settings().to_metadata()
    if output_format == "json":
        keys = ("mode", "mode_state", "role_map")
        echo_json({"session_id": session_id, **{key: stored[key] for key in keys}})
        return
    note(f"{session_id}: mode {mode}")


def _message_json(message: ChatMessage) -> dict[str, Any]:
    """A message as the JSON schema has it: every key, null where there is no value."""
    return {
        "role": message.role,
        "content": message.content,
        "agent_id": message.agent_id,
        "id": message.id,
    }


def _prompts(
    chat_round: ChatRound, max_tokens: int | None, model: str
) -> dict[str, ContextBuildResult]:
    """Each target's prompt for ``chat_round``, built under ``max_tokens``."""
    from memctx._build.builder import create_builder
    from memctx._render.tokens import create_tokenizer

    context = chat_round.context
    builder = create_builder(create_tokenizer(model))
    return {
        agent_id: builder.build(context.state_for(agent_id), max_tokens=max_tokens)
        for agent_id in context.targets.agent_ids
    }


def _show_round(chat_round: ChatRound, max_tokens: int | None, model: str, fmt: str) -> None:
    context = chat_round.context
    results = _prompts(chat_round, max_tokens, model)
    state = context.targets.mode_state
    if fmt == "json":
        out: dict[str, Any] = {
            "round": chat_round.number,
            "message_id": None if chat_round.message is None else chat_round.message.id,
            "mode": context.mode,
            "node": context.targets.node,
            "targets": list(context.targets.agent_ids),
            "next_mode_state": None if state is None else state.to_dict(),
            "prompt_user_text": context.prompt_user_text,
            "prompt_history": [_message_json(m) for m in context.prompt_history],
            "workflow_task_prompt": context.workflow_task_prompt,
            "prompts": {
                agent_id: {"token_count": r.token_count, "messages": r.to_openai()}
                for agent_id, r in results.items()
            },
        }
        echo_json(out)
        return
    node = f", node {context.targets.node}" if context.targets.node else ""
    click.echo(f"# round {chat_round.number} ({context.mode}{node})")
    click.echo(f"# targets: {', '.join(context.targets.agent_ids)}")
    for agent_id, result in results.items():
        click.echo(f"\n##### prompt of {agent_id} ({result.token_count} tokens) #####")
        click.echo(result.to_text())
