"""memctx import-anthropic: Messages API arguments in, a state file out, with import-openai's
manners (files or '-', one-line errors, notes on stderr, --format json)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from adapter_cases import TRAJECTORIES
from cli_results import one_error_line, run
from memctx import create_builder, load_state
from memctx.importers import load_anthropic_messages, load_openai_transcript
from memctx.statefile import loads_state


@pytest.fixture(scope="module")
def request_body() -> dict[str, Any]:
    """A real run as Messages API arguments: a trajectory built and sent natively, plus a
    call nobody answered, a block memctx has no chunk for (a file by id) and a message of an
    unknown role."""
    state, _ = load_openai_transcript(json.loads(TRAJECTORIES[0].read_text(encoding="utf-8")))
    body = create_builder().build(state).to_anthropic(tools="native")
    body["messages"] += [
        {
            "role": "user",
            "content": [{"type": "image", "source": {"type": "file", "file_id": "f"}}],
        },
        {
            "role": "assistant",
            "content": [{"type": "tool_use", "id": "tu_x", "name": "ls", "input": {}}],
        },
        {"role": "critic", "content": "Looks fine."},
    ]
    return body


@pytest.fixture
def transcript(tmp_path: Path, request_body: dict[str, Any]) -> Path:
    path = tmp_path / "request.json"
    path.write_text(json.dumps(request_body), encoding="utf-8")
    return path


class TestImportAnthropic:
    def test_writes_what_the_importer_makes_and_notes_the_unusual(
        self, transcript: Path, tmp_path: Path, request_body: dict[str, Any]
    ) -> None:
        out = tmp_path / "state.json"

        result = run("import-anthropic", str(transcript), "-o", str(out), "--thread-id", "run")

        assert result.exit_code == 0, result.output
        state = load_state(out)
        expected, _ = load_anthropic_messages(request_body, thread_id="run")
        assert state.ids == expected.ids
        assert state.thread_id == "run"
        assert f"wrote {len(state)} chunks to {out}" in result.stderr
        assert "has a 'image' block" in result.stderr
        assert "role 'critic'" in result.stderr
        assert "1 tool call(s) have no result (pending): tu_x" in result.stderr
        assert run("build", str(out), "--max-tokens", "8000", "--model", "gpt-4o").exit_code == 0

    def test_strict_mode_fails_on_an_unknown_role_without_writing(
        self, transcript: Path, tmp_path: Path
    ) -> None:
        out = tmp_path / "state.json"

        one_error_line(
            run("import-anthropic", str(transcript), "-o", str(out), "--strict"), "'critic'"
        )

        assert not out.exists()

    def test_a_malformed_message_is_one_line_naming_the_file_and_message(
        self, tmp_path: Path
    ) -> None:
        bad = tmp_path / "bad.json"
        bad.write_text(json.dumps({"messages": [{"role": "user", "content": 3}]}))

        one_error_line(
            run("import-anthropic", str(bad), "-o", str(tmp_path / "o.json")),
            f"{bad}: ",
            "messages[0]",
        )

        assert not (tmp_path / "o.json").exists()

    def test_not_json_is_one_line(self, tmp_path: Path) -> None:
        bad = tmp_path / "t.json"
        bad.write_text("[{", encoding="utf-8")

        one_error_line(run("import-anthropic", str(bad)), f"{bad}: not valid JSON")

    def test_reads_stdin_and_writes_stdout_by_default(self, transcript: Path) -> None:
        piped = run("import-anthropic", "-", "-o", "-", input=transcript.read_bytes())
        named = run("import-anthropic", str(transcript))

        assert piped.exit_code == named.exit_code == 0
        assert "wrote" in piped.stderr
        a, b = loads_state(piped.stdout), loads_state(named.stdout)
        assert a.ids == b.ids
        assert a.ids[0] == "system"
        assert [c.content for c in a] == [c.content for c in b]

    def test_pipes_into_build(self, transcript: Path) -> None:
        state = run("import-anthropic", str(transcript), "-q")

        built = run("build", "-", "--max-tokens", "4000", "--model", "gpt-4o", input=state.stdout)

        assert state.stderr == ""
        assert built.exit_code == 0
        assert built.stdout.startswith("=== system ===")

    def test_format_json_prints_the_report(self, transcript: Path, tmp_path: Path) -> None:
        out = tmp_path / "state.json"

        result = run("import-anthropic", str(transcript), "-o", str(out), "--format", "json")

        report = json.loads(result.stdout)
        assert report == {
            "output": str(out),
            "chunks": len(load_state(out)),
            "unknown_roles": [{"index": report["unknown_roles"][0]["index"], "role": "critic"}],
            "unanswered_calls": ["tu_x"],
            "unknown_blocks": [{"index": report["unknown_blocks"][0]["index"], "type": "image"}],
        }

    def test_format_json_needs_an_output_file(self, transcript: Path) -> None:
        result = run("import-anthropic", str(transcript), "--format", "json")

        assert result.exit_code == 2
        assert "give -o FILE" in result.stderr
