"""``memctx replay``: a table or JSON on stdout, the HTML report with -o, one-line errors."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from replay_runs import agent_run

from cli_results import ok, one_error_line, run
from memctx import save_state
from memctx.cli._replay import table
from memctx.replay import default_policy, replay

ROOT = Path(__file__).resolve().parents[2]
TRAJECTORY = ROOT / "examples" / "trajectories" / "sqlfluff__sqlfluff-2419.traj.json"


@pytest.fixture
def run_file(tmp_path: Path) -> Path:
    path = tmp_path / "run.json"
    save_state(agent_run(6), path)
    return path


class TestOutput:
    def test_json_holds_one_report_per_compared_strategy(self, run_file: Path) -> None:
        result = ok(
            run(
                "replay", run_file, "--model", "gpt-4o", "--max-tokens", "1500",
                "--compare", "recent,stable,none", "--format", "json",
            )
        )  # fmt: skip

        data = json.loads(result.stdout)
        assert (data["model"], data["budget"]) == ("gpt-4o", 1500)
        assert [r["label"] for r in data["reports"]] == ["recent", "stable", "none"]
        expected = replay(agent_run(6), "stable", model="gpt-4o", max_tokens=1500)
        assert data["reports"][1] == json.loads(json.dumps(expected.to_dict()))

    def test_the_table_has_a_row_per_strategy(self, run_file: Path) -> None:
        result = ok(
            run("replay", run_file, "--model", "claude-sonnet-4-6", "--compare", "none,rolling")
        )

        lines = result.stdout.splitlines()
        assert lines[0].split()[:3] == ["strategy", "requests", "input"]
        assert [line.split()[0] for line in lines[1:]] == ["none", "rolling"]

    def test_the_table_shows_the_reports_figures(self) -> None:
        report = replay(agent_run(6), "none", model="claude-sonnet-4-6")

        row = table([report]).splitlines()[1].split()

        assert row[:4] == [
            "none",
            "6",
            f"{report.input_tokens:,}",
            f"{report.cache_read_share:.1%}",
        ]

    def test_without_compare_the_default_policy_runs(self, run_file: Path) -> None:
        result = ok(
            run("replay", run_file, "--model", "gpt-4o", "--max-tokens", "900", "--format", "json")
        )

        (only,) = json.loads(result.stdout)["reports"]
        expected = replay(agent_run(6), default_policy("gpt-4o", 900), label="policy")
        assert only == json.loads(json.dumps(expected.to_dict()))

    def test_output_writes_the_html_report(self, run_file: Path, tmp_path: Path) -> None:
        out = tmp_path / "report.html"

        result = ok(
            run("replay", run_file, "--model", "gpt-4o", "--compare", "recent,stable", "-o", out)
        )

        page = out.read_text(encoding="utf-8")
        assert page.startswith("<!DOCTYPE html>")
        assert 'id="memctx-replay-data"' in page
        assert f"wrote {out}" in result.stderr
        assert result.stdout.splitlines()[0].startswith("strategy")

    def test_several_files_make_one_run(self) -> None:
        result = ok(run("replay", TRAJECTORY, TRAJECTORY, "--model", "gpt-4o", "--compare", "none"))

        # sqlfluff's 48 model calls, twice.
        assert result.stdout.splitlines()[1].split()[1] == "96"


class TestErrors:
    def test_an_unknown_model_is_one_line_and_writes_nothing(
        self, run_file: Path, tmp_path: Path
    ) -> None:
        out = tmp_path / "report.html"

        result = run("replay", run_file, "--model", "gpt-nine", "-o", out)

        one_error_line(result, "unknown model 'gpt-nine'")
        assert result.stdout == ""
        assert not out.exists()

    def test_an_unknown_strategy_is_one_line_and_writes_nothing(
        self, run_file: Path, tmp_path: Path
    ) -> None:
        out = tmp_path / "report.html"

        result = run("replay", run_file, "--model", "gpt-4o", "--compare", "stable,fast", "-o", out)

        one_error_line(result, "--compare", "'fast'", "recent")
        assert not out.exists()

    def test_a_file_that_is_no_run_is_one_line_naming_it(self, tmp_path: Path) -> None:
        bad = tmp_path / "bad.json"
        bad.write_text('{"hello": 1}', encoding="utf-8")
        out = tmp_path / "report.html"

        result = run("replay", bad, "--model", "gpt-4o", "-o", out)

        one_error_line(result, "bad.json", "neither a memctx state file")
        assert not out.exists()

    def test_a_missing_file_is_one_line_naming_it(self, tmp_path: Path) -> None:
        result = run("replay", tmp_path / "none.json", "--model", "gpt-4o")

        one_error_line(result, "none.json", "No such file")

    def test_a_budget_under_one_is_a_usage_error(self, run_file: Path) -> None:
        one_error_line(
            run("replay", run_file, "--model", "gpt-4o", "--max-tokens", "0"),
            "--max-tokens",
            code=2,
        )

    def test_the_model_is_required(self, run_file: Path) -> None:
        one_error_line(run("replay", run_file), "--model", code=2)
