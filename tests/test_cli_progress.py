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
from hypothesis import given
from hypothesis import strategies as st

from memctx import MemoryState, chunks
from memctx.cli._progress import count_items, dumps_json_counted, progress_bar
from memctx.cli._support import progress, set_quiet, working
from memctx.statefile import save_state
from memctx.store import MemoryStore
from strategies import json_values, texts

MEMCTX = [sys.executable, "-m", "memctx"]


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
        assert bar_reached_the_end(seen, "appending 3000 chunks")
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


def bar_reached_the_end(seen: str, label: str) -> bool:
    """Whether the terminal showed ``label`` with a bar, at 0% and then at 100%."""
    bars = [
        line[line.index(label) :]
        for line in seen.replace("\n", "\r").split("\r")
        if f"{label}  [" in line
    ]
    return any(bar.endswith("]    0%") for bar in bars) and any("]  100%" in bar for bar in bars)


@pytest.fixture
def big_thread(tmp_path: Path) -> str:
    """A database whose thread ``t`` holds 3,000 chunks, 1,500 of them visible."""
    db = str(tmp_path / "m.db")
    with MemoryStore.open(db) as store:
        store.create_thread("t")
        store.append("t", *(chunks.user(f"m{i}", id=f"c{i}") for i in range(3000)))
        store.truncate("t", keep_last=1500)
    return db


@pytest.mark.slow
class TestImportExportProgress:
    def test_export_shows_a_bar_reading_then_one_writing(
        self, big_thread: str, tmp_path: Path
    ) -> None:
        out = tmp_path / "snap.json"
        export = [*MEMCTX, "thread", "--db", big_thread, "export", "t"]

        code, seen = run_with_stderr_on_a_terminal([*export, "-o", str(out)])

        assert code == 0
        assert bar_reached_the_end(seen, "exporting t")
        assert bar_reached_the_end(seen, f"writing {out}")
        assert seen.index("exporting t") < seen.index("writing")
        piped = subprocess.run(export, capture_output=True, text=True, check=True)
        assert out.read_text(encoding="utf-8") == piped.stdout
        assert piped.stderr == ""
        assert bar_reached_the_end(run_with_stderr_on_a_terminal(export)[1], "writing stdout")

    def test_import_shows_a_bar(self, big_thread: str, tmp_path: Path) -> None:
        snapshot = tmp_path / "snap.json"
        base = [*MEMCTX, "thread", "--db", big_thread]
        subprocess.run([*base, "export", "t", "-o", str(snapshot)], check=True)

        code, seen = run_with_stderr_on_a_terminal(
            [*base, "import", str(snapshot), "--thread-id", "u"]
        )
        piped = subprocess.run(
            [*base, "import", str(snapshot), "--thread-id", "v"], capture_output=True, text=True
        )
        quiet = run_with_stderr_on_a_terminal(
            [*base, "import", str(snapshot), "--thread-id", "w", "-q"]
        )

        assert code == 0
        assert bar_reached_the_end(seen, f"importing {snapshot}")
        assert (piped.returncode, piped.stdout, piped.stderr) == (0, "v\n", "")
        assert quiet == (0, "")
        with MemoryStore.open(big_thread) as store:
            assert len(store.get_current_state("u")) == len(store.get_current_state("w")) == 1500

    def test_import_openai_shows_a_bar_converting_then_one_writing(self, tmp_path: Path) -> None:
        transcript = tmp_path / "chat.json"
        transcript.write_text(
            json.dumps([{"role": "user", "content": f"q{i}"} for i in range(2500)])
        )
        out = tmp_path / "state.json"
        command = [*MEMCTX, "import-openai", str(transcript)]

        code, seen = run_with_stderr_on_a_terminal([*command, "-o", str(out)])
        piped = subprocess.run(command, capture_output=True, text=True, check=True)

        assert code == 0
        assert bar_reached_the_end(seen, f"importing {transcript}")
        assert bar_reached_the_end(seen, f"writing {out}")
        written = out.read_text(encoding="utf-8")
        assert written == json.dumps(json.loads(written), ensure_ascii=False, indent=2) + "\n"
        ids = [[c["id"] for c in json.loads(text)["chunks"]] for text in (written, piped.stdout)]
        assert ids[0] == ids[1]
        assert len(ids[0]) == 2500
        assert piped.stderr == "wrote 2500 chunks to stdout\n"

    def test_import_anthropic_shows_a_bar_writing_the_state(self, tmp_path: Path) -> None:
        request = tmp_path / "request.json"
        messages = [
            {"role": "user" if i % 2 == 0 else "assistant", "content": f"m{i}"} for i in range(2500)
        ]
        request.write_text(json.dumps({"system": "Be brief.", "messages": messages}))
        out = tmp_path / "state.json"
        command = [*MEMCTX, "import-anthropic", str(request)]

        code, seen = run_with_stderr_on_a_terminal([*command, "-o", str(out)])
        piped = subprocess.run(command, capture_output=True, text=True, check=True)

        assert code == 0
        assert bar_reached_the_end(seen, f"writing {out}")
        written = out.read_text(encoding="utf-8")
        assert written == json.dumps(json.loads(written), ensure_ascii=False, indent=2) + "\n"
        ids = [[c["id"] for c in json.loads(text)["chunks"]] for text in (written, piped.stdout)]
        assert ids[0] == ids[1]
        assert len(ids[0]) == 2501  # the system prompt and every message
        assert piped.stderr == "wrote 2501 chunks to stdout\n"

    def test_a_small_export_shows_no_bar(self, tmp_path: Path) -> None:
        db = str(tmp_path / "m.db")
        with MemoryStore.open(db) as store:
            store.create_thread("t")
            store.append("t", chunks.user("hi"))

        code, seen = run_with_stderr_on_a_terminal(
            [*MEMCTX, "thread", "--db", db, "export", "t", "-o", str(tmp_path / "s.json")]
        )

        assert (code, seen) == (0, f"wrote t to {tmp_path / 's.json'}\r\n")


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
            with progress_bar("quiet") as tell:
                tell(0, 10_000)
                tell(10_000, 10_000)

        assert terminal.getvalue() == ""

    def test_progress_bar_draws_on_a_terminal_from_the_first_call(
        self, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        terminal = _Terminal()
        monkeypatch.setattr(sys, "stderr", terminal)
        with click.Context(click.Command("x")), progress_bar("writing x") as tell:
            for done in range(0, 10_001, 2_500):
                tell(done, 10_000)

        assert bar_reached_the_end(terminal.getvalue(), "writing x")
        assert " 50%" in terminal.getvalue()

    def test_progress_bar_stays_silent_below_its_threshold_or_off_a_terminal(
        self, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        terminal, pipe = _Terminal(), io.StringIO()
        with click.Context(click.Command("x")):
            monkeypatch.setattr(sys, "stderr", terminal)
            with progress_bar("small") as tell:
                tell(0, 100)
                tell(100, 100)
            monkeypatch.setattr(sys, "stderr", pipe)
            with progress_bar("piped") as tell:
                tell(0, 10_000)
                tell(10_000, 10_000)

        assert (terminal.getvalue(), pipe.getvalue()) == ("", "")


# Documents shaped like snapshots: objects of objects of arrays, with any JSON inside.
DOCUMENTS = json_values | st.dictionaries(
    texts,
    json_values
    | st.lists(json_values, max_size=6)
    | st.dictionaries(texts, json_values | st.lists(json_values, max_size=6), max_size=4),
    max_size=4,
)


class TestJsonWithProgress:
    @given(DOCUMENTS)
    def test_the_text_is_what_json_dumps_writes(self, data: object) -> None:
        counted: list[int] = []

        text = dumps_json_counted(data, counted.append)

        assert text == json.dumps(data, ensure_ascii=False, indent=2)
        assert sum(counted) == count_items(data)
        assert all(n > 0 for n in counted)

    def test_each_chunk_of_a_state_and_of_a_snapshot_is_counted(self, tmp_path: Path) -> None:
        state = MemoryState([chunks.user(f"m{i}") for i in range(7)], thread_id="t")
        path = tmp_path / "s.json"
        save_state(state, path)
        data = json.loads(path.read_text())
        with MemoryStore.open(str(tmp_path / "m.db")) as store:
            store.import_snapshot(data)
            store.truncate("t", keep_last=3)
            snapshot = store.export_snapshot("t")

        assert count_items(data) == 7
        assert count_items(snapshot) == 3 + 7 + 2  # visible, history, batches
