"""``memctx thread search``: hits as lines or JSON, errors as one line."""

from __future__ import annotations

import json
from typing import Any

import pytest
from click.testing import CliRunner, Result

from memctx import chunks
from memctx.cli import main
from memctx.cli._thread_search import excerpt
from memctx.store import MemoryStore


@pytest.fixture
def api() -> str:
    """The CLI uses MemoryStore; its tests set up their data with it too."""
    return "sync"


@pytest.fixture
def cli(store_url: str) -> Any:
    """Run ``memctx thread --db URL ARGS...``."""
    runner = CliRunner()

    def run(*args: str) -> Result:
        return runner.invoke(main, ["thread", "--db", store_url, *args])

    return run


@pytest.fixture
def run(store: MemoryStore) -> str:
    """A thread whose failing output is hidden by a truncation."""
    store.create_thread("t1")
    store.append(
        "t1",
        chunks.user("Fix the parser.", id="task"),
        chunks.tool_result("bash", "E   KeyError: 'name'\n    in jsonrep.py", "c1", id="fail"),
        chunks.assistant("A KeyError again, on a new key.", id="again"),
    )
    store.truncate("t1", keep_last=1)
    return "t1"


def ok(result: Result) -> Result:
    assert result.exit_code == 0, result.output
    return result


class TestSearchCommand:
    def test_one_line_per_hit_best_first(self, cli: Any, run: str) -> None:
        result = ok(cli("search", run, "KeyError: 'name'"))

        lines = result.stdout.splitlines()
        assert [line.split("\t")[:1] + line.split("\t")[2:4] for line in lines] == [
            ["1", "ENVIRONMENT", "fail"],
            ["2", "AGENT", "again"],
        ]
        assert lines[0].split("\t")[4] == "E KeyError: 'name' in jsonrep.py"
        assert float(lines[0].split("\t")[1]) >= 2.0

    def test_json_gives_the_chunks(self, cli: Any, run: str) -> None:
        found = json.loads(ok(cli("search", run, "jsonrep", "--format", "json")).stdout)

        assert [(hit["position"], hit["chunk"]["id"]) for hit in found] == [(1, "fail")]
        assert found[0]["chunk"]["metadata"]["call_id"] == "c1"

    def test_limit_type_and_hidden_filter(self, cli: Any, run: str) -> None:
        def ids(*args: str) -> list[str]:
            lines = ok(cli("search", run, "KeyError: 'name'", *args)).stdout.splitlines()
            return [line.split("\t")[3] for line in lines]

        assert ids("--limit", "1") == ["fail"]
        assert ids("--type", "agent") == ["again"]
        assert ids("--type", "agent", "--type", "environment") == ["fail", "again"]
        assert ids("--hidden") == ["fail"]
        assert ids("--visible") == ["again"]

    def test_nothing_found_prints_nothing(self, cli: Any, run: str) -> None:
        assert ok(cli("search", run, "segfault")).stdout == ""

    @pytest.mark.parametrize(
        ("args", "code", "message"),
        [
            (["nope", "x"], 1, "no thread 'nope'"),
            (["t1", "x", "--limit", "0"], 2, "--limit"),
            (["t1", "x", "--type", "TOOL"], 2, "--type"),
        ],
    )
    def test_errors_are_one_line(
        self, cli: Any, run: str, args: list[str], code: int, message: str
    ) -> None:
        result = cli("search", *args)

        assert result.exit_code == code
        assert result.stderr.count("\n") == 1
        assert result.stderr.startswith("memctx: error: ")
        assert message in result.stderr


class TestExcerpt:
    def test_it_starts_a_little_before_the_first_word_found(self) -> None:
        text = "x" * 300 + " the KeyError here " + "y" * 300

        found = excerpt(text, "keyerror", width=40)

        assert found.startswith("…")
        assert found.endswith("…")
        assert "KeyError" in found

    def test_a_short_text_is_shown_whole_on_one_line(self) -> None:
        assert excerpt("a\n  b\tc", "zzz") == "a b c"
