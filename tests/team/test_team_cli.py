"""``memctx team ...``: a team in the store from the command line, errors as one line."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result

from memctx.cli import main
from memctx.store import MemoryStore
from memctx.team import Speaker, TeamConversation


@pytest.fixture
def db(tmp_path: Path) -> str:
    return f"sqlite:///{tmp_path / 'team.db'}"


@pytest.fixture
def cli(db: str) -> Any:
    """Run ``memctx team --db URL ARGS...``; stdin with ``input=``."""
    runner = CliRunner()

    def run(*args: str, input: str | None = None) -> Result:
        return runner.invoke(main, ["team", "--db", db, *args], input=input)

    return run


def ok(result: Result) -> Result:
    assert result.exit_code == 0, result.output
    return result


def failed(result: Result, message: str, code: int = 1) -> None:
    """Exit ``code``, one error line naming the problem, no traceback."""
    assert result.exit_code == code, result.output
    assert result.stderr.count("\n") == 1, result.stderr
    assert result.stderr.startswith("memctx: error: ")
    assert message in result.stderr
    assert "Traceback" not in result.output


@pytest.fixture
def review(cli: Any) -> str:
    """Team ``t1``: a task, Lena's request, the coder's answer."""
    ok(cli("task", "t1", "Cap the retry delay."))
    ok(
        cli(
            "add", "t1", "Coder, please cap it. [NEXT:coder]", "--speaker", "lena", "--name", "Lena"
        )
    )
    ok(cli("add", "t1", "Capped. [NEXT:reviewer]", "--speaker", "coder", "--name", "Coder", "--ai"))
    return "t1"


def team_of(db: str, team_id: str = "t1") -> tuple[Any, ...]:
    with MemoryStore.open(db) as store:
        team = TeamConversation.open(store, team_id, create=False)
        return team.messages, team.team_task


class TestAdd:
    def test_prints_the_new_id_and_stores_the_message(self, cli: Any, db: str) -> None:
        assert ok(cli("add", "t1", "hello", "--speaker", "lena")).stdout == "msg-1\n"

        (messages, _) = team_of(db)
        assert messages[0].content == "hello"
        assert messages[0].speaker == Speaker("lena", "lena", "human")

    def test_addressees_default_to_the_next_markers(self, review: str, db: str) -> None:
        (messages, _) = team_of(db)

        assert [m.addressees for m in messages] == [("coder",), ("reviewer",)]
        assert messages[1].speaker == Speaker("coder", "Coder", "ai")

    def test_to_names_the_addressees(self, cli: Any, db: str) -> None:
        ok(cli("add", "t1", "hi [NEXT:x]", "--speaker", "lena", "--to", "a", "--to", "b"))

        assert team_of(db)[0][0].addressees == ("a", "b")

    def test_reads_the_text_from_stdin(self, cli: Any, db: str) -> None:
        ok(cli("add", "t1", "-", "--speaker", "lena", input="from stdin\nline 2"))

        assert team_of(db)[0][0].content == "from stdin\nline 2"

    def test_an_empty_speaker_is_one_error_line(self, cli: Any) -> None:
        failed(cli("add", "t1", "hi", "--speaker", ""), "Message speaker.roleId is required")


class TestTask:
    def test_sets_and_prints_the_task(self, review: str, cli: Any) -> None:
        assert ok(cli("task", "t1")).stdout == "Cap the retry delay.\n"

    def test_a_long_task_is_cut_to_5kb(self, cli: Any, db: str) -> None:
        result = ok(cli("task", "t1", "x" * 6000))

        assert "5120 bytes" in result.stderr
        assert team_of(db)[1] == "x" * 5120

    def test_a_team_without_task_says_so(self, cli: Any) -> None:
        ok(cli("add", "t1", "hi", "--speaker", "lena"))

        result = ok(cli("task", "t1"))

        assert result.stdout == ""
        assert "no team task" in result.stderr


class TestShow:
    def test_lists_the_messages_as_written(self, review: str, cli: Any) -> None:
        out = ok(cli("show", "t1")).stdout

        assert out.splitlines() == [
            "# team t1: 2 message(s)",
            "# task: Cap the retry delay.",
            "[msg-1] Lena (human) → coder",
            "Coder, please cap it. [NEXT:coder]",
            "[msg-2] Coder (ai) → reviewer",
            "Capped. [NEXT:reviewer]",
        ]

    def test_json_gives_the_messages(self, review: str, cli: Any) -> None:
        data = json.loads(ok(cli("show", "t1", "--format", "json")).stdout)

        assert [m["id"] for m in data] == ["msg-1", "msg-2"]

    def test_a_missing_team_is_one_error_line(self, cli: Any) -> None:
        failed(cli("show", "nope"), "no thread 'nope'")


class TestContextAndPrompt:
    def test_context_shows_what_the_agent_gets(self, review: str, cli: Any) -> None:
        out = ok(cli("context", "t1", "reviewer", "--type", "codex")).stdout

        assert out.splitlines() == [
            "# team task",
            "Cap the retry delay.",
            "# context (1 message(s))",
            "[Lena → coder] Coder, please cap it.",
            "# current message",
            "Capped.",
        ]

    def test_context_as_json(self, review: str, cli: Any, tmp_path: Path) -> None:
        rules = tmp_path / "AGENTS.md"
        rules.write_text("# Rules\nBe kind.", encoding="utf-8")

        data = json.loads(
            ok(
                cli(
                    "context",
                    "t1",
                    "reviewer",
                    "--type",
                    "claude",
                    "--window",
                    "0",
                    "--system",
                    "You review.",
                    "--instruction-file",
                    str(rules),
                    "--max-bytes",
                    "4096",
                    "--format",
                    "json",
                )
            ).stdout
        )

        assert data == {
            "context_messages": [],
            "current_message": "Capped.",
            "team_task": "Cap the retry delay.",
            "system_instruction": "You review.",
            "instruction_file_text": "# Rules\nBe kind.",
            "max_bytes": 4096,
        }

    def test_prompt_prints_the_prompt_and_the_system_flag_on_stderr(
        self, review: str, cli: Any, db: str
    ) -> None:
        result = ok(cli("prompt", "t1", "reviewer", "--type", "claude", "--system", "You review."))

        with MemoryStore.open(db) as store:
            team = TeamConversation.open(store, "t1")
            expected = team.assemble_prompt(
                "claude",
                team.context_for_agent("reviewer", "claude", system_instruction="You review."),
            )
        assert result.stdout == expected.prompt
        assert result.stderr == "system flag: You review.\n"

    def test_prompt_as_json(self, review: str, cli: Any) -> None:
        data = json.loads(
            ok(cli("prompt", "t1", "reviewer", "--type", "gemini", "--format", "json")).stdout
        )

        assert data["system_flag"] is None
        assert data["prompt"].startswith("TEAM TASK\n> Cap the retry delay.")

    def test_a_prompt_too_large_is_one_error_line(self, review: str, cli: Any) -> None:
        failed(
            cli("prompt", "t1", "reviewer", "--type", "codex", "--max-bytes", "10"),
            "--max-bytes is 10",
        )

    def test_type_is_required(self, review: str, cli: Any) -> None:
        result = cli("context", "t1", "reviewer")

        assert result.exit_code == 2
        assert "--type" in result.stderr


class TestBuild:
    def test_builds_the_agents_view(self, review: str, cli: Any) -> None:
        result = ok(
            cli(
                "build",
                "t1",
                "coder",
                "--max-tokens",
                "500",
                "--model",
                "gpt-4o",
                "--format",
                "json",
            )
        )

        data = json.loads(result.stdout)
        assert data["included_chunk_ids"] == ["team-task", "msg-1", "msg-2"]
        assert [m["role"] for m in data["messages"]] == ["system", "user", "assistant"]
        assert data["token_count_exact"] is True


class TestExportImportClear:
    def test_export_then_import_into_another_team(
        self, review: str, cli: Any, db: str, tmp_path: Path
    ) -> None:
        target = tmp_path / "t1.json"
        ok(cli("export", "t1", "-o", str(target)))

        result = ok(cli("import", "t2", str(target)))

        assert "imported 2 message(s)" in result.stderr
        assert [m.content for m in team_of(db, "t2")[0]] == [m.content for m in team_of(db)[0]]
        assert team_of(db, "t2")[1] == "Cap the retry delay."

    def test_export_to_stdout(self, review: str, cli: Any) -> None:
        data = json.loads(ok(cli("export", "t1")).stdout)

        assert data["version"] == 1

    def test_a_bad_snapshot_is_one_error_line_and_changes_nothing(
        self, review: str, cli: Any, db: str
    ) -> None:
        before = team_of(db)

        failed(
            cli("import", "t1", "-", input='{"version": 1, "messages": {}}'),
            "Invalid snapshot format",
        )
        failed(cli("import", "t1", "-", input="{nope"), "not valid JSON")

        assert team_of(db) == before

    def test_clear_needs_yes(self, review: str, cli: Any, db: str) -> None:
        failed(cli("clear", "t1"), "add --yes")
        assert len(team_of(db)[0]) == 2

        ok(cli("clear", "t1", "--yes"))

        assert team_of(db) == ((), None)


class TestNoPartialWrites:
    """A refused command leaves the database as it was: no thread is created for nothing."""

    def threads(self, db: str) -> list[str]:
        with MemoryStore.open(db) as store:
            return [info.id for info in store.list_threads()]

    def test_a_bad_snapshot_into_a_new_team_creates_no_thread(self, cli: Any, db: str) -> None:
        failed(
            cli("import", "NEW", "-", input='{"version": 1, "messages": {}}'),
            "Invalid snapshot format",
        )
        assert self.threads(db) == []

    def test_a_refused_message_to_a_new_team_creates_no_thread(self, cli: Any, db: str) -> None:
        failed(cli("add", "NEW", "hello", "--speaker", ""), "roleId is required")
        assert self.threads(db) == []

    def test_a_task_from_stdin_that_is_not_utf8_creates_no_thread(self, db: str) -> None:
        result = CliRunner().invoke(
            main, ["team", "--db", db, "task", "NEW", "-"], input=b"\xff\xfe bad"
        )
        failed(result, "not UTF-8")
        assert self.threads(db) == []

    def test_a_thread_that_is_not_a_team_is_refused_and_unchanged(self, cli: Any, db: str) -> None:
        from memctx import chunks

        with MemoryStore.open(db) as store:
            store.create_thread("plain")
            store.append("plain", chunks.user("hi", id="u1"))
        failed(cli("task", "plain", "Do it."), "not a team conversation")
        failed(cli("add", "plain", "hello", "--speaker", "lena"), "not a team conversation")
        with MemoryStore.open(db) as store:
            assert store.thread_metadata("plain") == {}
            assert store.get_current_state("plain").ids == ("u1",)
