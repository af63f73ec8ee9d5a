"""Click options shared by ``memctx build`` and ``memctx thread build``."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any, TypeVar

import click

from memctx._options import STRATEGIES

F = TypeVar("F", bound=Callable[..., Any])

_BUILD_OPTIONS = (
    click.option("--max-tokens", type=click.IntRange(min=1), default=None, help="Token budget."),
    click.option(
        "--reserve",
        "reserve_tokens",
        type=click.IntRange(min=0),
        default=0,
        help="Tokens kept free for the answer.",
    ),
    click.option(
        "--model",
        default="estimate",
        show_default=True,
        help="Model or encoding to count with (e.g. gpt-4o, cl100k_base, estimate).",
    ),
    click.option("--system-prompt", default=None, help="Text opening the system message."),
    click.option("--strategy", type=click.Choice(STRATEGIES), default="recent", show_default=True),
    click.option(
        "--format",
        "output_format",
        type=click.Choice(["text", "json", "openai"]),
        default="text",
        show_default=True,
    ),
)


def build_options(func: F) -> F:
    """Add ``--max-tokens``, ``--reserve``, ``--model``, ``--system-prompt``, ``--strategy``
    and ``--format`` to a command."""
    for option in reversed(_BUILD_OPTIONS):
        func = option(func)
    return func


def build_options_without_format(func: F) -> F:
    """The options of :func:`build_options` but ``--format`` (for commands that print no
    messages)."""
    for option in reversed(_BUILD_OPTIONS[:-1]):  # --format is the last one
        func = option(func)
    return func


def result_to_json(result: Any) -> dict[str, Any]:
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


def print_build_result(result: Any, output_format: str) -> None:
    """Messages to stdout as ``text``, ``openai`` or ``json``; the summary to stderr."""
    if output_format == "text":
        click.echo(result.to_text())
    elif output_format == "openai":
        click.echo(json.dumps(result.to_openai(), ensure_ascii=False, indent=2))
    else:
        click.echo(json.dumps(result_to_json(result), ensure_ascii=False, indent=2))
    click.echo(result.summary(), err=True)
