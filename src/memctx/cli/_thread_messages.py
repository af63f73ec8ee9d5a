"""Chunks given on the command line: ``--user TEXT --assistant TEXT ...`` in order, or a file."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, TypeVar

import click

from memctx.cli._support import about_file, fail, progress, read_json

if TYPE_CHECKING:
    from memctx._chunk import Chunk

F = TypeVar("F", bound=Callable[..., Any])

#: option → (parameter name, constructor name in memctx.chunks, help)
MESSAGE_OPTIONS: dict[str, tuple[str, str, str]] = {
    "--system": ("system_texts", "system", "System context."),
    "--user": ("user_texts", "user", "A user message."),
    "--assistant": ("assistant_texts", "assistant", "An assistant response."),
    "--clarification": ("clarification_texts", "clarification", "An assistant clarification."),
    "--thinking": ("thinking_texts", "thinking", "The agent's thinking."),
}
_ORDER = "memctx.message_order"


class MessagesCommand(click.Command):
    """A command whose message options keep the order they were typed in.

    click gathers a repeated option's values per option; this records, before
    parsing, which message option came first, second, ... so that
    ``--user a --assistant b --user c`` gives ``a, b, c``.
    """

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        ctx.meta[_ORDER] = _message_order(self, args)
        return super().parse_args(ctx, args)


def _message_order(command: click.Command, args: Sequence[str]) -> list[str]:
    takes_value = {
        opt
        for p in command.params
        if isinstance(p, click.Option) and not p.is_flag and not p.count
        for opt in p.opts
    }
    order: list[str] = []
    i = 0
    while i < len(args):
        arg = args[i]
        if arg == "--":
            break
        name, has_value, _ = arg.partition("=")
        if name in MESSAGE_OPTIONS:
            order.append(name)
        i += 1 if has_value or name not in takes_value else 2
    return order


def message_options(func: F) -> F:
    """Add ``--system``, ``--user``, ``--assistant``, ``--clarification``, ``--thinking``."""
    for option, (param, _, help_text) in reversed(MESSAGE_OPTIONS.items()):
        func = click.option(
            option, param, multiple=True, metavar="TEXT", help=f"{help_text} (repeatable)"
        )(func)
    return func


def given_messages(params: dict[str, Any]) -> list[Chunk]:
    """Pop the message options from ``params``: one chunk per message, in typed order."""
    from memctx import chunks as make

    values = {
        option: list(params.pop(param, ())) for option, (param, _, _) in MESSAGE_OPTIONS.items()
    }
    order = click.get_current_context().meta.get(_ORDER, [])
    if sorted(order) != sorted(o for o, texts in values.items() for _ in texts):
        order = [o for o, texts in values.items() for _ in texts]  # pragma: no cover
    result = []
    for option in order:
        text = values[option].pop(0)
        result.append(getattr(make, MESSAGE_OPTIONS[option][1])(text))
    return result


def chunks_from_json(data: Any, source: str = "-") -> list[Chunk]:
    """Chunks from a state file, an array of chunk objects, or one chunk object."""
    from memctx.statefile import chunk_from_dict, state_from_dict

    with about_file(source):
        if isinstance(data, dict) and "version" in data:
            return list(state_from_dict(data).chunks)
        if isinstance(data, list):
            items = progress(enumerate(data), len(data), "reading chunks")
            return [chunk_from_dict(item, index) for index, item in items]
        return [chunk_from_dict(data)]


def chunks_to_add(source: str | None, params: dict[str, Any], *, one: bool = False) -> list[Chunk]:
    """The chunks a command was given: from FILE, or from the message options (not both)."""
    messages = given_messages(params)
    if (source is None) == (not messages):
        fail(f"give either FILE or messages ({', '.join(MESSAGE_OPTIONS)})")
    new = messages if source is None else chunks_from_json(read_json(source), source)
    if one and len(new) != 1:
        fail(f"give exactly one chunk, got {len(new)}")
    return new
