"""Every kind of bad input file, fed to every command that reads one.

Each must end in one ``memctx: error: ...`` line on stderr and a non-zero exit,
never a traceback, and write nothing: no output on stdout, no output file, no
change to the database (on SQLite and on PostgreSQL).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any, Final

import pytest
from click.testing import CliRunner, Result

from memctx.cli import main
from memctx.store import MemoryStore

Rows = Callable[[], dict[str, list[tuple[object, ...]]]]


@pytest.fixture
def api() -> str:
    """The CLI uses MemoryStore; its tests set up their data with it too (as in test_store_cli)."""
    return "sync"


def _deep_text(depth: int) -> str:
    return "[" * depth + "1" + "]" * depth


def _state(**chunk: Any) -> bytes:
    fields = {"id": "c1", "type": "AGENT", "role": "user", "content": "hi", **chunk}
    return json.dumps({"version": 1, "thread_id": "t9", "chunks": [fields]}).encode()


def _with(document: bytes, placeholder: str, text: str) -> bytes:
    return document.replace(json.dumps(placeholder).encode(), text.encode())


def _transcript(content: Any = "hi", role: str = "user") -> bytes:
    return json.dumps({"messages": [{"role": role, "content": content}]}).encode()


def _snapshot_with_origin(origin: Any) -> bytes:
    chunk = {"id": "c1", "type": "AGENT", "role": "user", "content": "hi"}
    return json.dumps(
        {
            "version": 1,
            "thread_id": "t9",
            "chunks": [chunk],
            "store": {
                "version": 1,
                "batch": 0,
                "history": [{"seq": 1, "origin": origin, "batch": 0, "chunk": chunk}],
                "batches": [
                    {"number": 0, "operation": "create", "params": {}, "view": None,
                     "base_seq": 0, "created_at": "2026-01-01T00:00:00+00:00"}
                ],
            },
        }
    ).encode()  # fmt: skip


MISSING: Final = object()
DIRECTORY: Final = object()

BAD_FILES: Final[dict[str, dict[str, Any]]] = {
    # class: {"state": what state-reading commands get, "transcript": what import-openai gets}
    "missing": {"state": MISSING, "transcript": MISSING},
    "directory": {"state": DIRECTORY, "transcript": DIRECTORY},
    "empty": {"state": b"", "transcript": b""},
    "not-utf8": {"state": b'{"version": 1, "chunks": ["\xff\xfe"]}', "transcript": b"[\xff]"},
    "not-json": {"state": b'{"version": 1,', "transcript": b"[{"},
    "encoded-surrogate": {
        "state": _state(content="@").replace(b'"@"', b'"\xed\xa0\x80"'),
        "transcript": _transcript("@").replace(b'"@"', b'"\xed\xa0\x80"'),
    },
    "utf-32": {
        "state": _state().decode().encode("utf-32"),
        "transcript": _transcript().decode().encode("utf-32"),
    },
    "utf-16-without-bom": {
        "state": _state().decode().encode("utf-16-le"),
        "transcript": _transcript().decode().encode("utf-16-le"),
    },
    "wrong-shape": {"state": b"42", "transcript": b"42"},
    "wrong-version": {"state": b'{"version": 99, "chunks": []}'},
    "nested-too-deep-to-parse": {
        "state": _deep_text(100_000).encode(),
        "transcript": _deep_text(100_000).encode(),
    },
    "content-nested-deeper-than-the-limit": {
        "state": _with(_state(content="@"), "@", _deep_text(150)),
        "transcript": _with(_transcript([{"type": "x", "v": "@"}]), "@", _deep_text(150)),
    },
    "int-of-5000-digits": {
        "state": _with(_state(content="@"), "@", "9" * 5000),
        "transcript": _with(_transcript("@"), "@", "9" * 5000),
    },
    "priority-of-2**63": {"state": _state(priority=2**63)},
    "priority-of-2**31": {"state": _state(priority=2**31)},
    "id-of-a-megabyte": {"state": _state(id="i" * 1_000_000)},
    "role-of-a-megabyte": {"transcript": _transcript(role="r" * 1_000_000)},
    "id-with-nul": {"store": _state(id="a\x00b")},
    "snapshot-origin-a-list": {"snapshot": _snapshot_with_origin(["append"])},
    "snapshot-origin-an-object": {"snapshot": _snapshot_with_origin({"a": 1})},
}
"""Each class of bad file, as read by each kind of command.

``state`` files are refused by every command that reads a state; ``store`` ones only
by the commands that write to the store (the others render them, replacing the NUL);
``snapshot`` ones only by ``thread import`` (the others read the visible chunks only).
"""

STATE_COMMANDS: Final = ("render", "build")
STORE_COMMANDS: Final = (
    "thread-append",
    "thread-append-stdin",
    "thread-import",
    "thread-import-stdin",
)


def _cases(commands: tuple[str, ...], kinds: tuple[str, ...]) -> list[Any]:
    cases = []
    for name, variants in BAD_FILES.items():
        for kind in kinds:
            if kind not in variants:
                continue
            for command in commands:
                if command.endswith("-stdin") and variants[kind] in (MISSING, DIRECTORY):
                    continue
                if kind == "snapshot" and not command.startswith("thread-import"):
                    continue
                cases.append(pytest.param(command, variants[kind], id=f"{command}-{name}"))
    return cases


def _path(tmp_path: Path, content: object) -> Path:
    path = tmp_path / "input.json"
    if content is DIRECTORY:
        path.mkdir()
    elif content is not MISSING:
        assert isinstance(content, bytes)
        path.write_bytes(content)
    return path


def assert_refused(result: Result) -> None:
    """One error line on stderr, a non-zero exit, nothing on stdout, no traceback.

    A directory named as a file is a usage error (exit 2) that click reports in its own
    format: the usage, a hint, and one ``Error:`` line.
    """
    assert result.exit_code != 0, result.output
    assert isinstance(result.exception, SystemExit), repr(result.exception)
    assert "Traceback" not in result.output
    lines = result.stderr.splitlines()
    if result.exit_code == 2 and lines and lines[0].startswith("Usage: "):
        assert lines[-1].startswith("Error: "), lines
        assert lines[-1].endswith("is a directory."), lines
        assert result.stdout == ""
        return
    assert len(lines) == 1, result.stderr[:2000]
    assert lines[0].startswith("memctx: error: "), lines[0][:500]
    assert len(lines[0]) < 500, lines[0][:500]
    assert result.stdout == ""


@pytest.mark.parametrize(("command", "content"), _cases(STATE_COMMANDS, ("state",)))
def test_render_and_build_refuse_every_bad_state_file(
    tmp_path: Path, command: str, content: object
) -> None:
    path = _path(tmp_path, content)

    result = CliRunner().invoke(main, [command, str(path)])

    assert_refused(result)


@pytest.mark.parametrize(
    ("command", "content"), _cases(("import-openai", "import-anthropic"), ("transcript",))
)
def test_import_openai_refuses_every_bad_transcript_and_writes_nothing(
    tmp_path: Path, command: str, content: object
) -> None:
    path, output = _path(tmp_path, content), tmp_path / "state.json"

    result = CliRunner().invoke(main, [command, str(path), "-o", str(output)])

    assert_refused(result)
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(
        p.name for p in [path] if content is not MISSING
    )


@pytest.mark.parametrize(
    ("command", "content"), _cases(STORE_COMMANDS, ("state", "store", "snapshot"))
)
def test_thread_commands_refuse_every_bad_file_and_change_nothing(
    tmp_path: Path,
    store_url: str,
    store: MemoryStore,
    thread: str,
    db_rows: Rows,
    command: str,
    content: object,
) -> None:
    before = db_rows()
    stdin = command.endswith("-stdin")
    source = "-" if stdin else str(_path(tmp_path, content))
    args = {
        "thread-append": ["append", thread, source],
        "thread-import": ["import", source, "--thread-id", "copy"],
    }[command.removesuffix("-stdin")]

    result = CliRunner().invoke(
        main, ["thread", "--db", store_url, *args], input=content if stdin else None
    )

    assert_refused(result)
    assert db_rows() == before
