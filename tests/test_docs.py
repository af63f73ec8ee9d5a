"""Every example in README.md and docs/ runs as written.

Each page is one test: its fenced blocks run top to bottom in one namespace, in a
fresh temporary directory, with the store's default database pointed at a file
there. What a block is depends on its fence and on an HTML comment on the line
before it:

- ```` ```python ````: executed.
- ```` ```console ````: each ``$ memctx ...`` line runs through click's
  ``CliRunner`` and must exit 0; the lines shown under a command, if any, are its
  exact standard output. ``$ pytest ...`` runs pytest in a subprocess (exit 0).
- ``<!-- write: PATH -->`` before any block: its text is written to PATH (a test
  module, a ``conftest.py``, a state file) instead of being run.
- ``<!-- expect: PATH -->`` before any block: PATH must hold exactly that text.
- ``<!-- not run -->`` before any block: skipped (it needs an API key or a server);
  a page may have only a few of these.

Other fences (``sh``, ``xml``, ``text``, ``toml``, ...) are illustrations.
"""

from __future__ import annotations

import re
import shlex
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import attrs
import pytest
from click.testing import CliRunner

import memctx
from doc_pages import ROOT, Block, blocks
from memctx.cli import main
from memctx.store import MemoryStore

DOCS = ROOT / "docs"
PAGES = [ROOT / "README.md", *sorted(DOCS.rglob("*.md"))]
MAX_NOT_RUN = 4


def pages_with_examples() -> list[Path]:
    return [page for page in PAGES if any(block.runs for block in blocks(page))]


@attrs.frozen
class Command:
    """A ``$ ...`` line of a console block and the output shown under it."""

    argv: tuple[str, ...]
    shown: str


def commands(body: str) -> Iterator[Command]:
    """The commands of a console block: ``\\``-continued lines joined, output kept."""
    lines = body.splitlines()
    i = 0
    while i < len(lines):
        line = lines[i]
        if not line.startswith("$ "):
            raise AssertionError(f"console output before any command: {line!r}")
        command = line[2:]
        while command.endswith("\\"):
            i += 1
            command = command[:-1] + lines[i].strip()
        i += 1
        shown = []
        while i < len(lines) and not lines[i].startswith("$ "):
            shown.append(lines[i])
            i += 1
        yield Command(tuple(shlex.split(command, comments=True)), "\n".join(shown).strip("\n"))


def run_console(block: Block) -> None:
    for command in commands(block.body):
        program, *args = command.argv
        if program == "memctx":
            result = CliRunner().invoke(main, args)
            assert result.exit_code == 0, (
                f"{block.where}: {' '.join(command.argv)} exited {result.exit_code}:\n"
                f"{result.output}"
            )
            if command.shown:
                printed = "\n".join(line.rstrip() for line in result.stdout.splitlines())
                assert printed.strip("\n") == command.shown, f"{block.where}: output differs"
        elif program == "pytest":
            done = subprocess.run(
                [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", *args],
                capture_output=True,
                text=True,
                timeout=300,
            )
            assert done.returncode == 0, f"{block.where}: pytest failed:\n{done.stdout}"
        else:
            raise AssertionError(f"{block.where}: only memctx and pytest run here: {program}")


def run_page(page: Path) -> dict[str, Any]:
    """Run every block of ``page`` in order, in the current directory."""
    namespace: dict[str, Any] = {"__name__": "__main__"}
    try:
        for block in blocks(page):
            if block.marker.startswith("write:"):
                path = Path(block.marker.removeprefix("write:").strip())
                path.parent.mkdir(parents=True, exist_ok=True)
                path.write_text(block.body, encoding="utf-8")
            elif block.marker.startswith("expect:"):
                path = Path(block.marker.removeprefix("expect:").strip())
                assert path.read_text(encoding="utf-8") == block.body, f"{block.where}: {path}"
            elif not block.runs:
                continue
            elif block.lang == "python":
                code = compile(block.body, block.where, "exec")
                try:
                    exec(code, namespace)
                except Exception as exc:
                    pytest.fail(f"{block.where}: {type(exc).__name__}: {exc}")
            elif block.lang == "console":
                run_console(block)
    finally:
        for value in namespace.values():
            if isinstance(value, MemoryStore):
                value.close()
    return namespace


@pytest.mark.parametrize("page", pages_with_examples(), ids=lambda p: str(p.relative_to(ROOT)))
def test_the_page_examples_run_top_to_bottom(page: Path, fresh_directory: Path) -> None:
    run_page(page)


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_a_page_skips_only_a_few_blocks(page: Path) -> None:
    skipped = [block.where for block in blocks(page) if block.marker == "not run"]

    assert len(skipped) <= MAX_NOT_RUN, skipped


class TestTheReadme:
    def test_it_opens_with_the_two_commands_ci_runs(self) -> None:
        first = blocks(ROOT / "README.md")[0]
        ci_last_line = (ROOT / ".ci" / "run").read_text(encoding="utf-8").rstrip().splitlines()[-1]

        assert first.body.splitlines() == [
            "pip install uv && uv run memctx build examples/coding_agent.json"
            " --max-tokens 800 --model gpt-4o",
            "pip install uv && uv run pytest",
        ]
        assert ci_last_line == "pip install uv && uv run pytest"

    def test_it_fits_a_landing_page(self) -> None:
        lines = (ROOT / "README.md").read_text(encoding="utf-8").splitlines()

        assert len(lines) <= 250

    def test_its_links_are_absolute(self) -> None:
        """PyPI shows the README out of the repository: a relative link would break."""
        text = (ROOT / "README.md").read_text(encoding="utf-8")
        targets = re.findall(r"\]\(([^)]+)\)", text)

        assert targets
        assert [t for t in targets if not t.startswith("https://")] == []


class TestThePagesDescribeWhatExists:
    def test_every_error_class_is_on_the_errors_page(self) -> None:
        page = (DOCS / "limits-and-errors.md").read_text(encoding="utf-8")
        errors = [
            name
            for name in memctx.__all__
            if isinstance(getattr(memctx, name), type)
            and issubclass(getattr(memctx, name), memctx.MemctxError)
        ]

        assert errors
        assert [name for name in errors if not re.search(rf"\b{name}\b", page)] == []


class TestTheRunner:
    """The rules test_docs applies to a page, checked on pages made for the test."""

    def test_a_failing_block_fails_with_its_page_and_line(self, fresh_directory: Path) -> None:
        page = fresh_directory / "page.md"
        page.write_text("Text.\n\n```python\nx = 1\n```\n\n```python\nassert x == 2\n```\n")

        with pytest.raises(pytest.fail.Exception, match=r"page\.md:7: AssertionError"):
            run_page(page)

    def test_blocks_share_one_namespace_and_skip_what_is_marked(
        self, fresh_directory: Path
    ) -> None:
        page = fresh_directory / "page.md"
        page.write_text(
            "```python\nx = 1\n```\n<!-- not run -->\n```python\nx = 2\n```\n"
            "```python\ny = x + 1\n```\n"
        )

        assert run_page(page)["y"] == 2

    def test_console_output_shown_must_be_printed(self, fresh_directory: Path) -> None:
        state = (
            '<!-- write: s.json -->\n```json\n{"version": 1, "chunks": '
            '[{"id": "u", "type": "AGENT", "role": "user", "content": "hi"}]}\n```\n'
        )
        good = fresh_directory / "good.md"
        good.write_text(
            state + "```console\n$ memctx render s.json\n[user] u\n"
            '<user_message id="u">\nhi\n</user_message>\n```\n'
        )
        wrong = fresh_directory / "wrong.md"
        wrong.write_text(state + "```console\n$ memctx render s.json\n[user] u\n```\n")

        run_page(good)
        with pytest.raises(AssertionError, match="output differs"):
            run_page(wrong)

    def test_written_files_are_checked_by_expect(self, fresh_directory: Path) -> None:
        page = fresh_directory / "page.md"
        page.write_text(
            "<!-- write: a/b.txt -->\n```text\nhello\n```\n"
            "<!-- expect: a/b.txt -->\n```text\nhello\n```\n"
            "<!-- expect: a/b.txt -->\n```text\nbye\n```\n"
        )

        with pytest.raises(AssertionError, match=r"page\.md:10"):
            run_page(page)
