"""Running ``memctx`` in process and checking its results, for the CLI tests."""

from __future__ import annotations

from pathlib import Path

from click.testing import CliRunner, Result

from memctx.cli import main


def run(*args: str | Path, input: str | bytes | None = None) -> Result:
    """``memctx ARGS`` with ``input`` on stdin; stdout and stderr kept apart."""
    return CliRunner().invoke(main, [str(a) for a in args], input=input)


def ok(result: Result) -> Result:
    """``result``, after checking that the command succeeded."""
    assert result.exit_code == 0, result.output
    return result


def one_error_line(result: Result, *needles: str, code: int = 1) -> str:
    """The single ``memctx: error: ...`` line on stderr, holding every one of ``needles``,
    of a command that exited with ``code``."""
    assert result.exit_code == code, result.output
    lines = result.stderr.splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith("memctx: error: ")
    for needle in needles:
        assert needle in lines[0], lines[0]
    return lines[0]
