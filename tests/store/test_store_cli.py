"""``memctx thread ...``: the store from the command line, and its errors as one line."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result

from memctx import MemoryState, chunks
from memctx.cli import main
from memctx.statefile import chunk_to_dict, dumps_state, loads_state
from memctx.store import DATABASE_URL_ENV, MemoryStore


@pytest.fixture
def api() -> str:
    """The CLI uses MemoryStore; its tests set up their data with it too."""
    return "sync"


@pytest.fixture
def cli(store_url: str) -> Any:
    """Run ``memctx thread --db URL ARGS...``; stdin with ``input=``."""
    runner = CliRunner()

    def run(*args: str, input: str | None = None) -> Result:
        return runner.invoke(main, ["thread", "--db", store_url, *args], input=input)

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
def filled(cli: Any) -> str:
    ok(cli("new", "t1"))
    ok(cli("append", "t1", "--system", "Be brief."))
    for text in ("one", "two", "three"):
        ok(cli("append", "t1", "--user", text))
    return "t1"


def texts(store_url: str, thread: str = "t1") -> list[str]:
    with MemoryStore.open(store_url) as store:
        return [c.text for c in store.get_current_state(thread)]


class TestThreads:
    def test_new_prints_the_id_and_list_shows_the_thread(self, cli: Any) -> None:
        assert ok(cli("new", "t1")).stdout == "t1\n"
        generated = ok(cli("new")).stdout.strip()

        listing = ok(cli("list")).stdout

        assert generated.startswith("thread_")
        assert listing.startswith("t1\t0 chunks\tbatch 0\t")
        assert generated in listing

    def test_list_can_print_json(self, cli: Any, filled: str) -> None:
        [entry] = json.loads(ok(cli("list", "--format", "json")).stdout)

        assert (entry["id"], entry["chunks"], entry["batch"]) == ("t1", 4, 0)

    def test_an_existing_thread_is_one_error_line_unless_exist_ok(self, cli: Any) -> None:
        ok(cli("new", "t1"))

        failed(cli("new", "t1"), "thread 't1' already exists")
        assert ok(cli("new", "t1", "--exist-ok")).stdout == "t1\n"

    def test_an_unknown_thread_is_one_error_line(self, cli: Any) -> None:
        for command in (["show", "nope"], ["append", "nope", "--user", "x"], ["build", "nope"],
                        ["export", "nope"], ["truncate", "nope", "--keep-last", "1"],
                        ["rollback", "nope", "0"], ["events", "nope"]):  # fmt: skip
            failed(cli(*command), "no thread 'nope'")

    def test_delete_needs_yes(self, cli: Any, filled: str, store_url: str) -> None:
        failed(cli("delete", filled), "add --yes")
        assert len(texts(store_url)) == 4

        ok(cli("delete", filled, "--yes"))
        assert ok(cli("list")).stdout == ""


class TestAppendAndShow:
    def test_show_prints_the_visible_chunks_as_xml_under_their_roles(
        self, cli: Any, filled: str
    ) -> None:
        out = ok(cli("show", filled)).stdout

        assert out.splitlines()[0] == "# thread t1: batch 0, 4 of 4 chunks visible"
        assert "[system] chunk_" in out
        assert "<system_context" in out
        assert "\none\n</user_message>" in out

    def test_show_all_marks_hidden_chunks(self, cli: Any, filled: str) -> None:
        ok(cli("truncate", filled, "--keep-last", "1"))

        out = ok(cli("show", filled, "--all")).stdout

        assert out.count(" hidden append [") == 3
        assert out.count(" visible append [") == 1

    def test_show_as_json_is_a_state_file(self, cli: Any, filled: str, store_url: str) -> None:
        state = loads_state(ok(cli("show", filled, "--format", "json")).stdout)

        assert [c.text for c in state] == texts(store_url)

    def test_append_reads_a_state_file_an_array_or_one_chunk(
        self, cli: Any, tmp_path: Path, store_url: str
    ) -> None:
        ok(cli("new", "t1"))
        state_file = tmp_path / "state.json"
        state_file.write_text(dumps_state(MemoryState([chunks.user("from state", id="a")])))
        array_file = tmp_path / "array.json"
        array_file.write_text(json.dumps([chunk_to_dict(chunks.assistant("from array", id="b"))]))
        one = json.dumps(chunk_to_dict(chunks.thinking("from stdin", id="c")))

        ok(cli("append", "t1", str(state_file)))
        ok(cli("append", "t1", str(array_file)))
        result = ok(cli("append", "t1", "-", input=one))

        assert texts(store_url) == ["from state", "from array", "from stdin"]
        assert "appended 1 new chunk(s) to t1 (0 already stored)" in result.stderr

    def test_appending_a_file_again_stores_nothing_new(self, cli: Any, tmp_path: Path) -> None:
        ok(cli("new", "t1"))
        path = tmp_path / "state.json"
        path.write_text(dumps_state(MemoryState([chunks.user("x", id="a")])))
        ok(cli("append", "t1", str(path)))

        result = ok(cli("append", "t1", str(path)))

        assert "appended 0 new chunk(s) to t1 (1 already stored)" in result.stderr

    @pytest.mark.parametrize(
        ("args", "content", "message"),
        [
            (["FILE"], "{not json", "not valid JSON: Expecting property name"),
            (["FILE"], '[{"id": "x", "type": "AGENT"}]', "chunks[0].content: missing"),
            (["FILE"], '{"version": 7, "chunks": []}', "unsupported state format version 7"),
            (["FILE", "--user", "x"], "[]", "give either FILE or messages"),
            ([], "", "give either FILE or messages"),
            (["missing.json"], "", "No such file"),
        ],
    )
    def test_bad_input_to_append_is_one_error_line_and_stores_nothing(
        self, cli: Any, tmp_path: Path, store_url: str, args: list[str], content: str,
        message: str,
    ) -> None:  # fmt: skip
        ok(cli("new", "t1"))
        path = tmp_path / "input.json"
        path.write_text(content)
        args = [str(path) if a == "FILE" else a for a in args]
        args = [str(tmp_path / a) if a == "missing.json" else a for a in args]

        failed(cli("append", "t1", *args), message)
        assert texts(store_url) == []

    def test_a_conflicting_chunk_is_one_error_line(self, cli: Any, tmp_path: Path) -> None:
        ok(cli("new", "t1"))
        for text in ("first", "second"):
            path = tmp_path / f"{text}.json"
            path.write_text(json.dumps(chunk_to_dict(chunks.user(text, id="same"))))
            result = cli("append", "t1", str(path))

        failed(result, "already holds a different chunk with id 'same'")


class TestViews:
    def test_truncate_hides_chunks_and_rollback_shows_them_again(
        self, cli: Any, filled: str, store_url: str
    ) -> None:
        result = ok(cli("truncate", filled, "--keep-last", "2"))
        assert result.stderr == "t1: batch 1, 2 chunk(s) visible\n"
        assert texts(store_url) == ["two", "three"]

        ok(cli("truncate", filled, "--range", ":1"))
        assert texts(store_url) == ["two"]

        ok(cli("rollback", filled, "0"))
        assert texts(store_url) == ["Be brief.", "one", "two", "three"]

    def test_filter_and_clear_change_what_is_visible(
        self, cli: Any, filled: str, store_url: str
    ) -> None:
        ok(cli("filter", filled, "--role", "user", "--excludes", "two"))
        assert texts(store_url) == ["one", "three"]

        ok(cli("rollback", filled, "0"))
        ok(cli("clear", filled))
        assert texts(store_url) == ["Be brief."]

    def test_batches_lists_operations_and_marks_the_current_one(
        self, cli: Any, filled: str
    ) -> None:
        ok(cli("truncate", filled, "--remove-first", "1"))
        ok(cli("rollback", filled, "0"))

        lines = ok(cli("batches", filled)).stdout.splitlines()

        assert lines == ['  0\tcreate\t{}', '  1\ttruncate\t{"remove_first": 1}',
                         '* 2\trollback\t{"batch": 0}']  # fmt: skip

    @pytest.mark.parametrize(
        ("args", "message"),
        [
            (["truncate", "t1"], "truncate takes exactly one of"),
            (["truncate", "t1", "--keep-last", "-1"], "non-negative int"),
            (["rollback", "t1", "7"], "there is no batch 7"),
            (["filter", "t1"], "filter needs at least one of"),
        ],
    )
    def test_bad_view_operations_are_one_error_line(
        self, cli: Any, filled: str, store_url: str, args: list[str], message: str
    ) -> None:
        failed(cli(*args), message)
        assert len(texts(store_url)) == 4

    def test_a_malformed_range_is_a_usage_error(self, cli: Any, filled: str) -> None:
        result = cli("truncate", filled, "--range", "3")

        assert result.exit_code == 2
        assert "expected START:END" in result.stderr


class TestBuildExportImport:
    def test_build_prints_the_messages_and_records_an_event(self, cli: Any, filled: str) -> None:
        result = ok(cli("build", filled, "--model", "gpt-4o", "--format", "json"))

        report = json.loads(result.stdout)
        assert len(report["included_chunk_ids"]) == 4
        assert report["token_count"] > 0
        assert "included 4 chunks, excluded 0" in result.stderr
        [line] = ok(cli("events", filled, "--kind", "context.built")).stdout.splitlines()
        event = json.loads(line)
        assert event["payload"]["token_count"] == report["token_count"]
        assert event["payload"]["tokenizer"] == "gpt-4o (o200k_base)"

    def test_build_prints_text_or_openai_messages(self, cli: Any, filled: str) -> None:
        assert "=== system ===" in ok(cli("build", filled)).stdout
        messages = json.loads(ok(cli("build", filled, "--format", "openai")).stdout)
        assert [m["role"] for m in messages] == ["system", "user"]

    def test_export_then_import_makes_a_copy(
        self, cli: Any, filled: str, tmp_path: Path, store_url: str
    ) -> None:
        ok(cli("truncate", filled, "--keep-last", "2"))
        target = tmp_path / "snap.json"

        ok(cli("export", filled, "-o", str(target)))
        assert ok(cli("import", str(target), "--thread-id", "copy")).stdout == "copy\n"
        assert ok(cli("export", filled)).stdout.startswith("{")

        assert texts(store_url, "copy") == texts(store_url) == ["two", "three"]

    @pytest.mark.parametrize(
        ("content", "message"),
        [
            ("{", "not valid JSON"),
            ('{"version": 2, "chunks": []}', "unsupported state format version 2"),
            (
                '{"version": 1, "thread_id": "x", "chunks": [], "store": {"version": 2}}',
                "store: missing field(s)",
            ),
        ],
    )
    def test_a_corrupt_snapshot_file_is_one_error_line_and_imports_nothing(
        self, cli: Any, tmp_path: Path, content: str, message: str
    ) -> None:
        path = tmp_path / "bad.json"
        path.write_text(content)

        failed(cli("import", str(path), "--thread-id", "x"), message)
        assert ok(cli("list")).stdout == ""


class TestDatabaseOption:
    def test_db_may_follow_the_command(self, store_url: str) -> None:
        runner = CliRunner()

        ok(runner.invoke(main, ["thread", "new", "t1", "--db", store_url]))

        with MemoryStore.open(store_url) as store:
            assert store.has_thread("t1")

    def test_without_db_the_environment_variable_is_used(
        self, store_url: str, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        monkeypatch.setenv(DATABASE_URL_ENV, store_url)

        ok(CliRunner().invoke(main, ["thread", "new", "from-env"]))

        with MemoryStore.open(store_url) as store:
            assert store.has_thread("from-env")

    def test_an_unusable_database_url_is_one_error_line(self) -> None:
        result = CliRunner().invoke(main, ["thread", "--db", "mysql://h/db", "list"])

        failed(result, "unsupported database 'mysql'")


class TestMessagesInsertReplace:
    def test_several_messages_are_appended_in_the_order_typed(
        self, cli: Any, store_url: str
    ) -> None:
        ok(cli("new", "t1"))

        result = ok(
            cli(
                "append",
                "t1",
                "--user",
                "a",
                "--assistant",
                "b",
                "--user",
                "c",
                "--thinking",
                "d",
                "--system=e",
                "--format",
                "json",
            )
        )

        assert texts(store_url) == ["a", "b", "c", "d", "e"]
        report = json.loads(result.stdout)
        assert (report["appended"], report["already_stored"]) == (5, 0)
        with MemoryStore.open(store_url) as store:
            kinds = [(c.type.value, c.role) for c in store.get_current_state("t1")]
        assert kinds[:3] == [("AGENT", "user"), ("AGENT", "assistant"), ("AGENT", "user")]

    def test_a_message_text_that_looks_like_an_option_stays_text(
        self, cli: Any, store_url: str
    ) -> None:
        ok(cli("new", "t1"))

        ok(cli("append", "t1", "--user", "--assistant", "--assistant", "x"))

        assert texts(store_url) == ["--assistant", "x"]

    def test_insert_shows_new_chunks_at_a_position(
        self, cli: Any, filled: str, store_url: str
    ) -> None:
        result = ok(cli("insert", filled, "--at", "1", "--user", "i1", "--user", "i2"))

        assert texts(store_url) == ["Be brief.", "i1", "i2", "one", "two", "three"]
        assert result.stderr == "t1: batch 1, 6 chunk(s) visible\n"
        ok(cli("insert", filled, "--at", "-1", "--assistant", "end"))
        assert texts(store_url)[-1] == "end"

    def test_replace_by_index_or_id_keeps_the_old_chunk_in_the_history(
        self, cli: Any, filled: str, store_url: str, tmp_path: Path
    ) -> None:
        ok(cli("replace", filled, "--at", "-1", "--user", "THREE"))
        with MemoryStore.open(store_url) as store:
            one_id = store.get_current_state("t1").chunks[1].id
        path = tmp_path / "chunk.json"
        path.write_text(json.dumps(chunk_to_dict(chunks.user("ONE", id="one-bis"))))

        result = ok(cli("replace", filled, str(path), "--chunk", one_id, "--format", "json"))

        assert texts(store_url) == ["Be brief.", "ONE", "two", "THREE"]
        assert json.loads(result.stdout) == {"thread_id": "t1", "batch": 2, "visible": 4}
        ok(cli("rollback", filled, "0"))
        assert texts(store_url) == ["Be brief.", "one", "two", "three"]

    @pytest.mark.parametrize(
        ("args", "message"),
        [
            (["replace", "t1", "--user", "x"], "give exactly one of --at, --chunk"),
            (["replace", "t1", "--at", "0", "--user", "x", "--user", "y"], "exactly one chunk"),
            (["replace", "t1", "--chunk", "nope", "--user", "x"], "nope"),
            (["insert", "t1", "--at", "0"], "give either FILE or messages"),
        ],
    )
    def test_bad_insert_or_replace_is_one_error_line_and_changes_nothing(
        self, cli: Any, filled: str, store_url: str, args: list[str], message: str
    ) -> None:
        failed(cli(*args), message)
        assert texts(store_url) == ["Be brief.", "one", "two", "three"]

    def test_an_unknown_role_is_a_usage_error(self, cli: Any, filled: str) -> None:
        result = cli("filter", filled, "--role", "robot")

        assert result.exit_code == 2
        assert result.stderr.startswith("memctx: error: Invalid value for '--role'")
        assert result.stderr.count("\n") == 1
