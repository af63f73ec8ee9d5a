"""The ``memctx`` command line: the click group, one module per command family.

``main`` is the entry point (``memctx = "memctx.cli:main"``); every command
reports a failure as one line on stderr and a non-zero exit (see
:mod:`memctx.cli._errors`).
"""

from memctx.cli._main import COMMANDS, main

__all__ = ["COMMANDS", "main"]
