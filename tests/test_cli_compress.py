"""memctx compress / compact on state files, and memctx thread compress / compact."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from memctx import MemoryStore, load_state
from memctx.cli import main
from memctx.compaction import is_compaction_summary

ROOT = Path(__file__).parent.parent
EXAMPLE = ROOT / "examples" / "coding_agent.json"


@pytest.fixture
def runner() -> CliRunner:
    return CliRunner()


class TestCompressFile:
    def test_writes_the_compressed_state_and_reports_each_cut(
        self, runner: CliRunner, tmp_path: Path
    ) -> None:
        out = tmp_path / "small.json"
        result = runner.invoke(
            main,
            ["compress", str(EXAMPLE), "--max-chars", "80", "--model", "gpt-4o", "-o", str(out)],
        )
        assert result.exit_code == 0, result.output
        state = load_state(out)
        original = load_state(EXAMPLE)
        assert len(state) == len(original)
        first_line, *changes = result.stderr.splitlines()
        assert first_line.startswith(f"{len(original)} chunks -> {len(state)}; ")
        assert "gpt-4o" in first_line
        assert len(changes) == sum(1 for c in state if c.metadata.derived_from)
        assert all(" by MaxChars" in line for line in changes)

    def test_prints_the_state_to_stdout_without_output(self, runner: CliRunner) -> None:
        result = runner.invoke(main, ["compress", str(EXAMPLE), "--max-chunks", "3"])
        assert result.exit_code == 0, result.output
        assert result.stdout.startswith('{\n  "version": 1')
        assert "dropped" in result.stderr

    def test_says_so_when_nothing_was_cut(self, runner: CliRunner) -> None:
        result = runner.invoke(main, ["compress", str(EXAMPLE), "--max-chars", "100000"])
        assert result.stderr.startswith("nothing was cut")

    def test_needs_a_compressor(self, runner: CliRunner) -> None:
        result = runner.invoke(main, ["compress", str(EXAMPLE)])
        assert result.exit_code == 2
        assert "give at least one of --max-chunks" in result.output

    def test_a_missing_file_is_one_error_line(self, runner: CliRunner, tmp_path: Path) -> None:
        result = runner.invoke(main, ["compress", str(tmp_path / "nope.json"), "--max-chars", "9"])
        assert result.exit_code == 1
        assert result.output.strip().startswith("memctx: error: ")
        assert "Traceback" not in result.output


class TestCompactFile:
    def test_replaces_the_older_chunks_by_a_summary(
        self, runner: CliRunner, tmp_path: Path
    ) -> None:
        out = tmp_path / "compact.json"
        result = runner.invoke(
            main, ["compact", str(EXAMPLE), "--keep-recent-tokens", "200", "-o", str(out)]
        )
        assert result.exit_code == 0, result.output
        state = load_state(out)
        summaries = [c for c in state if is_compaction_summary(c)]
        assert len(summaries) == 1
        assert result.stderr.startswith(
            f"compacted {len(summaries[0].metadata.derived_from or ())}"
        )
        assert "covered: " in result.stderr


class TestThreadCommands:
    @pytest.fixture
    def db(self, tmp_path: Path, runner: CliRunner) -> str:
        url = str(tmp_path / "agent.db")
        assert runner.invoke(main, ["thread", "--db", url, "new", "t"]).exit_code == 0
        result = runner.invoke(main, ["thread", "--db", url, "append", "t", str(EXAMPLE)])
        assert result.exit_code == 0, result.output
        return url

    def test_compress_is_a_view_operation_that_tells_how_to_undo_it(
        self, runner: CliRunner, db: str
    ) -> None:
        result = runner.invoke(main, ["thread", "--db", db, "compress", "t", "--max-chars", "60"])
        assert result.exit_code == 0, result.output
        assert result.stdout.splitlines()[-1] == "batch 1; undo with: memctx thread rollback t 0"
        with MemoryStore.open(db) as store:
            assert store.batches("t")[-1].operation == "compress"
            assert len(store.events("t", kind="context.compressed")) == 1

    def test_compact_records_its_event(self, runner: CliRunner, db: str) -> None:
        result = runner.invoke(
            main, ["thread", "--db", db, "compact", "t", "--keep-recent-tokens", "100"]
        )
        assert result.exit_code == 0, result.output
        assert result.stdout.startswith("compacted ")
        with MemoryStore.open(db) as store:
            (event,) = store.events("t", kind="context.compacted")
            assert event.payload["covered"] > 0

    def test_an_unknown_thread_is_one_error_line(self, runner: CliRunner, db: str) -> None:
        result = runner.invoke(
            main, ["thread", "--db", db, "compact", "x", "--keep-recent-tokens", "1"]
        )
        assert result.exit_code == 1
        assert result.output.strip() == "memctx: error: no thread 'x'"


def test_the_report_can_be_json(runner: CliRunner, tmp_path: Path) -> None:
    import json

    out = tmp_path / "c.json"
    result = runner.invoke(
        main,
        [
            "compact",
            str(EXAMPLE),
            "--keep-recent-tokens",
            "200",
            "--format",
            "json",
            "-o",
            str(out),
        ],
    )
    assert result.exit_code == 0, result.output
    payload = json.loads(result.stderr)
    summaries = [c for c in load_state(out) if is_compaction_summary(c)]
    assert payload["covered_ids"] == list(summaries[0].metadata.derived_from or ())
