"""MkDocs hooks for the memctx site (not a page: excluded in mkdocs.yml).

- ``memctx`` loads most of its commands only when they run (``memctx.cli.COMMANDS``);
  mkdocs-click documents the commands a group holds, so the CLI reference asks the
  group for every command it lists first.
- The docstrings are written with Sphinx roles, which the API reference would show
  as typed; they are shown as code names.
"""

from __future__ import annotations

import re
from typing import Any

import click


def on_startup(**_: Any) -> None:
    """Load every ``memctx`` command into the group, for the CLI reference."""
    from memctx.cli import main

    ctx = click.Context(main)
    for name in main.list_commands(ctx):
        command = main.get_command(ctx, name)
        if command is not None and name not in main.commands:
            main.add_command(command, name)


_ROLE = re.compile(r":(?:class|func|mod|data|meth|attr|exc|obj):<code>~?(?P<name>[^<]*)</code>")


def on_page_content(html: str, **_: Any) -> str:
    """Show the docstrings' Sphinx roles (``:class:`~memctx.X` ``) as plain code names."""
    return _ROLE.sub(lambda m: f"<code>{m.group('name')}</code>", html)
