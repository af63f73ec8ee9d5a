"""The command line's manners, point by point: options, help, errors, '-', pipes, formats,
verbosity, choices, version, ``python -m memctx``, completion."""

from __future__ import annotations

import json
import logging
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import attrs
import click
import pytest
from click.testing import Result

from cli_results import ok, one_error_line, run
from memctx import BuildOptions, load_state
from memctx.cli import COMMANDS, main
from memctx.cli._options import BUILD_OPTION_NAMES

ROOT = Path(__file__).parent.parent
EXAMPLE = ROOT / "examples" / "coding_agent.json"
TRANSCRIPT = ROOT / "examples" / "trajectories" / "astropy__astropy-12907.traj.json"


def build_json(*args: str) -> dict[str, Any]:
    result = ok(run("build", str(EXAMPLE), "--format", "json", *args))
    data: dict[str, Any] = json.loads(result.stdout)
    return data


def all_commands() -> list[tuple[str, click.Command]]:
    """Every command, the lazily registered ones and the sub-commands of groups included."""
    found: list[tuple[str, click.Command]] = []
    ctx = click.Context(main)

    def walk(path: str, command: click.Command) -> None:
        found.append((path, command))
        if isinstance(command, click.Group):
            for name in command.list_commands(ctx):
                sub = command.get_command(ctx, name)
                assert sub is not None
                walk(f"{path} {name}", sub)

    walk("memctx", main)
    return found


class TestBuildOptions:
    @pytest.mark.parametrize("field", [f.name for f in attrs.fields(BuildOptions)])
    @pytest.mark.parametrize("command", [("build",), ("thread", "build")])
    def test_every_build_option_is_an_option(self, field: str, command: tuple[str, ...]) -> None:
        ctx = click.Context(main)
        cmd: Any = main
        for name in command:
            cmd = cmd.get_command(ctx, name)
        assert field in BUILD_OPTION_NAMES
        assert field in {p.name for p in cmd.params}

    def test_exclude_type_leaves_out_that_type(self) -> None:
        report = build_json("--exclude-type", "output", "--exclude-type", "Working_Flow")

        reasons = {cid: e["reason"] for cid, e in report["exclusions"].items()}
        assert reasons["done"] == reasons["think_plan"] == "exclude_types"
        assert "done" not in report["included_chunk_ids"]

    def test_no_environment_drops_tool_results(self) -> None:
        report = build_json("--no-environment")

        results = {"read_result", "test_result_1", "grep_error", "edit_result", "test_result_2"}
        assert results <= set(report["excluded_chunk_ids"])
        assert {report["exclusions"][cid]["reason"] for cid in results} == {"include_environment"}

    def test_no_system_drops_system_chunks(self) -> None:
        report = build_json("--no-system")

        assert report["exclusions"]["sys_rules"]["reason"] == "include_system"

    def test_only_selects_chunk_ids(self) -> None:
        report = build_json("--only", "task", "--only", "answer")

        assert report["included_chunk_ids"] == ["task", "answer"]

    def test_pin_keeps_an_old_chunk_under_a_tight_budget(self) -> None:
        args = ("--max-tokens", "400", "--model", "gpt-4o")
        assert "think_plan" not in build_json(*args)["included_chunk_ids"]

        assert "think_plan" in build_json(*args, "--pin", "think_plan")["included_chunk_ids"]

    def test_no_pin_newest_lets_the_newest_chunk_go(self) -> None:
        args = ("--max-tokens", "250", "--model", "gpt-4o", "--strategy", "in_order")
        assert "done" in build_json(*args)["included_chunk_ids"]

        assert "done" not in build_json(*args, "--no-pin-newest")["included_chunk_ids"]

    def test_thread_build_takes_the_same_options(self, tmp_path: Path) -> None:
        db = str(tmp_path / "m.db")
        ok(run("thread", "--db", db, "import", str(EXAMPLE), "--thread-id", "t"))

        result = ok(
            run(
                "thread",
                "--db",
                db,
                "build",
                "t",
                "--format",
                "json",
                "--exclude-type",
                "OUTPUT",
                "--only",
                "task",
                "--only",
                "done",
            )
        )

        report = json.loads(result.stdout)
        assert report["included_chunk_ids"] == ["task"]
        assert report["exclusions"]["done"]["reason"] == "exclude_types"


class TestHelp:
    def test_every_option_of_every_command_has_help_text(self) -> None:
        missing = [
            f"{path} {param.opts[0]}"
            for path, command in all_commands()
            for param in command.params
            if isinstance(param, click.Option) and not (param.help or "").strip()
        ]
        assert missing == []

    def test_every_command_has_a_description(self) -> None:
        assert [path for path, c in all_commands() if not (c.help or "").strip()] == []

    def test_a_group_without_a_command_shows_its_help(self) -> None:
        for args in ([], ["thread"]):
            result = run(*args)
            assert result.exit_code == 2
            assert result.stderr.startswith("Usage: ")
            assert "memctx: error" not in result.stderr

    def test_every_registered_command_is_listed(self) -> None:
        out = ok(run("--help")).stdout
        for name in ("render", "build", "import-openai", "example", *COMMANDS):
            assert f"  {name}" in out


class TestErrors:
    def test_build_option_errors_name_the_option_as_typed(self) -> None:
        line = one_error_line(
            run("build", str(EXAMPLE), "--max-tokens", "100", "--reserve", "100"), "--reserve"
        )
        assert "reserve_tokens" not in line
        assert "--max-tokens=100" in line

    def test_view_errors_name_the_options_as_typed(self, tmp_path: Path) -> None:
        db = str(tmp_path / "m.db")
        ok(run("thread", "--db", db, "new", "t"))

        one_error_line(run("thread", "--db", db, "truncate", "t"), "--keep-first", "--range")
        one_error_line(run("thread", "--db", db, "filter", "t"), "--role", "--excludes")

    def test_an_openai_transcript_given_to_build_names_the_file_and_suggests_import(
        self, tmp_path: Path
    ) -> None:
        chat = tmp_path / "chat.json"
        for transcript in (
            [{"role": "user", "content": "hi"}],
            {"messages": [{"role": "user", "content": "hi"}]},
        ):
            chat.write_text(json.dumps(transcript))
            for command in ("build", "render"):
                line = one_error_line(run(command, str(chat)), f"{chat}: ")
                assert f"memctx import-openai {chat} -o state.json" in line
        assert "version: missing required field" in line

    def test_json_syntax_errors_name_the_file(self, tmp_path: Path) -> None:
        bad = tmp_path / "bad.json"
        bad.write_text('{"version": 1,')

        for args in (
            ["build", str(bad)],
            ["render", str(bad)],
            ["import-openai", str(bad)],
            ["thread", "--db", str(tmp_path / "m.db"), "import", str(bad)],
        ):
            one_error_line(run(*args), f"{bad}: not valid JSON")

    def test_a_bad_chunk_names_the_file_and_the_field(self, tmp_path: Path) -> None:
        bad = tmp_path / "state.json"
        bad.write_text('{"version": 1, "chunks": [{"id": "a", "type": "NOPE", "content": ""}]}')

        one_error_line(run("build", str(bad)), f"{bad}: chunks[0].type")

    def test_usage_errors_are_one_line_with_exit_2(self) -> None:
        one_error_line(run("build", str(EXAMPLE), "--max-tokens", "-5"), "--max-tokens", code=2)
        one_error_line(run("nope"), "No such command", code=2)


class TestStdio:
    def test_dash_reads_the_state_from_stdin(self) -> None:
        text = EXAMPLE.read_text()
        for command in ("build", "render"):
            assert "read_call" in ok(run(command, "-", input=text)).stdout

    def test_import_openai_writes_stdout_by_default_and_reads_stdin(self) -> None:
        result = ok(run("import-openai", "-", "-o", "-", input=TRANSCRIPT.read_bytes()))

        state = json.loads(result.stdout)
        assert state["version"] == 1
        assert "wrote" in result.stderr
        assert not Path("-").exists()
        again = json.loads(ok(run("import-openai", str(TRANSCRIPT))).stdout)
        assert [c["id"] for c in again["chunks"]] == [c["id"] for c in state["chunks"]]

    def test_piping_import_openai_into_build(self) -> None:
        state = ok(run("import-openai", str(TRANSCRIPT), "-q")).stdout

        result = ok(run("build", "-", "--max-tokens", "2000", "--model", "gpt-4o", input=state))

        assert result.stdout.startswith("=== system ===")

    def test_export_dash_writes_stdout_and_import_dash_reads_stdin(self, tmp_path: Path) -> None:
        db = str(tmp_path / "m.db")
        ok(run("thread", "--db", db, "import", "-", "--thread-id", "a", input=EXAMPLE.read_text()))

        snapshot = ok(run("thread", "--db", db, "export", "a", "-o", "-")).stdout

        assert ok(run("thread", "--db", db, "import", "-", "--thread-id", "b", input=snapshot))
        assert json.loads(snapshot)["thread_id"] == "a"

    def test_a_closed_pipe_ends_quietly(self, tmp_path: Path) -> None:
        big = tmp_path / "big.json"
        chunks = [
            {"id": f"c{i}", "type": "AGENT", "role": "user", "content": "x" * 200}
            for i in range(3000)
        ]
        big.write_text(json.dumps({"version": 1, "chunks": chunks}))
        shell = f"{sys.executable} -m memctx render {big} | head -1"

        done = subprocess.run(
            ["bash", "-o", "pipefail", "-c", shell], capture_output=True, text=True, timeout=120
        )

        assert done.stdout == "[user] c0\n"
        assert done.stderr == ""
        assert done.returncode == 0


class TestJsonFormat:
    def test_every_command_that_prints_data_takes_format_json(self) -> None:
        quiet_only = {
            "memctx",
            "memctx thread",
            "memctx thread delete",
            "memctx example",
            "memctx thread export",
            "memctx team",
            "memctx team clear",
            "memctx team export",
            "memctx chat",
        }
        without = [
            path
            for path, command in all_commands()
            if path not in quiet_only
            and not any(
                p.name == "output_format" and "json" in getattr(p.type, "choices", ())
                for p in command.params
            )
        ]
        assert without == []

    def test_the_readme_documents_each_json_schema_and_the_output_has_those_keys(
        self, tmp_path: Path
    ) -> None:
        documented = readme_json_schemas()
        db = str(tmp_path / "m.db")
        state = tmp_path / "state.json"
        chunk = tmp_path / "chunk.json"
        chunk.write_text(json.dumps({"id": "new", "type": "AGENT", "content": "n"}))
        anthropic = tmp_path / "anthropic.json"
        anthropic.write_text(
            json.dumps({"system": "s", "messages": [{"role": "user", "content": "hi"}]})
        )
        agents = tmp_path / "agents.json"
        agents.write_text(json.dumps([{"id": "alice"}, {"id": "bob"}, {"id": "carol"}]))
        snapshot = tmp_path / "team.json"
        t = ("thread", "--db", db)
        team = ("team", "--db", db)
        chat = ("chat", "--db", db)
        ok(run(*team, "add", "t1", "Hi [NEXT:coder]", "--speaker", "lena"))
        ok(run(*team, "export", "t1", "-o", str(snapshot)))
        runs: dict[str, tuple[str, ...]] = {
            "render": ("render", str(EXAMPLE), "--model", "gpt-4o"),
            "build": ("build", str(EXAMPLE)),
            "import-openai": ("import-openai", str(TRANSCRIPT), "-o", str(state)),
            "import-anthropic": ("import-anthropic", str(anthropic), "-o", str(state)),
            "thread new": (*t, "new", "t"),
            "thread import": (*t, "import", str(EXAMPLE), "--thread-id", "u"),
            "thread append": (*t, "append", "t", "--user", "hi"),
            "thread insert": (*t, "insert", "t", "--at", "0", "--system", "s"),
            "thread replace": (*t, "replace", "t", str(chunk), "--at", "-1"),
            "thread truncate": (*t, "truncate", "t", "--keep-last", "2"),
            "thread filter": (*t, "filter", "t", "--type", "agent"),
            "thread clear": (*t, "clear", "t"),
            "thread rollback": (*t, "rollback", "t", "0"),
            "thread list": (*t, "list"),
            "thread show": (*t, "show", "t"),
            "thread build": (*t, "build", "t"),
            "thread batches": (*t, "batches", "t"),
            "thread events": (*t, "events", "t"),
            "thread inspect": (*t, "inspect", "t"),
            "inspect": ("inspect", str(EXAMPLE), "--compare-max-tokens", "500"),
            "team add": (*team, "add", "t1", "Done. [NEXT:lena]", "--speaker", "coder", "--ai"),
            "team task": (*team, "task", "t1", "Cap the delay."),
            "team show": (*team, "show", "t1"),
            "team context": (*team, "context", "t1", "coder", "--type", "claude"),
            "team prompt": (*team, "prompt", "t1", "coder", "--type", "codex"),
            "team build": (*team, "build", "t1", "coder"),
            "team import": (*team, "import", "t2", str(snapshot)),
            "chat new": (*chat, "new", "s", "--agents", str(agents)),
            "chat post": (*chat, "post", "s", "@alice hello"),
            "chat reply": (*chat, "reply", "s", "1", "alice", "hi"),
            "chat history": (*chat, "history", "s"),
            "chat mode": (*chat, "mode", "s", "workflow", *roles("alice", "bob", "carol")),
            "chat step": (*chat, "step", "s"),
        }
        assert set(runs) == set(documented)
        for name, args in runs.items():
            data = json.loads(ok(run(*args, "--format", "json")).stdout)
            item = data[0] if isinstance(data, list) else data
            assert set(item) == set(documented[name]), name


def roles(coder: str, reviewer: str, tester: str) -> tuple[str, ...]:
    return (
        "--role",
        f"coder={coder}",
        "--role",
        f"reviewer={reviewer}",
        "--role",
        f"tester={tester}",
    )


def readme_json_schemas() -> dict[str, list[str]]:
    """The README's "JSON output" table: command -> the top-level keys of its schema."""
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    section = text.split("### JSON output", 1)[1].split("\n#", 1)[0]
    schemas = {}
    for line in section.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) >= 2 and cells[0].startswith("`memctx "):
            words = cells[0].strip("`").split()[1:3]
            name = " ".join(words) if words[0] in ("thread", "team", "chat") else words[0]
            schemas[name] = top_level_keys(cells[1])
    return schemas


def top_level_keys(schema: str) -> list[str]:
    """``{a, b: {c}, d}`` -> ``[a, b, d]`` (the first object in ``schema``)."""
    depth, current, keys = 0, "", []
    for ch in schema[schema.index("{") + 1 :]:
        if ch in "{[":
            depth += 1
        elif ch in "}]":
            if depth == 0:
                break
            depth -= 1
        elif ch == "," and depth == 0:
            keys.append(current)
            current = ""
            continue
        if depth == 0:
            current += ch
    keys.append(current)
    return [k.split(":")[0].strip(" `") for k in keys]


class TestVerbosity:
    def test_quiet_prints_only_the_data(self) -> None:
        result = ok(run("-q", "build", str(EXAMPLE), "--max-tokens", "800"))

        assert result.stdout.startswith("=== system ===")
        assert result.stderr == ""
        assert ok(run("build", str(EXAMPLE), "--quiet")).stderr == ""

    def test_verbose_logs_the_store_opening_and_very_verbose_the_build(
        self, tmp_path: Path
    ) -> None:
        db = str(tmp_path / "m.db")

        created = ok(run("-v", "thread", "--db", db, "new", "t")).stderr
        opened = ok(run("thread", "--db", db, "list", "-v")).stderr
        built = ok(run("-vv", "build", str(EXAMPLE))).stderr

        assert "memctx: INFO: created the memctx tables in sqlite:///" in created
        assert "memctx: INFO: opened sqlite:///" in opened
        assert "memctx: DEBUG: build: " in built
        assert "DEBUG" not in ok(run("-v", "build", str(EXAMPLE))).stderr

    def test_the_library_never_configures_logging_and_the_cli_undoes_its_own(self) -> None:
        logger = logging.getLogger("memctx")
        before = (list(logger.handlers), logger.level)
        import memctx  # noqa: F401

        ok(run("-vv", "build", str(EXAMPLE)))

        assert (list(logger.handlers), logger.level) == before


class TestChoicesAndMessages:
    def test_choices_are_case_insensitive(self, tmp_path: Path) -> None:
        report = build_json("--strategy", "PRIORITY", "--exclude-type", "environment")
        assert report["strategy"] == "priority"
        assert ok(run("build", str(EXAMPLE), "--format", "JSON")).stdout.startswith("{")

        db = str(tmp_path / "m.db")
        ok(run("thread", "--db", db, "import", str(EXAMPLE), "--thread-id", "t"))
        ok(run("thread", "--db", db, "filter", "t", "--type", "environment", "--role", "TOOL"))
        state = load_state_text(ok(run("thread", "--db", db, "show", "t", "--format", "json")))
        assert {c.type.value for c in state} == {"ENVIRONMENT"}


def load_state_text(result: Result) -> Any:
    from memctx.statefile import loads_state

    return loads_state(result.stdout)


class TestVersionAndEntryPoints:
    def test_dash_capital_v_prints_the_version(self) -> None:
        from importlib.metadata import version

        for flag in ("-V", "--version"):
            assert ok(run(flag)).stdout.startswith(f"memctx {version('memctx')} (Python ")

    def test_python_dash_m_memctx_runs_the_cli(self) -> None:
        done = subprocess.run(
            [sys.executable, "-m", "memctx", "build", str(EXAMPLE), "-q"],
            capture_output=True,
            text=True,
            timeout=120,
        )

        assert done.returncode == 0, done.stderr
        assert done.stdout.startswith("=== system ===")
        help_text = subprocess.run(
            [sys.executable, "-m", "memctx", "--help"], capture_output=True, text=True, timeout=120
        ).stdout
        assert help_text.startswith("Usage: memctx ")

    def test_shell_completion_works_as_the_readme_says(self) -> None:
        readme = (ROOT / "README.md").read_text(encoding="utf-8")
        assert 'eval "$(_MEMCTX_COMPLETE=bash_source memctx)"' in readme
        env = {
            **os.environ,
            "_MEMCTX_COMPLETE": "bash_complete",
            "COMP_WORDS": "memctx thr",
            "COMP_CWORD": "1",
        }

        done = subprocess.run(
            [sys.executable, "-m", "memctx"], env=env, capture_output=True, text=True, timeout=120
        )

        assert "plain,thread" in done.stdout.splitlines()


def test_example_state_is_what_the_package_ships() -> None:
    from importlib.resources import files

    shipped = (files("memctx.cli") / "_examples" / "coding_agent.json").read_bytes()
    assert shipped == EXAMPLE.read_bytes()
    assert load_state(EXAMPLE).thread_id is not None
