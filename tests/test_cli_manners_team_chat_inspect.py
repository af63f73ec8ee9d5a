"""The command line's manners on ``memctx team``, ``memctx chat``, ``memctx inspect`` and
``memctx thread inspect``, point by point (help, JSON schemas and the general checks over
every command are in ``test_cli_manners.py``)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import attrs
import click
import pytest

from cli_results import ok, one_error_line, run
from memctx import BuildOptions, load_state
from memctx.cli import main

ROOT = Path(__file__).parent.parent
EXAMPLE = ROOT / "examples" / "coding_agent.json"
AGENTS = [{"id": "alice", "display_name": "Coder Cat"}, {"id": "bob"}, {"id": "carol"}]


@pytest.fixture
def db(tmp_path: Path) -> str:
    return str(tmp_path / "m.db")


@pytest.fixture
def team(db: str) -> tuple[str, ...]:
    """``memctx team --db DB`` with the team ``t1``: Lena asks the coder, who answers."""
    base = ("team", "--db", db)
    ok(run(*base, "add", "t1", "Please cap the delay. [NEXT:coder]", "--speaker", "lena"))
    ok(run(*base, "add", "t1", "Done. [NEXT:lena]", "--speaker", "coder", "--ai"))
    ok(run(*base, "task", "t1", "Cap the retry delay."))
    return base


@pytest.fixture
def chat(db: str, tmp_path: Path) -> tuple[str, ...]:
    """``memctx chat --db DB`` with the free-chat session ``s``."""
    agents = tmp_path / "agents.json"
    agents.write_text(json.dumps(AGENTS))
    base = ("chat", "--db", db)
    ok(run(*base, "new", "s", "--agents", agents))
    return base


def team_build(team: tuple[str, ...], *args: str) -> dict[str, Any]:
    data: dict[str, Any] = json.loads(
        ok(run(*team, "build", "t1", "coder", "--format", "json", *args)).stdout
    )
    return data


class TestTeamBuildOptions:
    @pytest.mark.parametrize("field", [f.name for f in attrs.fields(BuildOptions)])
    def test_every_build_option_is_an_option(self, field: str) -> None:
        ctx = click.Context(main)
        group: Any = main.get_command(ctx, "team")

        assert field in {p.name for p in group.get_command(ctx, "build").params}

    def test_no_system_leaves_out_the_team_task(self, team: tuple[str, ...]) -> None:
        assert "team-task" in team_build(team)["included_chunk_ids"]

        report = team_build(team, "--no-system")

        assert report["exclusions"]["team-task"]["reason"] == "include_system"

    def test_only_and_exclude_type_choose_the_messages(self, team: tuple[str, ...]) -> None:
        report = team_build(team, "--only", "msg-2", "--only", "team-task")
        assert report["included_chunk_ids"] == ["team-task", "msg-2"]

        report = team_build(team, "--exclude-type", "agent")
        assert report["included_chunk_ids"] == ["team-task"]

    def test_pin_keeps_the_first_message_instead_of_the_newest(self, team: tuple[str, ...]) -> None:
        args = ("--max-tokens", "80", "--model", "gpt-4o")
        assert team_build(team, *args)["included_chunk_ids"] == ["team-task", "msg-2"]

        report = team_build(team, *args, "--pin", "msg-1", "--no-pin-newest")

        assert report["included_chunk_ids"] == ["team-task", "msg-1"]

    def test_provider_counts_the_turn_the_adapter_adds(self, team: tuple[str, ...]) -> None:
        plain = team_build(team, "--only", "team-task", "--only", "msg-2")
        anthropic = team_build(
            team, "--only", "team-task", "--only", "msg-2", "--provider", "anthropic"
        )

        assert anthropic["token_count"] > plain["token_count"]


class TestErrors:
    def test_build_options_are_named_as_typed(self, team: tuple[str, ...]) -> None:
        line = one_error_line(
            run(*team, "build", "t1", "coder", "--max-tokens", "100", "--reserve", "100"),
            "--reserve",
            "--max-tokens=100",
        )
        assert "reserve_tokens" not in line

    def test_a_missing_instruction_file_names_the_option_and_the_file(
        self, team: tuple[str, ...]
    ) -> None:
        args = ("context", "t1", "coder", "--type", "claude", "--instruction-file", "nope.md")

        one_error_line(run(*team, *args), "--instruction-file", "nope.md", code=2)

    def test_bad_files_are_named(self, team: tuple[str, ...], db: str, tmp_path: Path) -> None:
        bad = tmp_path / "bad.json"
        bad.write_text('{"version": 1,')
        agents = tmp_path / "agents.json"
        agents.write_text(json.dumps([{"id": "a", "nickname": "x"}]))

        one_error_line(run(*team, "import", "t2", bad), f"{bad}: not valid JSON")
        one_error_line(run("chat", "--db", db, "new", "--agents", bad), f"{bad}: not valid JSON")
        one_error_line(
            run("chat", "--db", db, "new", "--agents", agents), f"{agents}: ", "'nickname'"
        )
        one_error_line(run("inspect", bad), f"{bad}: not valid JSON")
        one_error_line(run("inspect", EXAMPLE, "--compare", bad), f"{bad}: not valid JSON")

    def test_workflow_role_errors_name_the_role_option(self, chat: tuple[str, ...]) -> None:
        line = one_error_line(run(*chat, "mode", "s", "workflow"), "--role: no agent plays")
        assert "role_map" not in line

        line = one_error_line(
            run(*chat, "mode", "s", "workflow", "--role", "coder=zz"),
            "--role coder=...: unknown agent 'zz'",
        )
        assert "role_map" not in line

    def test_an_openai_transcript_given_to_inspect_suggests_import(self, tmp_path: Path) -> None:
        chat_file = tmp_path / "chat.json"
        chat_file.write_text(json.dumps([{"role": "user", "content": "hi"}]))

        one_error_line(run("inspect", chat_file), f"memctx import-openai {chat_file} -o state.json")

    def test_a_bad_team_snapshot_names_the_file(
        self, team: tuple[str, ...], tmp_path: Path
    ) -> None:
        snapshot = tmp_path / "team.json"
        snapshot.write_text(json.dumps({"version": 7}))

        one_error_line(run(*team, "import", "t2", snapshot), f"{snapshot}: ")


class TestStdio:
    def test_team_export_to_stdout_and_import_from_stdin(self, team: tuple[str, ...]) -> None:
        snapshot = ok(run(*team, "export", "t1", "-o", "-")).stdout

        ok(run(*team, "import", "t2", "-", input=snapshot))

        shown = json.loads(ok(run(*team, "show", "t2", "--format", "json")).stdout)
        assert [m["content"] for m in shown] == [
            "Please cap the delay. [NEXT:coder]",
            "Done. [NEXT:lena]",
        ]
        assert not Path("-").exists()

    def test_team_instruction_file_from_stdin(self, team: tuple[str, ...]) -> None:
        args = ("context", "t1", "coder", "--type", "claude", "--format", "json")

        out = ok(run(*team, *args, "--instruction-file", "-", input="Run the tests.\n")).stdout

        assert json.loads(out)["instruction_file_text"] == "Run the tests.\n"

    def test_chat_agents_and_texts_from_stdin(self, db: str) -> None:
        base = ("chat", "--db", db)
        ok(run(*base, "new", "s", "--agents", "-", input=json.dumps(AGENTS)))

        ok(run(*base, "post", "s", "-", input="@alice hello from stdin"))
        ok(run(*base, "reply", "s", "1", "alice", "-", input="hi from stdin"))

        history = json.loads(ok(run(*base, "history", "s", "--format", "json")).stdout)
        contents = [m["content"] for m in history["messages"]]
        assert contents == ["@alice hello from stdin", "hi from stdin"]

    def test_inspect_reads_stdin_and_writes_stdout(self) -> None:
        text = EXAMPLE.read_text()

        page = ok(run("inspect", "-", "-o", "-", input=text)).stdout
        data = json.loads(ok(run("inspect", "-", "--format", "json", input=text)).stdout)

        assert page.startswith("<!DOCTYPE html>")
        assert [row["id"] for row in data["chunks"]] == [c.id for c in load_state(EXAMPLE)]

    def test_inspect_json_to_a_file(self, tmp_path: Path) -> None:
        out = tmp_path / "report.json"

        result = ok(run("inspect", EXAMPLE, "--format", "json", "-o", out))

        assert json.loads(out.read_text())["build"]["strategy"] == "recent"
        assert result.stdout == ""

    def test_both_state_and_compare_from_stdin_is_refused(self) -> None:
        one_error_line(run("inspect", "-", "--compare", "-", input="{}"), "both")

    @pytest.mark.slow
    @pytest.mark.parametrize("command", ["team show", "inspect"])
    def test_a_closed_pipe_ends_quietly(self, command: str, tmp_path: Path) -> None:
        db = tmp_path / "m.db"
        memctx = f"{sys.executable} -m memctx"
        if command == "team show":
            subprocess.run(
                [sys.executable, "-m", "memctx", "team", "--db", str(db), "import", "big", "-"],
                input=json.dumps(big_team_snapshot()),
                text=True,
                check=True,
                capture_output=True,
            )
            shell = f"{memctx} team --db {db} show big | head -1"
            first = "# team big: 3000 message(s)\n"
        else:
            state = tmp_path / "big.json"
            chunks = [
                {"id": f"c{i}", "type": "AGENT", "role": "user", "content": "x" * 200}
                for i in range(3000)
            ]
            state.write_text(json.dumps({"version": 1, "chunks": chunks}))
            shell = f"{memctx} inspect {state} --format json -q | head -1"
            first = "{\n"

        done = subprocess.run(
            ["bash", "-o", "pipefail", "-c", shell], capture_output=True, text=True, timeout=120
        )

        assert (done.stdout, done.stderr, done.returncode) == (first, "", 0)


def big_team_snapshot() -> dict[str, Any]:
    speaker = {"role_id": "lena", "role_name": "Lena", "type": "human"}
    messages = [
        {
            "id": f"msg-{i + 1}",
            "content": "y" * 300,
            "speaker": speaker,
            "addressees": [],
            "created_at": "2026-01-01T00:00:00+00:00",
        }
        for i in range(3000)
    ]
    return {"version": 1, "team_task": None, "messages": messages}


class TestChoices:
    def test_formats_modes_and_strategies_ignore_case(
        self, team: tuple[str, ...], chat: tuple[str, ...]
    ) -> None:
        assert json.loads(ok(run(*team, "show", "t1", "--format", "JSON")).stdout)
        assert team_build(team, "--strategy", "PRIORITY")["strategy"] == "priority"
        ok(run(*chat, "mode", "s", "Workflow", "--role", "coder=alice", "--role",
               "reviewer=bob", "--role", "tester=carol"))  # fmt: skip
        history = json.loads(ok(run(*chat, "history", "s", "--format", "Json")).stdout)
        assert history["mode"] == "workflow"
        assert json.loads(ok(run("inspect", EXAMPLE, "--format", "JSON")).stdout)["chunks"]

    def test_chat_new_takes_the_mode_in_any_case(self, db: str, tmp_path: Path) -> None:
        agents = tmp_path / "agents.json"
        agents.write_text(json.dumps(AGENTS))

        out = ok(run("chat", "--db", db, "new", "q", "--agents", agents, "--mode", "QUIZ",
                     "--format", "json")).stdout  # fmt: skip

        assert json.loads(out) == {
            "id": "q",
            "agents": ["alice", "bob", "carol"],
            "mode": "quiz",
            "window": 20,
        }

    def test_an_unknown_mode_is_a_usage_error_listing_the_modes(
        self, chat: tuple[str, ...]
    ) -> None:
        one_error_line(run(*chat, "mode", "s", "debate"), "'MODE'", "free_chat", code=2)


class TestVerbosity:
    def test_quiet_leaves_only_the_data(
        self, team: tuple[str, ...], chat: tuple[str, ...], tmp_path: Path
    ) -> None:
        for args in (
            (*team, "task", "t1", "New task.", "-q"),
            (*team, "build", "t1", "coder", "-q"),
            (*team, "export", "t1", "-o", tmp_path / "t.json", "-q"),
            (*team, "import", "t3", tmp_path / "t.json", "-q"),
            (*chat, "post", "s", "@bob hi", "-q"),
            (*chat, "reply", "s", "1", "bob", "hello", "-q"),
            ("-q", "inspect", EXAMPLE, "-o", tmp_path / "r.html", "--compare-max-tokens", "300"),
        ):
            assert ok(run(*args)).stderr == "", args

    def test_without_quiet_the_notes_are_on_stderr(
        self, team: tuple[str, ...], tmp_path: Path
    ) -> None:
        assert "team task set" in ok(run(*team, "task", "t1", "New task.")).stderr
        result = ok(run("inspect", EXAMPLE, "-o", tmp_path / "r.html"))
        assert "wrote the report to" in result.stderr
        assert result.stderr.startswith("15 messages, ")

    def test_verbose_logs_the_store_opening(
        self, team: tuple[str, ...], chat: tuple[str, ...]
    ) -> None:
        for args in ((*team, "show", "t1", "-v"), ("-v", *chat, "history", "s")):
            assert "memctx: INFO: opened sqlite:///" in ok(run(*args)).stderr

    def test_very_verbose_logs_the_build(self, team: tuple[str, ...]) -> None:
        assert "memctx: DEBUG: build: " in ok(run("-vv", *team, "build", "t1", "coder")).stderr
