"""Click options shared by ``memctx build`` and ``memctx thread build``."""

from __future__ import annotations

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
