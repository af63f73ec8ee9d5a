"""Click options shared by the commands: the build options and ``--format``.

Every field of :class:`~memctx.BuildOptions` has an option here (a test keeps it
so). To expose a new build option on ``memctx build`` and ``memctx thread build``
(and any command decorated with :func:`all_build_options`), add one entry to
``_BUILD_OPTIONS`` whose parameter name is the field's name (the tokenizer is
``--model``) and its name to ``BUILD_OPTION_NAMES``. :func:`build_kwargs` turns
the parsed values into keyword arguments for ``ContextBuilder.build`` /
``MemoryStore.build``. :func:`build_options_without_format` is the same
without ``--format``; :func:`build_options` gives the original five options only.

Choices are case-insensitive (``--type environment`` = ``ENVIRONMENT``): make
them with :func:`choice`. ``--format`` is made with :func:`format_option`; each
command documents the schema of its ``json`` output in its help text and in
the "JSON output" table of docs/cli.md.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

import click

from memctx._build.options import STRATEGIES
from memctx._chunk import ChunkType
from memctx._result import ContextBuildResult

F = TypeVar("F", bound=Callable[..., Any])

CHUNK_TYPES = tuple(t.value for t in ChunkType)
ROLES = ("system", "user", "assistant")


def choice(values: Sequence[str]) -> click.Choice[str]:
    """A case-insensitive choice; the value passed on is spelled as in ``values``."""
    return click.Choice(list(values), case_sensitive=False)


def format_option(*formats: str, help: str, default: str | None = None) -> Callable[[F], F]:
    """``--format`` with ``formats`` (the first is the default) and the schema in ``help``."""
    return click.option(
        "--format",
        "output_format",
        type=choice(formats),
        default=default or formats[0],
        show_default=True,
        help=help,
    )


_BUILD_OPTIONS = (
    click.option(
        "--max-tokens",
        type=click.IntRange(min=1),
        default=None,
        help="Token budget for the whole request [default: no limit].",
    ),
    click.option(
        "--reserve",
        "reserve_tokens",
        type=click.IntRange(min=0),
        default=0,
        show_default=True,
        help="Tokens kept free for the answer (messages use at most max-tokens minus this).",
    ),
    click.option(
        "--model",
        "tokenizer",
        default="estimate",
        show_default=True,
        help="Model or encoding to count with (gpt-4o, cl100k_base, claude-*, estimate).",
    ),
    click.option(
        "--system-prompt", default=None, help="Text that opens the leading system message."
    ),
    click.option(
        "--strategy",
        type=choice(STRATEGIES),
        default="recent",
        show_default=True,
        help="How to choose when not all fits: recent (newest first, no holes), stable "
        "(like recent, the start moving in large steps so prompt caches hit), priority "
        "(highest priority first), in_order (oldest first, each that fits).",
    ),
    click.option(
        "--no-system",
        "include_system",
        flag_value=False,
        default=True,
        help="Leave out the SYSTEM chunks.",
    ),
    click.option(
        "--no-environment",
        "include_environment",
        flag_value=False,
        default=True,
        help="Leave out tool and skill results (ENVIRONMENT chunks).",
    ),
    click.option(
        "--exclude-type",
        "exclude_types",
        type=choice(CHUNK_TYPES),
        multiple=True,
        help="Leave out chunks of this type (repeatable).",
    ),
    click.option(
        "--only",
        "include_only_chunk_ids",
        metavar="CHUNK_ID",
        multiple=True,
        help="Consider only these chunk ids (repeatable).",
    ),
    click.option(
        "--pin",
        "pinned_chunk_ids",
        metavar="CHUNK_ID",
        multiple=True,
        help="Always keep this chunk (repeatable).",
    ),
    click.option(
        "--no-pin-newest",
        "pin_newest",
        flag_value=False,
        default=True,
        help="Do not force the newest chunk in.",
    ),
    click.option(
        "--no-pin-pending",
        "pin_pending_calls",
        flag_value=False,
        default=True,
        help="Do not force in calls still waiting for their result.",
    ),
    click.option(
        "--provider",
        type=choice(("openai", "anthropic", "gemini")),
        default=None,
        help="Count the turns this provider's adapter adds (anthropic, gemini) in the budget.",
    ),
    click.option(
        "--opening-turn",
        default=None,
        help="With --provider anthropic|gemini: the user turn added before a leading "
        "assistant turn (counted) [default: (The conversation so far follows.)].",
    ),
    click.option(
        "--closing-turn",
        default=None,
        help="With --provider anthropic|gemini: the user turn added after a final "
        "assistant turn (counted) [default: Continue.].",
    ),
    click.option(
        "--prefill",
        is_flag=True,
        default=False,
        help="With --provider anthropic|gemini: keep a final assistant turn as the prefill "
        "(no closing turn).",
    ),
    click.option(
        "--tools",
        type=choice(("native", "text")),
        default="native",
        show_default=True,
        help="The request form --format openai|responses|anthropic|gemini prints: native "
        "tool calls, media and signed reasoning, or every chunk as XML text (with "
        "--provider openai, also the form token_count counts).",
    ),
    click.option(
        "--item-ids/--no-item-ids",
        default=True,
        show_default=True,
        help="With --format responses: keep each item's Responses id (fc_..., msg_..., "
        "rs_...); --no-item-ids for requests sent with store=false, whose ids the API "
        "refuses.",
    ),
    format_option(
        "text",
        "json",
        "openai",
        "responses",
        "anthropic",
        "gemini",
        help="text: the messages, readable; openai: chat-completions messages (JSON); "
        "responses: Responses API input items (JSON); anthropic: Messages API arguments "
        "{system, messages, tools} (JSON); gemini: generate_content arguments {contents, "
        "config} (JSON); the request formats build for their provider unless --provider "
        "says it; json: {messages: [{role, content, chunk_ids}], token_count, token_count_exact, "
        "tokenizer, max_tokens, reserve_tokens, strategy, included_chunk_ids, "
        "excluded_chunk_ids, exclusions: {id: {reason, tokens}}, chunk_tokens, "
        "replaced_characters}.",
    ),
)

#: The build option names the CLI takes (each a BuildOptions field, ``tokenizer`` as --model).
BUILD_OPTION_NAMES = frozenset(
    {
        "max_tokens",
        "reserve_tokens",
        "tokenizer",
        "system_prompt",
        "strategy",
        "include_system",
        "include_environment",
        "exclude_types",
        "include_only_chunk_ids",
        "pinned_chunk_ids",
        "pin_newest",
        "pin_pending_calls",
        "provider",
        "opening_turn",
        "closing_turn",
        "prefill",
        "tools",
    }
)


def all_build_options(func: F) -> F:
    """Add every build option and ``--format text|json|openai`` to a command.

    The command receives the options as keyword arguments named after the
    :class:`~memctx.BuildOptions` fields, and ``output_format``; pass them
    through :func:`build_kwargs`. A request format (``openai``, ``responses``,
    ``anthropic``, ``gemini``) builds for its provider unless ``--provider`` is
    given (a different one is a usage error); ``output_format`` then carries
    the ``--tools`` form to print (:class:`RequestFormat`).
    """

    @functools.wraps(func)
    def command(*args: Any, **params: Any) -> Any:
        chosen = params.get("output_format")
        item_ids = params.pop("item_ids", True)
        if not item_ids and chosen != "responses":
            raise click.UsageError("--no-item-ids applies to --format responses only")
        target = REQUEST_PROVIDERS.get(chosen or "")
        if target is not None:
            given = params.get("provider")
            if given is None:
                params["provider"] = target
            elif given != target:
                raise click.UsageError(
                    f"--format {chosen} builds for {target}, not --provider {given}"
                )
            params["output_format"] = RequestFormat(
                str(chosen), params.get("tools", "native"), item_ids
            )
        return func(*args, **params)

    for option in reversed(_BUILD_OPTIONS):
        command = option(command)
    return command  # type: ignore[return-value]


REQUEST_PROVIDERS = {
    "openai": "openai",
    "responses": "openai",
    "anthropic": "anthropic",
    "gemini": "gemini",
}
"""The request formats of ``--format`` and the provider each builds for."""


class RequestFormat(str):
    """A request ``--format`` (a string) with the ``--tools`` form to print and, for
    ``responses``, whether items keep their ids."""

    tools: str
    item_ids: bool

    def __new__(cls, name: str, tools: str, item_ids: bool = True) -> RequestFormat:
        made = super().__new__(cls, name)
        made.tools = tools
        made.item_ids = item_ids
        return made


# The first five options, with the model as ``model``: what commands written before every
# build option was exposed receive (``memctx team build``).
_BASIC_OPTIONS = (
    *_BUILD_OPTIONS[:2],
    click.option(
        "--model",
        default="estimate",
        show_default=True,
        help="Model or encoding to count with (gpt-4o, cl100k_base, claude-*, estimate).",
    ),
    *_BUILD_OPTIONS[3:5],
)


def build_options(func: F) -> F:
    """``--max-tokens``, ``--reserve``, ``--model`` (as ``model``), ``--system-prompt``,
    ``--strategy`` and ``--format``; prefer :func:`all_build_options` for new commands."""
    for option in reversed((*_BASIC_OPTIONS, _BUILD_OPTIONS[-1])):
        func = option(func)
    return func


def build_options_without_format(func: F) -> F:
    """Every build option of :func:`all_build_options` but ``--format`` (for commands that
    print no messages); pass them through :func:`build_kwargs`."""
    for option in reversed(_BUILD_OPTIONS[:-1]):  # --format is the last one
        func = option(func)
    return func


def build_kwargs(params: dict[str, Any]) -> dict[str, Any]:
    """Pop the build options from a command's ``params``: keywords for ``build()``."""
    from memctx._render.tokens import create_tokenizer

    kwargs = {name: params.pop(name) for name in BUILD_OPTION_NAMES if name in params}
    tools = kwargs.pop("tools", None)
    if kwargs.get("provider") == "openai" and tools is not None:
        kwargs["tools"] = tools  # an OpenAI build counts the form it sends
    kwargs["tokenizer"] = create_tokenizer(kwargs.get("tokenizer") or "estimate")
    kwargs["include_only_chunk_ids"] = kwargs.get("include_only_chunk_ids") or None
    kwargs["pinned_chunk_ids"] = tuple(kwargs.get("pinned_chunk_ids") or ())
    kwargs["exclude_types"] = tuple(kwargs.get("exclude_types") or ())
    return kwargs


def result_to_json(result: ContextBuildResult) -> dict[str, Any]:
    """The whole build result as JSON: messages and report."""
    return {
        "messages": [
            {"role": m.role, "content": m.content, "chunk_ids": list(m.chunk_ids)}
            for m in result.messages
        ],
        "token_count": result.token_count,
        "token_count_exact": result.token_count_exact,
        "tokenizer": result.tokenizer_name,
        "max_tokens": result.max_tokens,
        "reserve_tokens": result.reserve_tokens,
        "strategy": result.strategy,
        "included_chunk_ids": list(result.included_chunk_ids),
        "excluded_chunk_ids": list(result.excluded_chunk_ids),
        "exclusions": {
            cid: {"reason": e.reason.value, "tokens": e.tokens}
            for cid, e in result.exclusions.items()
        },
        "chunk_tokens": dict(result.chunk_tokens),
        "replaced_characters": dict(result.replaced_characters),
    }


def print_build_result(result: ContextBuildResult, output_format: str) -> None:
    """Messages to stdout as ``text``, ``json`` or a provider's request (``openai``,
    ``responses``, ``anthropic``, ``gemini``: JSON); the summary to stderr."""
    from memctx.cli._support import dumps_json, note

    tools = getattr(output_format, "tools", "native")
    if output_format == "text":
        click.echo(result.to_text())
    elif output_format == "openai":
        click.echo(dumps_json(result.to_openai(tools=tools)))
    elif output_format == "responses":
        item_ids = getattr(output_format, "item_ids", True)
        click.echo(dumps_json(result.to_responses(tools=tools, item_ids=item_ids)))
    elif output_format == "anthropic":
        click.echo(dumps_json(result.to_anthropic(tools=tools)))
    elif output_format == "gemini":
        click.echo(dumps_json(result.to_gemini(tools=tools)))
    else:
        click.echo(dumps_json(result_to_json(result)))
    note(result.summary())


__all__ = [
    "BUILD_OPTION_NAMES",
    "all_build_options",
    "build_kwargs",
    "build_options",
    "build_options_without_format",
    "choice",
    "format_option",
    "print_build_result",
    "result_to_json",
]
