"""The memctx command line: render, build, import-openai; bad input is one line."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from memctx import create_tokenizer, load_state
from memctx.cli import main
from memctx.importers import load_responses_items
from memctx.statefile import save_state

ROOT = Path(__file__).parent.parent
EXAMPLE = ROOT / "examples" / "coding_agent.json"
TRAJECTORY = ROOT / "examples" / "trajectories" / "astropy__astropy-12907.traj.json"


@pytest.fixture
def runner() -> CliRunner:
    return CliRunner()


def assert_one_line_error(output: str, *needles: str) -> None:
    lines = [line for line in output.splitlines() if line.strip()]
    assert len(lines) == 1, output
    assert lines[0].startswith("memctx: error: "), output
    assert "Traceback" not in output
    for needle in needles:
        assert needle in lines[0]


class TestRender:
    def test_prints_every_chunk_with_its_role(self, runner: CliRunner) -> None:
        result = runner.invoke(main, ["render", str(EXAMPLE)])
        assert result.exit_code == 0, result.output
        state = load_state(EXAMPLE)
        for chunk in state:
            assert f"] {chunk.id}\n" in result.output
        assert "[system] sys_rules" in result.output
        assert '<tool_call id="read_call" action="tool_call" tool="read_file"' in result.output


class TestBuild:
    def test_text_output_and_report_on_stderr(self, runner: CliRunner) -> None:
        result = runner.invoke(
            main, ["build", str(EXAMPLE), "--max-tokens", "800", "--model", "gpt-4o"]
        )
        assert result.exit_code == 0, result.output
        assert result.stdout.startswith("=== system ===\n")
        assert "left out: over_budget" in result.stderr
        assert "tokens (exact" in result.stderr
        assert "left out" not in result.stdout

    def test_openai_output_is_exactly_counted_chat_messages(self, runner: CliRunner) -> None:
        result = runner.invoke(
            main,
            [
                "build",
                str(EXAMPLE),
                "--max-tokens",
                "800",
                "--model",
                "gpt-4o",
                "--format",
                "openai",
                "--tools",
                "text",
            ],
        )
        assert result.exit_code == 0, result.output
        messages = json.loads(result.stdout)
        count = create_tokenizer("gpt-4o").count_messages(messages)
        assert count <= 800
        assert f"{count} tokens" in result.stderr

    def test_json_output_carries_the_whole_report(self, runner: CliRunner) -> None:
        result = runner.invoke(
            main,
            [
                "build",
                str(EXAMPLE),
                "--max-tokens",
                "800",
                "--model",
                "gpt-4",
                "--format",
                "json",
                "--strategy",
                "priority",
                "--reserve",
                "100",
                "--system-prompt",
                "Be brief.",
            ],
        )
        assert result.exit_code == 0, result.output
        report = json.loads(result.stdout)
        assert report["token_count"] <= 700
        assert report["strategy"] == "priority"
        assert report["messages"][0]["content"].startswith("Be brief.\n")
        state_ids = set(load_state(EXAMPLE).ids)
        assert set(report["included_chunk_ids"]) | set(report["excluded_chunk_ids"]) == state_ids
        for exclusion in report["exclusions"].values():
            assert exclusion["reason"] == "over_budget"

    @pytest.mark.parametrize(
        ("args", "needles"),
        [
            (["--model", "llama-9000"], ("unknown model", "llama-9000")),
            (["--max-tokens", "20", "--model", "gpt-4o"], ("need", "20")),
        ],
    )
    def test_bad_options_are_one_line(
        self, runner: CliRunner, args: list[str], needles: tuple[str, ...]
    ) -> None:
        result = runner.invoke(main, ["build", str(EXAMPLE), *args])
        assert result.exit_code == 1
        assert_one_line_error(result.stderr, *needles)

    def test_missing_file_is_one_line(self, runner: CliRunner, tmp_path: Path) -> None:
        result = runner.invoke(main, ["build", str(tmp_path / "nope.json")])
        assert result.exit_code == 1
        assert_one_line_error(result.stderr, "nope.json")

    @pytest.mark.parametrize(
        ("content", "needles"),
        [
            ("{not json", ("not valid JSON",)),
            ('{"version": 9, "chunks": []}', ("version 9",)),
            (
                '{"version": 1, "chunks": [{"id": "a", "type": "NOPE", "content": ""}]}',
                ("chunks[0]", "type", "NOPE"),
            ),
            (
                '{"version": 1, "chunks": [{"id": "a", "type": "AGENT", "content": "", '
                '"priority": "high"}]}',
                ("chunks[0]", "priority"),
            ),
        ],
    )
    def test_bad_state_files_are_one_line(
        self, runner: CliRunner, tmp_path: Path, content: str, needles: tuple[str, ...]
    ) -> None:
        path = tmp_path / "state.json"
        path.write_text(content, encoding="utf-8")
        for command in ("build", "render"):
            result = runner.invoke(main, [command, str(path)])
            assert result.exit_code == 1
            assert_one_line_error(result.stderr, *needles)

    def test_usage_errors_exit_2(self, runner: CliRunner) -> None:
        result = runner.invoke(main, ["build", str(EXAMPLE), "--max-tokens", "-5"])
        assert result.exit_code == 2
        assert "Traceback" not in result.output


class TestImportOpenAI:
    def test_imports_a_real_run_and_notes_the_unusual(
        self, runner: CliRunner, tmp_path: Path
    ) -> None:
        out = tmp_path / "state.json"
        result = runner.invoke(
            main, ["import-openai", str(TRAJECTORY), "-o", str(out), "--thread-id", "astropy"]
        )
        assert result.exit_code == 0, result.output
        state = load_state(out)
        assert state.thread_id == "astropy"
        assert f"wrote {len(state)} chunks" in result.stderr
        assert "role 'exit'" in result.stderr
        assert "have no result" in result.stderr
        built = runner.invoke(
            main, ["build", str(out), "--max-tokens", "8000", "--model", "gpt-4o"]
        )
        assert built.exit_code == 0

    def test_strict_mode_fails_without_writing(self, runner: CliRunner, tmp_path: Path) -> None:
        out = tmp_path / "state.json"
        result = runner.invoke(main, ["import-openai", str(TRAJECTORY), "-o", str(out), "--strict"])
        assert result.exit_code == 1
        assert_one_line_error(result.stderr, "'exit'")
        assert not out.exists()

    def test_not_json_is_one_line(self, runner: CliRunner, tmp_path: Path) -> None:
        bad = tmp_path / "t.json"
        bad.write_text("[{", encoding="utf-8")
        result = runner.invoke(main, ["import-openai", str(bad), "-o", str(tmp_path / "o.json")])
        assert result.exit_code == 1
        assert_one_line_error(result.stderr, "not valid JSON")


def test_example_state_file_matches_the_example_script(tmp_path: Path) -> None:
    """examples/coding_agent.json is what examples/coding_agent.py writes."""
    import importlib.util

    spec = importlib.util.spec_from_file_location(
        "coding_agent", ROOT / "examples" / "coding_agent.py"
    )
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    assert module.build_state() == load_state(EXAMPLE)


class TestBuildRequestFormats:
    """``memctx build --format openai|responses|anthropic|gemini`` prints that API's request."""

    @pytest.mark.parametrize(
        ("output_format", "native"),
        [
            ("openai", '"tool_calls"'),
            ("responses", '"function_call"'),
            ("anthropic", '"tool_use"'),
            ("gemini", '"function_call"'),
        ],
    )
    def test_each_format_prints_its_native_request(
        self, runner: CliRunner, output_format: str, native: str
    ) -> None:
        result = runner.invoke(main, ["build", str(EXAMPLE), "--format", output_format])

        assert result.exit_code == 0, result.output
        assert native in result.stdout
        json.loads(result.stdout)

    def test_tools_text_prints_the_xml_form(self, runner: CliRunner) -> None:
        result = runner.invoke(
            main, ["build", str(EXAMPLE), "--format", "anthropic", "--tools", "text"]
        )

        assert result.exit_code == 0, result.output
        assert '"tool_use"' not in result.stdout
        assert "<tool_call " in json.loads(result.stdout)["messages"][1]["content"]

    def test_no_item_ids_leaves_the_responses_ids_out(
        self, runner: CliRunner, tmp_path: Path
    ) -> None:
        path = tmp_path / "run.json"
        items = [
            {"role": "user", "content": "List the files."},
            {"type": "function_call", "id": "fc_1", "call_id": "call_1", "name": "ls",
             "arguments": "{}"},
            {"type": "function_call_output", "call_id": "call_1", "output": "a.py"},
        ]  # fmt: skip
        save_state(load_responses_items(items)[0], path)

        kept = runner.invoke(main, ["build", str(path), "--format", "responses"])
        left = runner.invoke(main, ["build", str(path), "--format", "responses", "--no-item-ids"])
        elsewhere = runner.invoke(main, ["build", str(path), "--format", "openai", "--no-item-ids"])

        assert [item.get("id") for item in json.loads(kept.stdout)][1] == "fc_1"
        assert all("id" not in item for item in json.loads(left.stdout))
        assert elsewhere.exit_code == 2
        assert "--no-item-ids applies to --format responses only" in elsewhere.output

    def test_a_request_format_builds_for_its_provider(self, runner: CliRunner) -> None:
        gemini = runner.invoke(main, ["build", str(EXAMPLE), "--format", "gemini"])
        clash = runner.invoke(
            main, ["build", str(EXAMPLE), "--format", "gemini", "--provider", "anthropic"]
        )

        assert set(json.loads(gemini.stdout)) == {"contents", "config"}
        assert clash.exit_code == 2
        assert "--format gemini builds for gemini" in clash.output
