"""The ``context_snapshot`` fixture and its snapshot files, seen from a user's project.

Most tests run pytest in a subprocess on a small project made with ``pytester``: a
snapshot run changes syrupy's global state, so it must not share this process.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from memctx import ContextMessage
from memctx.snapshot import format_messages, to_snapshot

pytest_plugins = ["pytester"]

TEST_A = """
import pytest

def test_one(context_snapshot):
    assert context_snapshot == "<a>one</a>"

def test_two(context_snapshot):
    assert context_snapshot == "<a>two</a>"

@pytest.mark.parametrize("x", ["p", "q"])
def test_param(x, context_snapshot):
    assert context_snapshot == f"<a>{x}</a>"
"""

TEST_B = """
import datetime as dt
from memctx import MemoryState, chunks, create_builder, create_tokenizer

T = dt.datetime(2026, 1, 1, tzinfo=dt.UTC)

def test_chunk(context_snapshot):
    assert context_snapshot == chunks.tool_call(
        "read_file", {"path": "a.py"}, call_id="call_1", id="chunk_1", created_at=T
    )

def test_build(context_snapshot):
    state = MemoryState([
        chunks.user("Fix the bug.", id="chunk_1", created_at=T),
        chunks.assistant("Done.", id="chunk_2", created_at=T),
    ])
    result = create_builder().build(state, tokenizer=create_tokenizer("estimate"))
    assert context_snapshot == result
"""

ALL_FILES = [
    "snapshots/tests/test_a/test_one.xml",
    "snapshots/tests/test_a/test_param[p].xml",
    "snapshots/tests/test_a/test_param[q].xml",
    "snapshots/tests/test_a/test_two.xml",
    "snapshots/tests/test_b/test_build.txt",
    "snapshots/tests/test_b/test_chunk.xml",
]


def snapshot_files(root: Path, folder: str = "snapshots") -> dict[str, bytes]:
    base = root / folder
    return {
        path.relative_to(root).as_posix(): path.read_bytes()
        for path in sorted(base.rglob("*"))
        if path.is_file()
    }


PLUGINS = ("-p", "syrupy", "-p", "memctx.snapshot.pytest_plugin")


@pytest.fixture(autouse=True)
def _only_our_plugins(monkeypatch: pytest.MonkeyPatch) -> None:
    """Runs load syrupy and memctx only: unrelated installed plugins slow them down 4x.
    Nor are they pytest-xdist workers when this suite runs under xdist (syrupy would
    leave its summary to a controller that is not there)."""
    monkeypatch.setenv("PYTEST_DISABLE_PLUGIN_AUTOLOAD", "1")
    for key in [k for k in os.environ if k.startswith(_XDIST_PREFIX)]:
        monkeypatch.delenv(key)


_XDIST_PREFIX = "PYTEST_XDIST_"


def run(pytester: pytest.Pytester, *args: str) -> pytest.RunResult:
    return pytester.runpytest_subprocess("-p", "no:cacheprovider", *PLUGINS, *args)


INI = "[pytest]\nfilterwarnings = error\n"


@pytest.fixture(scope="module")
def generated(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The two modules' snapshots, written once by ``pytest --snapshot-update``.

    This run loads the plugin the way users get it: through its entry point.
    """
    root = tmp_path_factory.mktemp("generated")
    (root / "pytest.ini").write_text(INI)
    (root / "tests").mkdir()
    (root / "tests/test_a.py").write_text(TEST_A)
    (root / "tests/test_b.py").write_text(TEST_B)
    env = {
        k: v
        for k, v in os.environ.items()
        if k != "PYTEST_DISABLE_PLUGIN_AUTOLOAD" and not k.startswith(_XDIST_PREFIX)
    }
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "--snapshot-update"],
        cwd=root,
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "6 snapshots generated." in done.stdout
    return root / "snapshots"


@pytest.fixture
def project(pytester: pytest.Pytester, generated: Path) -> pytest.Pytester:
    """A user's project: two test modules whose snapshots are all written."""
    pytester.makeini(INI)
    pytester.makepyfile(**{"tests/test_a": TEST_A, "tests/test_b": TEST_B})
    shutil.copytree(generated, pytester.path / "snapshots")
    assert list(snapshot_files(pytester.path)) == ALL_FILES
    return pytester


@pytest.mark.slow
class TestFiles:
    def test_chunk_file_has_role_comment_and_exact_xml(self, project: pytest.Pytester) -> None:
        text = (project.path / "snapshots/tests/test_b/test_chunk.xml").read_text()
        assert text == (
            "<!-- role: assistant -->\n"
            '<tool_call id="chunk_1" tool="read_file" call_id="call_1"'
            ' status="pending">\n'
            '{"path": "a.py"}\n'
            "</tool_call>\n"
        )

    def test_build_file_has_report_then_messages(self, project: pytest.Pytester) -> None:
        text = (project.path / "snapshots/tests/test_b/test_build.txt").read_text()
        assert text.startswith("=== report ===\n2 messages, ")
        assert "  included  chunk_1  " in text
        assert text.endswith(
            "=== user (chunk_1) ===\n"
            '<user_message id="chunk_1">\nFix the bug.\n</user_message>\n'
            "\n"
            "=== assistant (chunk_2) ===\n"
            '<assistant_response id="chunk_2">\nDone.\n</assistant_response>\n'
        )

    def test_unchanged_run_passes(self, project: pytest.Pytester) -> None:
        run(project).assert_outcomes(passed=6)


@pytest.mark.slow
class TestPartialUpdate:
    """The known trap: a partial ``--snapshot-update`` must not delete other snapshots."""

    @pytest.mark.parametrize(
        "selection",
        [
            ["tests/test_a.py::test_one"],
            ["tests/test_a.py::test_param[p]"],
            ["tests/test_a.py", "-k", "test_one"],
            ["tests/test_a.py", "--deselect", "tests/test_a.py::test_two"],
            ["tests/test_b.py"],
            ["-k", "test_chunk"],
        ],
        ids=["node", "param", "keyword", "deselect", "other-module", "keyword-all"],
    )
    def test_other_snapshots_survive(self, project: pytest.Pytester, selection: list[str]) -> None:
        orphan = project.path / "snapshots/tests/test_a/test_removed.xml"
        orphan.write_text("<a>from a test that no longer exists</a>\n")
        before = snapshot_files(project.path)

        result = run(project, "--snapshot-update", *selection)

        assert result.ret == 0
        result.stdout.no_fnmatch_line("*Deleted*")
        assert snapshot_files(project.path) == before

    def test_last_failed_update_keeps_other_snapshots(self, project: pytest.Pytester) -> None:
        (project.path / "tests/test_a.py").write_text(TEST_A.replace("<a>two</a>", "<a>2</a>"))
        orphan = project.path / "snapshots/tests/test_a/test_removed.xml"
        orphan.write_text("<a/>\n")
        with_cache = ("-p", "cacheprovider", *PLUGINS)
        project.runpytest_subprocess(*with_cache).assert_outcomes(passed=5, failed=1)
        before = snapshot_files(project.path)

        result = project.runpytest_subprocess(*with_cache, "--lf", "--snapshot-update")

        result.assert_outcomes(passed=1)
        after = snapshot_files(project.path)
        assert after.pop("snapshots/tests/test_a/test_two.xml") == b"<a>2</a>\n"
        del before["snapshots/tests/test_a/test_two.xml"]
        assert after == before

    def test_partial_run_does_not_report_other_snapshots_unused(
        self, project: pytest.Pytester
    ) -> None:
        result = run(project, "tests/test_a.py::test_one")
        assert result.ret == 0  # an unused snapshot would fail the run
        result.stdout.no_re_match_line(r".*\d+ snapshots? unused")

    def test_partial_update_rewrites_the_selected_test(self, project: pytest.Pytester) -> None:
        test_a = project.path / "tests/test_a.py"
        test_a.write_text(TEST_A.replace("<a>one</a>", "<a>ONE</a>").replace("two", "TWO"))
        before = snapshot_files(project.path)

        run(project, "--snapshot-update", "tests/test_a.py::test_one").assert_outcomes(passed=1)

        after = snapshot_files(project.path)
        assert after["snapshots/tests/test_a/test_one.xml"] == b"<a>ONE</a>\n"
        del (
            before["snapshots/tests/test_a/test_one.xml"],
            after["snapshots/tests/test_a/test_one.xml"],
        )
        assert after == before  # test_two's outdated snapshot was not touched

    def test_stale_extra_snapshot_of_a_selected_test_is_deleted(
        self, project: pytest.Pytester
    ) -> None:
        stale = project.path / "snapshots/tests/test_a/test_one.1.xml"
        stale.write_text("<a>second assertion, since removed</a>\n")

        run(project, "--snapshot-update", "tests/test_a.py::test_one").assert_outcomes(passed=1)

        assert not stale.exists()
        assert list(snapshot_files(project.path)) == ALL_FILES

    def test_failing_test_keeps_its_snapshot(self, project: pytest.Pytester) -> None:
        test_a = project.path / "tests/test_a.py"
        test_a.write_text(TEST_A.replace("def test_two(context_snapshot):\n", (
            "def test_two(context_snapshot):\n    raise RuntimeError('broken before asserting')\n"
        )))  # fmt: skip

        result = run(project, "--snapshot-update")

        result.assert_outcomes(passed=5, failed=1)
        assert list(snapshot_files(project.path)) == ALL_FILES


@pytest.mark.slow
class TestFullUpdate:
    """A run of whole modules still finds and removes snapshots nobody writes any more."""

    def test_removed_test_is_reported_unused(self, project: pytest.Pytester) -> None:
        (project.path / "snapshots/tests/test_a/test_removed.xml").write_text("<a/>\n")

        result = run(project)

        assert result.ret != 0
        result.stdout.fnmatch_lines(["*1 snapshot unused*"])

    @pytest.mark.parametrize("selection", [[], ["tests/test_a.py"], ["tests"]])
    def test_removed_test_is_deleted(self, project: pytest.Pytester, selection: list[str]) -> None:
        orphan = project.path / "snapshots/tests/test_a/test_removed.xml"
        orphan.write_text("<a/>\n")
        stale = project.path / "snapshots/tests/test_a/test_one.1.xml"
        stale.write_text("<a/>\n")

        result = run(project, "--snapshot-update", *selection)

        assert result.ret == 0
        assert not orphan.exists()
        assert not stale.exists()
        assert list(snapshot_files(project.path)) == ALL_FILES


@pytest.mark.slow
class TestFailures:
    def test_missing_snapshot_fails(self, pytester: pytest.Pytester) -> None:
        pytester.makepyfile(**{"tests/test_a": TEST_A})

        result = run(pytester)

        result.assert_outcomes(failed=4)
        result.stdout.fnmatch_lines(["*Snapshot 'test_one' does not exist!*"])
        assert not (pytester.path / "snapshots").exists()

    def test_outdated_snapshot_fails_with_a_diff(self, project: pytest.Pytester) -> None:
        before = snapshot_files(project.path)
        test_a = project.path / "tests/test_a.py"
        test_a.write_text(TEST_A.replace("<a>one</a>", "<a>changed</a>"))

        result = run(project, "tests/test_a.py")

        result.assert_outcomes(passed=3, failed=1)
        result.stdout.fnmatch_lines(["*- <a>one</a>*", "*+ <a>changed</a>*"])
        assert snapshot_files(project.path) == before

    def test_outdated_build_snapshot_fails(self, project: pytest.Pytester) -> None:
        test_b = project.path / "tests/test_b.py"
        test_b.write_text(TEST_B.replace("Done.", "Done!"))

        result = run(project, "tests/test_b.py")

        result.assert_outcomes(passed=1, failed=1)
        result.stdout.fnmatch_lines(["*- Done.*", "*+ Done!*"])


@pytest.mark.slow
class TestFixture:
    def test_several_comparisons_in_one_test(self, pytester: pytest.Pytester) -> None:
        pytester.makepyfile(**{"tests/test_many": """
            from memctx import ContextMessage

            def test_many(context_snapshot):
                assert context_snapshot == "<a>first</a>"
                assert context_snapshot == "<a>second</a>"
                assert context_snapshot(name="named") == "<a>third</a>"
                assert context_snapshot == [ContextMessage("user", "hi")]
            """})  # fmt: skip

        run(pytester, "--snapshot-update").assert_outcomes(passed=1)

        assert snapshot_files(pytester.path) == {
            "snapshots/tests/test_many/test_many.1.xml": b"<a>second</a>\n",
            "snapshots/tests/test_many/test_many.txt": b"=== user ===\nhi\n"
            b"\\ No newline at end of message\n",
            "snapshots/tests/test_many/test_many.xml": b"<a>first</a>\n",
            "snapshots/tests/test_many/test_many[named].xml": b"<a>third</a>\n",
        }
        run(pytester).assert_outcomes(passed=1)

    def test_extensions_work_with_plain_syrupy(self, pytester: pytest.Pytester) -> None:
        pytester.makepyfile(**{"tests/test_plain": """
            import pytest
            from memctx import chunks
            from memctx.snapshot import MessagesSnapshotExtension, XmlSnapshotExtension

            def test_plain(snapshot):
                chunk = chunks.user("hi", id="chunk_1")
                assert snapshot.use_extension(XmlSnapshotExtension) == chunk
                with pytest.raises(TypeError, match="goes in a .xml snapshot"):
                    snapshot.use_extension(MessagesSnapshotExtension).extension.serialize(chunk)
            """})  # fmt: skip

        run(pytester, "--snapshot-update").assert_outcomes(passed=1)

        assert snapshot_files(pytester.path) == {
            "snapshots/tests/test_plain/test_plain.xml": (
                b'<!-- role: user -->\n<user_message id="chunk_1">\nhi\n</user_message>\n'
            )
        }

    def test_builder_fixture_can_be_overridden(self, pytester: pytest.Pytester) -> None:
        pytester.makeconftest("""
            import pytest
            from memctx import create_builder

            class NoteRenderer:
                def can_render(self, chunk):
                    return chunk.subtype == "note"
                def get_role(self, chunk):
                    return "assistant"
                def render(self, chunk):
                    return f"<note>{chunk.text}</note>"

            @pytest.fixture
            def context_snapshot_builder():
                return create_builder(renderers=[NoteRenderer()])
            """)  # fmt: skip
        pytester.makepyfile(**{"tests/test_note": """
            from memctx import chunks, create_builder

            def test_note(context_snapshot):
                chunk = chunks.custom("note", "remember", id="chunk_1")
                assert context_snapshot == chunk
                assert context_snapshot(name="default", builder=create_builder()) == chunk
            """})  # fmt: skip

        run(pytester, "--snapshot-update").assert_outcomes(passed=1)

        files = snapshot_files(pytester.path)
        assert files["snapshots/tests/test_note/test_note.xml"] == (
            b"<!-- role: assistant -->\n<note>remember</note>\n"
        )
        assert files["snapshots/tests/test_note/test_note[default].xml"].startswith(
            b'<!-- role: user -->\n<memory_chunk id="chunk_1" type="CUSTOM"'
        )

    def test_snapshot_dir_ini_option(self, pytester: pytest.Pytester) -> None:
        pytester.makeini("[pytest]\nmemctx_snapshot_dir = review/prompts\n")
        pytester.makepyfile(**{"tests/test_a": TEST_A})

        run(pytester, "--snapshot-update").assert_outcomes(passed=4)

        assert not (pytester.path / "snapshots").exists()
        assert list(snapshot_files(pytester.path, "review/prompts")) == [
            "review/prompts/tests/test_a/test_one.xml",
            "review/prompts/tests/test_a/test_param[p].xml",
            "review/prompts/tests/test_a/test_param[q].xml",
            "review/prompts/tests/test_a/test_two.xml",
        ]
        run(pytester).assert_outcomes(passed=4)

    def test_carriage_returns_round_trip(self, pytester: pytest.Pytester) -> None:
        pytester.makepyfile(**{"tests/test_cr": """
            from memctx import ContextMessage

            def test_cr(context_snapshot):
                assert context_snapshot == [ContextMessage("system", "a\\r\\nb\\rc\\n")]
            """})  # fmt: skip

        run(pytester, "--snapshot-update").assert_outcomes(passed=1)

        stored = snapshot_files(pytester.path)["snapshots/tests/test_cr/test_cr.txt"]
        assert stored == b"=== system ===\na\r\nb\rc\n"
        run(pytester).assert_outcomes(passed=1)

    def test_wrong_type_is_a_clear_error(self, pytester: pytest.Pytester) -> None:
        pytester.makepyfile(**{"tests/test_wrong": """
            def test_wrong(context_snapshot):
                assert context_snapshot == 42
            """})  # fmt: skip

        result = run(pytester, "--snapshot-update")

        result.assert_outcomes(failed=1)
        result.stdout.fnmatch_lines(["*TypeError: cannot snapshot int: expected a Chunk*"])

    def test_plugin_does_not_break_pytest_without_syrupy(self, pytester: pytest.Pytester) -> None:
        pytester.makepyfile(test_plain="def test_plain():\n    assert True\n")
        result = pytester.runpytest_subprocess("-p", "memctx.snapshot.pytest_plugin")
        result.assert_outcomes(passed=1)


class TestFormats:
    """The readable forms, without a pytest run."""

    def test_message_without_final_newline_is_marked(self) -> None:
        text = format_messages([ContextMessage("user", "a", ("chunk_1",))])
        assert text == "=== user (chunk_1) ===\na\n\\ No newline at end of message\n"

    def test_messages_are_separated_by_a_blank_line(self) -> None:
        messages = [ContextMessage("user", "a\n", ("c1",)), ContextMessage("assistant", "b\n")]
        assert format_messages(messages) == "=== user (c1) ===\na\n\n=== assistant ===\nb\n"

    def test_no_messages(self) -> None:
        assert format_messages([]) == "(no messages)\n"

    @pytest.mark.parametrize("value", [42, None, [1, 2], b"<a/>", {"role": "user"}])
    def test_unsupported_values_raise_type_error(self, value: object) -> None:
        with pytest.raises(TypeError, match="cannot snapshot"):
            to_snapshot(value)

    def test_one_message_is_a_list_of_one(self) -> None:
        message = ContextMessage("user", "hi\n")
        assert to_snapshot(message) == to_snapshot([message]) == ("txt", "=== user ===\nhi\n")

    def test_xml_text_gets_a_final_newline(self) -> None:
        assert to_snapshot("<a/>") == ("xml", "<a/>\n")
        assert to_snapshot("<a/>\n") == ("xml", "<a/>\n")
