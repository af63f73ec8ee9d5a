"""``memctx inspect`` and ``memctx thread inspect``: the report from the command line."""

from __future__ import annotations

import json
import os
import pty
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result

from memctx import Chunk, MemoryState, create_builder, create_tokenizer, load_state, save_state
from memctx.cli import main
from memctx.store import MemoryStore

ROOT = Path(__file__).parent.parent
EXAMPLE = ROOT / "examples" / "coding_agent.json"


def page_data(page: str) -> dict[str, Any]:
    found = re.search(r'<script type="application/json" id="memctx-data">(.*?)</script>', page)
    assert found is not None
    data: dict[str, Any] = json.loads(found.group(1))
    return data


def ok(result: Result) -> Result:
    assert result.exit_code == 0, result.output
    return result


def failed(result: Result, message: str) -> None:
    assert result.exit_code != 0, result.output
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert lines[-1].startswith("memctx: error: "), result.stderr
    assert message in lines[-1]
    assert "Traceback" not in result.output


@pytest.fixture
def run() -> Any:
    runner = CliRunner()
    return lambda *args: runner.invoke(main, [str(a) for a in args])


class TestInspect:
    def test_writes_the_report_of_the_build_to_the_output_file(
        self, run: Any, tmp_path: Path
    ) -> None:
        out = tmp_path / "report.html"
        result = ok(run("inspect", EXAMPLE, "--max-tokens", 800, "--model", "gpt-4o", "-o", out))

        data = page_data(out.read_text(encoding="utf-8"))
        state = load_state(EXAMPLE)
        expected = create_builder(create_tokenizer("gpt-4o")).build(state, max_tokens=800)
        assert [r["id"] for r in data["chunks"]] == [c.id for c in state]
        included = [r["id"] for r in data["chunks"] if r["status"] == "included"]
        assert included == list(expected.included_chunk_ids)
        assert data["build"]["token_count"] == expected.token_count
        assert data["compare"] is None
        assert result.stdout == ""
        assert "left out: over_budget" in result.stderr
        assert f"wrote the report to {out}" in result.stderr

    def test_without_output_the_page_goes_to_stdout(self, run: Any) -> None:
        result = ok(run("inspect", EXAMPLE, "--max-tokens", 800))

        assert result.stdout.startswith("<!DOCTYPE html>")
        assert page_data(result.stdout)["build"]["tokenizer"] == "estimate (chars/4)"

    def test_takes_the_build_options_of_memctx_build(self, run: Any) -> None:
        result = ok(
            run(
                "inspect", EXAMPLE, "--max-tokens", 900, "--reserve", 100, "--model", "gpt-4o",
                "--strategy", "priority", "--system-prompt", "Be brief.",
            )
        )  # fmt: skip

        build = page_data(result.stdout)["build"]
        assert (build["max_tokens"], build["reserve_tokens"], build["strategy"]) == (
            900, 100, "priority",
        )  # fmt: skip

    def test_has_every_option_of_memctx_build_and_its_own_format(self) -> None:
        from memctx.cli._inspect import inspect
        from memctx.cli._main import build
        from memctx.cli._thread import build as thread_build
        from memctx.cli._thread import thread_inspect

        def names(command: Any) -> set[str]:
            return {param.name for param in command.params}

        def formats(command: Any) -> list[str]:
            [fmt] = [p for p in command.params if p.name == "output_format"]
            return list(fmt.type.choices)

        assert names(inspect) >= names(build)
        assert names(thread_inspect) >= names(thread_build)
        assert formats(inspect) == formats(thread_inspect) == ["html", "json"]

    def test_compare_with_an_earlier_state_of_the_history(self, run: Any, tmp_path: Path) -> None:
        state = load_state(EXAMPLE)
        earlier = tmp_path / "earlier.json"
        save_state(MemoryState(list(state)[:12], thread_id=state.thread_id), earlier)

        result = ok(run("inspect", EXAMPLE, "--max-tokens", 800, "--compare", earlier))

        compare = page_data(result.stdout)["compare"]
        assert compare["label"] == "earlier.json"
        entered = {state.chunks[p].id for p in compare["entered"]}
        assert {c.id for c in list(state)[12:]} <= entered | {
            r["id"] for r in page_data(result.stdout)["chunks"] if r["status"] != "included"
        }
        assert compare["shared_prefix_tokens"] > 0
        assert "compared with earlier.json: " in result.stderr

    def test_compare_with_another_budget(self, run: Any) -> None:
        result = ok(run("inspect", EXAMPLE, "--max-tokens", 800, "--compare-max-tokens", 500))

        compare = page_data(result.stdout)["compare"]
        assert compare["label"] == "this state at 500 tokens"
        assert compare["previous_max_tokens"] == 500
        assert compare["entered"]
        assert compare["left"] == []

    def test_refuses_to_print_the_page_on_a_terminal(self, tmp_path: Path) -> None:
        primary, secondary = pty.openpty()
        try:
            done = subprocess.run(
                [sys.executable, "-c", "from memctx.cli import main; main()", "inspect",
                 str(EXAMPLE)],
                stdout=secondary, stderr=subprocess.PIPE, timeout=120, check=False,
            )  # fmt: skip
        finally:
            os.close(secondary)
            os.close(primary)

        assert done.returncode == 1
        assert done.stderr.decode().startswith("memctx: error: the report is an HTML page")

    def test_bad_input_is_one_line(self, run: Any, tmp_path: Path) -> None:
        failed(run("inspect", tmp_path / "missing.json"), "missing.json")
        failed(run("inspect", EXAMPLE, "--model", "no-such-model"), "no-such-model")
        failed(
            run("inspect", EXAMPLE, "--max-tokens", 800, "--reserve", 400,
                "--compare-max-tokens", 300),
            "--reserve: 400 leaves nothing of --max-tokens=300",
        )  # fmt: skip
        out = tmp_path / "report.html"
        failed(run("inspect", EXAMPLE, "--max-tokens", 1, "-o", out), "budget")
        assert not out.exists()


@pytest.fixture
def db(tmp_path: Path) -> str:
    return str(tmp_path / "store.db")


def append_steps(db: str, thread: str, steps: list[list[Chunk]]) -> None:
    with MemoryStore.open(db) as store:
        store.create_thread(thread, exist_ok=True)
        for step in steps:
            store.append(thread, *step)


class TestThreadInspect:
    def test_reports_a_build_of_the_visible_chunks_and_records_no_event(
        self, run: Any, db: str
    ) -> None:
        state = load_state(EXAMPLE)
        append_steps(db, "t", [list(state)])

        result = ok(run("thread", "--db", db, "inspect", "t", "--max-tokens", 800))

        data = page_data(result.stdout)
        assert [r["id"] for r in data["chunks"]] == [c.id for c in state]
        assert data["thread_id"] == "t"
        with MemoryStore.open(db) as store:
            assert store.events("t", "context.built") == ()

    def test_last_two_compares_the_last_two_recorded_builds(self, run: Any, db: str) -> None:
        state = load_state(EXAMPLE)
        tokenizer = create_tokenizer("gpt-4o")
        append_steps(db, "t", [list(state)[:10]])
        with MemoryStore.open(db) as store:
            first = store.build("t", max_tokens=700, tokenizer=tokenizer)
            store.append("t", *list(state)[10:])
            second = store.build("t", max_tokens=800, tokenizer=tokenizer)

        result = ok(run("thread", "--db", db, "inspect", "t", "--last", 2, "--model", "gpt-4o"))

        data = page_data(result.stdout)
        assert data["build"]["token_count"] == second.token_count
        assert [r["id"] for r in data["chunks"]] == [c.id for c in state]
        now, before = set(second.included_chunk_ids), set(first.included_chunk_ids)
        ids = [c.id for c in state]
        compare = data["compare"]
        assert {ids[p] for p in compare["entered"]} == now - before
        assert {ids[p] for p in compare["left"]} == before - now
        assert compare["previous_token_count"] == first.token_count
        assert compare["previous_max_tokens"] == 700
        assert "note:" not in result.stderr

    def test_last_one_reports_the_last_recorded_build(self, run: Any, db: str) -> None:
        state = load_state(EXAMPLE)
        append_steps(db, "t", [list(state)[:8]])
        with MemoryStore.open(db) as store:
            recorded = store.build("t", max_tokens=600)
            store.append("t", *list(state)[8:])

        result = ok(run("thread", "--db", db, "inspect", "t", "--last", 1))

        data = page_data(result.stdout)
        assert [r["id"] for r in data["chunks"]] == [c.id for c in list(state)[:8]]
        assert data["build"]["token_count"] == recorded.token_count
        assert data["compare"] is None

    def test_last_refuses_what_it_cannot_rebuild(self, run: Any, db: str) -> None:
        state = load_state(EXAMPLE)
        append_steps(db, "t", [list(state)])
        failed(run("thread", "--db", db, "inspect", "t", "--last", 2), "has 0 recorded build")
        with MemoryStore.open(db) as store:
            store.build("t", max_tokens=800, tokenizer=create_tokenizer("gpt-4o"))
        failed(run("thread", "--db", db, "inspect", "t", "--last", 1), "pass its --model")
        failed(
            run("thread", "--db", db, "inspect", "t", "--last", 1, "--max-tokens", 5),
            "drop --max-tokens",
        )
        with MemoryStore.open(db) as store:
            store.truncate("t", keep_last=5)
        failed(
            run("thread", "--db", db, "inspect", "t", "--last", 1, "--model", "gpt-4o"),
            "cannot be recovered",
        )

    def test_unknown_thread_is_one_line(self, run: Any, db: str) -> None:
        append_steps(db, "t", [])
        failed(run("thread", "--db", db, "inspect", "nope"), "nope")
