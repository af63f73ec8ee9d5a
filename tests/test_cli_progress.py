"""Progress on long work: drawn on a terminal, never in a pipe or a log."""

from __future__ import annotations

import io
import json
import os
import pty
import subprocess
import sys
import time
from pathlib import Path

import click
import pytest

from memctx._cli_support import progress, set_quiet, working


def chunk_file(path: Path, count: int) -> Path:
    items = [
        {
            "id": f"c{i}",
            "type": "AGENT",
            "role": "user",
            "content": f"m{i}",
            "created_at": "2026-01-01T00:00:00+00:00",
        }
        for i in range(count)
    ]
    path.write_text(json.dumps(items))
    return path


def run_with_stderr_on_a_terminal(args: list[str]) -> tuple[int, str]:
    controller, terminal = pty.openpty()
    proc = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=terminal)
    os.close(terminal)
    seen = b""
    while True:
        try:
            data = os.read(controller, 4096)
        except OSError:  # the terminal closed with the process
            break
        if not data:
            break
        seen += data
    os.close(controller)
    return proc.wait(timeout=120), seen.decode(errors="replace")


@pytest.mark.slow
class TestAppendProgress:
    def test_a_large_file_shows_a_bar_on_a_terminal(self, tmp_path: Path) -> None:
        big = chunk_file(tmp_path / "big.json", 3000)
        db = str(tmp_path / "m.db")
        base = [sys.executable, "-m", "memctx", "thread", "--db", db]
        subprocess.run([*base, "new", "t"], check=True, capture_output=True)

        code, seen = run_with_stderr_on_a_terminal([*base, "append", "t", str(big)])

        assert code == 0
        assert "reading chunks" in seen
        assert "100%" in seen
        assert "appended 3000 new chunk(s)" in seen

    def test_no_bar_when_stderr_is_not_a_terminal_or_quiet(self, tmp_path: Path) -> None:
        big = chunk_file(tmp_path / "big.json", 3000)
        db = str(tmp_path / "m.db")
        base = [sys.executable, "-m", "memctx", "thread", "--db", db]
        subprocess.run([*base, "new", "t"], check=True, capture_output=True)

        piped = subprocess.run([*base, "append", "t", str(big)], capture_output=True, text=True)
        code, seen = run_with_stderr_on_a_terminal([*base, "append", "t", str(big), "-q"])

        assert piped.stderr == "appended 3000 new chunk(s) to t (0 already stored)\n"
        assert (code, seen) == (0, "")


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


class TestHelpers:
    def test_working_draws_a_spinner_on_a_terminal_and_erases_it(
        self, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        terminal = _Terminal()
        monkeypatch.setattr(sys, "stderr", terminal)
        with click.Context(click.Command("x")), working("exporting t1"):
            time.sleep(0.8)

        shown = terminal.getvalue()
        assert shown.startswith("\rexporting t1 ")
        assert shown.endswith("\r\033[K")

    def test_working_is_silent_when_quick_quiet_or_small(
        self, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        terminal = _Terminal()
        monkeypatch.setattr(sys, "stderr", terminal)
        with click.Context(click.Command("x")) as ctx:
            with working("quick"):
                pass
            with working("small", 10):
                time.sleep(0.7)
            set_quiet(ctx, True)
            with working("quiet"):
                time.sleep(0.7)
            assert list(progress(range(5000), 5000, "quiet")) == list(range(5000))

        assert terminal.getvalue() == ""
