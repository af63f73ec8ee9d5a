"""``memctx chat ...``: chat sessions in the store from the command line.

``post`` stores a user message and shows the round: its targets and, for each,
the prompt it gets (persona and colleagues, the history window, the input),
built like ``memctx build`` builds a state. Every command takes ``--db URL``,
as ``memctx thread`` does.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

import click

from memctx._cli_errors import fail, friendly_errors
from memctx.store._cli_common import db_option, note, open_store, read_json

if TYPE_CHECKING:
    from memctx.chat import ChatAgent, ChatRound


def _agents_from(source: str) -> list[ChatAgent]:
    from memctx.chat import ChatAgent

    data = read_json(source)
    if isinstance(data, dict) and set(data) == {"agents"}:
        data = data["agents"]
    if not isinstance(data, list):
        fail(f'{source}: expected a JSON array of agents (or {{"agents": [...]}})')
    return [ChatAgent.from_dict(item) for item in data]


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


@chat.command("new")
@click.argument("session_id", required=False)
@click.option(
    "--agents", "agents_file", required=True, metavar="FILE", help="JSON array of agents."
)
@click.option(
    "--mode", default="free_chat", show_default=True, help="free_chat, werewolf, quiz or workflow."
)
@role_option
@click.option("--window", default=20, show_default=True, help="History messages per prompt.")
@db_option
@friendly_errors
def new_session(
    session_id: str | None, agents_file: str, mode: str, roles: tuple[str, ...], window: int
) -> None:
    """Create the session SESSION_ID (or a fresh id) with the agents of FILE; print its id."""
    from memctx.chat import ChatSession

    agents = _agents_from(agents_file)
    with open_store() as store:
        session = ChatSession.create(
            store, session_id, agents=agents, mode=mode, role_map=_role_map(roles), window=window
        )
    click.echo(session.id)
    note(f"{session.id}: {len(agents)} agent(s), mode {mode}")


@chat.command("post")
@click.argument("session_id")
@click.argument("text")
@click.option(
    "--max-tokens", type=click.IntRange(min=1), default=None, help="Budget of each prompt."
)
@click.option("--model", default="estimate", show_default=True, help="Tokenizer to count with.")
@click.option("--format", "output_format", type=click.Choice(["text", "json"]), default="text")
@db_option
@friendly_errors
def post(
    session_id: str, text: str, max_tokens: int | None, model: str, output_format: str
) -> None:
    """Post TEXT as the user; show the targets and the prompt each one gets."""
    from memctx.chat import ChatSession

    with open_store() as store:
        chat_round = ChatSession.open(store, session_id).post(text)
    _show_round(chat_round, max_tokens, model, output_format)


@chat.command("step")
@click.argument("session_id")
@click.option(
    "--max-tokens", type=click.IntRange(min=1), default=None, help="Budget of each prompt."
)
@click.option("--model", default="estimate", show_default=True, help="Tokenizer to count with.")
@click.option("--format", "output_format", type=click.Choice(["text", "json"]), default="text")
@db_option
@friendly_errors
def step(session_id: str, max_tokens: int | None, model: str, output_format: str) -> None:
    """Workflow: open a round without input; the next node takes its turn."""
    from memctx.chat import ChatSession

    with open_store() as store:
        chat_round = ChatSession.open(store, session_id).step()
    _show_round(chat_round, max_tokens, model, output_format)


@chat.command("reply")
@click.argument("session_id")
@click.argument("round_number", type=int)
@click.argument("agent_id")
@click.argument("text")
@db_option
@friendly_errors
def reply(session_id: str, round_number: int, agent_id: str, text: str) -> None:
    """Store AGENT_ID's answer TEXT to round ROUND_NUMBER."""
    from memctx.chat import ChatSession

    with open_store() as store:
        message = ChatSession.open(store, session_id).reply(round_number, agent_id, text)
    note(f"{session_id}: stored {message.id} from {agent_id}")


@chat.command("history")
@click.argument("session_id")
@click.option("--format", "output_format", type=click.Choice(["text", "json"]), default="text")
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
        out["messages"] = [m.to_dict() for m in messages]
        click.echo(json.dumps(out, ensure_ascii=False, indent=2))
        return
    click.echo(f"# mode {settings.mode}, {settings.rounds} round(s)")
    for message in messages:
        who = "user" if message.role == "user" else message.agent_id or "assistant"
        click.echo(f"[{message.id}] {who}: {message.content}")


@chat.command("mode")
@click.argument("session_id")
@click.argument("mode")
@role_option
@db_option
@friendly_errors
def set_mode(session_id: str, mode: str, roles: tuple[str, ...]) -> None:
    """Switch the session to MODE (a workflow starts at the coder)."""
    from memctx.chat import ChatSession

    with open_store() as store:
        ChatSession.open(store, session_id).set_mode(mode, role_map=_role_map(roles))
    note(f"{session_id}: mode {mode}")


def _show_round(chat_round: ChatRound, max_tokens: int | None, model: str, fmt: str) -> None:
    from memctx._builder import create_builder
    from memctx._tokens import create_tokenizer

    context = chat_round.context
    tokenizer = create_tokenizer(model)
    builder = create_builder(tokenizer)
    results = {
        agent_id: builder.build(context.state_for(agent_id), max_tokens=max_tokens)
        for agent_id in context.targets.agent_ids
    }
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
            "prompt_history": [m.to_dict() for m in context.prompt_history],
            "workflow_task_prompt": context.workflow_task_prompt,
            "prompts": {
                agent_id: {"token_count": r.token_count, "messages": r.to_openai()}
                for agent_id, r in results.items()
            },
        }
        click.echo(json.dumps(out, ensure_ascii=False, indent=2))
        return
    node = f", node {context.targets.node}" if context.targets.node else ""
    click.echo(f"# round {chat_round.number} ({context.mode}{node})")
    click.echo(f"# targets: {', '.join(context.targets.agent_ids)}")
    for agent_id, result in results.items():
        click.echo(f"\n##### prompt of {agent_id} ({result.token_count} tokens) #####")
        click.echo(result.to_text())
