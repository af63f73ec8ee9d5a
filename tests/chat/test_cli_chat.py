"""``memctx chat ...``: post to a session, see the targets and each one's prompt."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result

from memctx.cli import main

AGENTS = [
    {"id": "alice", "display_name": "Coder Cat", "aliases": ["cc"], "persona": "Writes code."},
    {"id": "bob", "display_name": "Review Cat", "aliases": ["rc"]},
    {"id": "carol", "display_name": "Test Cat"},
]


@pytest.fixture
def cli(tmp_path: Path) -> Any:
    """Run ``memctx chat --db FILE ARGS...`` on a SQLite file of the test's own."""
    runner = CliRunner()
    database = tmp_path / "chat.db"

    def run(*args: str) -> Result:
        return runner.invoke(main, ["chat", "--db", str(database), *args])

    return run


@pytest.fixture
def agents_file(tmp_path: Path) -> str:
    path = tmp_path / "agents.json"
    path.write_text(json.dumps(AGENTS))
    return str(path)


def ok(result: Result) -> Result:
    assert result.exit_code == 0, result.output
    return result


def failed(result: Result, message: str) -> None:
    assert result.exit_code == 1, result.output
    assert result.stderr.count("\n") == 1, result.stderr
    assert result.stderr.startswith("memctx: error: ")
    assert message in result.stderr


def test_post_shows_the_targets_and_the_prompt_each_one_gets(cli: Any, agents_file: str) -> None:
    ok(cli("new", "s1", "--agents", agents_file))

    out = ok(cli("post", "s1", "@cc @rc please fix the login")).stdout

    assert out.startswith("# round 1 (free_chat)\n# targets: alice, bob\n")
    assert "##### prompt of alice" in out
    assert "##### prompt of bob" in out
    assert "You are Coder Cat (@alice)." in out
    assert "please fix the login" in out
    assert "@cc @rc please" not in out  # the input without its mentions


def test_new_without_an_id_prints_a_fresh_one(cli: Any, agents_file: str) -> None:
    session_id = ok(cli("new", "--agents", agents_file)).stdout.strip()

    assert session_id.startswith("thread_")
    assert ok(cli("post", session_id, "hi")).stdout.startswith("# round 1 (free_chat)")


def test_post_as_json_gives_the_whole_context(cli: Any, agents_file: str) -> None:
    ok(cli("new", "s1", "--agents", agents_file))
    ok(cli("post", "s1", "hello"))
    ok(cli("reply", "s1", "1", "carol", "hi there"))

    out = json.loads(ok(cli("post", "s1", "@Test Cat and now?", "--format", "json")).stdout)

    assert out["round"] == 2
    assert out["targets"] == ["carol"]
    assert out["prompt_user_text"] == "and now?"
    assert out["prompt_history"] == [
        {"role": "user", "content": "hello", "agent_id": None, "id": "msg-1"},
        {"role": "assistant", "content": "hi there", "agent_id": "carol", "id": "msg-2"},
    ]
    history = json.loads(ok(cli("history", "s1", "--format", "json")).stdout)["messages"]
    assert [sorted(m) for m in history] == [["agent_id", "content", "id", "role"]] * 3
    messages = out["prompts"]["carol"]["messages"]
    assert messages[0]["role"] == "system"
    assert "and now?" in messages[-1]["content"]


def test_a_workflow_walks_the_chain_with_post_and_step(cli: Any, agents_file: str) -> None:
    roles = ["--role", "coder=alice", "--role", "reviewer=bob", "--role", "tester=carol"]
    ok(cli("new", "w", "--agents", agents_file, "--mode", "workflow", *roles))

    first = json.loads(ok(cli("post", "w", "Build wc", "--format", "json")).stdout)
    ok(cli("reply", "w", "1", "alice", "done"))
    second = json.loads(ok(cli("step", "w", "--format", "json")).stdout)
    history = json.loads(ok(cli("history", "w", "--format", "json")).stdout)

    assert (first["node"], first["targets"]) == ("coder", ["alice"])
    assert (second["node"], second["targets"]) == ("reviewer", ["bob"])
    assert second["workflow_task_prompt"] == "Build wc"
    assert history["mode_state"] == {"current_node": "tester", "cycles": 0}
    assert [m["id"] for m in history["messages"]] == ["msg-1", "msg-2"]


def test_history_as_text_lists_who_said_what(cli: Any, agents_file: str) -> None:
    ok(cli("new", "s1", "--agents", agents_file))
    ok(cli("post", "s1", "hello"))
    ok(cli("reply", "s1", "1", "bob", "hi"))

    assert ok(cli("history", "s1")).stdout == (
        "# mode free_chat, 1 round(s)\n[msg-1] user: hello\n[msg-2] bob: hi\n"
    )


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["post", "nope", "hi"], "no thread 'nope'"),
        (["reply", "s1", "1", "dave", "hi"], "unknown agent 'dave'"),
        (["reply", "s1", "9", "bob", "hi"], "the session has no round 9"),
        (["step", "s1"], "only the workflow mode has steps"),
        (["mode", "s1", "workflow", "--role", "coder"], "expected NODE=AGENT_ID"),
        (["mode", "s1", "workflow", "--role", "coder=alice"], "no agent plays 'reviewer'"),
    ],
)
def test_bad_input_is_one_error_line(
    cli: Any, agents_file: str, args: list[str], message: str
) -> None:
    ok(cli("new", "s1", "--agents", agents_file))
    ok(cli("post", "s1", "hello"))

    failed(cli(*args), message)


def test_a_bad_agents_file_is_one_error_line(cli: Any, tmp_path: Path) -> None:
    bad = tmp_path / "agents.json"
    bad.write_text(json.dumps([{"id": "a", "aliases": ["x"]}, {"id": "b", "display_name": "X"}]))

    failed(cli("new", "s1", "--agents", str(bad)), "the name 'X' is used by 'a' and 'b'")
    failed(cli("post", "s1", "hi"), "no thread 's1'")  # nothing was written


@pytest.mark.parametrize(
    ("options", "message"),
    [(["--model", "nope"], "unknown model 'nope'"), (["--max-tokens", "3"], "budget leaves 3")],
)
def test_a_post_or_step_whose_prompts_cannot_be_built_stores_nothing(
    cli: Any, agents_file: str, options: list[str], message: str
) -> None:
    roles = ["--role", "coder=alice", "--role", "reviewer=bob", "--role", "tester=carol"]
    ok(cli("new", "w1", "--agents", agents_file, "--mode", "workflow", *roles))
    before = ok(cli("history", "w1", "--format", "json")).stdout

    failed(cli("post", "w1", "Write wc.py", *options), message)
    failed(cli("step", "w1", *options), message)

    assert ok(cli("history", "w1", "--format", "json")).stdout == before
    out = ok(cli("post", "w1", "Write wc.py", "--format", "json")).stdout
    assert json.loads(out)["round"] == 1
