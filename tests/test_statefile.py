"""The versioned JSON state file: exact round trips, atomic saves, precise errors."""

from __future__ import annotations

import copy
import datetime as dt
import errno
import json
import os
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, assume, given, settings

import memctx
from memctx import (
    Chunk,
    MemctxError,
    MemoryState,
    StateFileAccessError,
    StateFileError,
    UnsupportedVersionError,
    chunks,
    load_state,
    save_state,
)
from memctx.statefile import (
    FORMAT_VERSION,
    chunk_from_dict,
    chunk_to_dict,
    dumps_state,
    loads_state,
    state_to_dict,
)
from strategies import any_chunks, examples, states

WHEN = dt.datetime(2026, 11, 22, 3, 25, 56, 123456, tzinfo=dt.UTC)


SURROGATE_PAIR = re.compile("[\ud800-\udbff][\udc00-\udfff]")
"""Two code units that JSON reads back as one astral character: no JSON file can keep them apart."""


def assume_no_surrogate_pair(state: MemoryState) -> None:
    assume(SURROGATE_PAIR.search(json.dumps(state_to_dict(state), ensure_ascii=False)) is None)


def assert_identical(loaded: MemoryState, original: MemoryState) -> None:
    """Equal, and every field of every chunk of the same type and value (1 vs 1.0 vs True)."""
    assert loaded == original
    assert json.dumps(state_to_dict(loaded)) == json.dumps(state_to_dict(original))
    for after, before in zip(loaded, original, strict=True):
        assert after.created_at.utcoffset() == before.created_at.utcoffset()
        assert after.text == before.text


class TestRoundTrip:
    @settings(
        max_examples=examples(60),
        deadline=None,
        suppress_health_check=[HealthCheck.function_scoped_fixture],
    )
    @given(state=states(any_chunks))
    def test_every_state_survives_save_and_load_exactly(
        self, tmp_path: Path, state: MemoryState
    ) -> None:
        assume_no_surrogate_pair(state)
        path = tmp_path / "state.json"

        save_state(state, path)

        assert_identical(load_state(path), state)

    @settings(max_examples=examples(60), deadline=None)
    @given(state=states(any_chunks))
    def test_every_state_survives_dumps_and_loads_exactly(self, state: MemoryState) -> None:
        assume_no_surrogate_pair(state)
        assert_identical(loads_state(dumps_state(state)), state)

    @settings(max_examples=examples(60), deadline=None)
    @given(chunk=any_chunks)
    def test_every_chunk_survives_to_dict_and_from_dict(self, chunk: Chunk) -> None:
        assume_no_surrogate_pair(MemoryState([chunk]))

        assert chunk_from_dict(json.loads(json.dumps(chunk_to_dict(chunk)))) == chunk

    def test_a_chunk_with_a_lone_surrogate_can_be_saved_and_loaded(self, tmp_path: Path) -> None:
        """Chunks accept any str; the file must hold it (as a \\ud800 escape), not crash."""
        state = MemoryState([chunks.user("half an emoji: \ud83d", id="c1")])
        path = tmp_path / "state.json"

        save_state(state, path)

        assert_identical(load_state(path), state)

    def test_writes_the_documented_document(self, tmp_path: Path) -> None:
        state = MemoryState(
            [
                chunks.tool_call(
                    "read_file", {"path": "/src/main.ts"}, "call_123", id="chunk_1", created_at=WHEN
                )
            ],
            thread_id="t1",
        )
        path = tmp_path / "state.json"

        save_state(state, path)

        assert json.loads(path.read_text(encoding="utf-8")) == {
            "version": 1,
            "thread_id": "t1",
            "chunks": [
                {
                    "id": "chunk_1",
                    "type": "WORKFLOW",
                    "role": None,
                    "action": "tool_call",
                    "subtype": None,
                    "content": {"path": "/src/main.ts"},
                    "metadata": {"tool": "read_file", "call_id": "call_123", "status": "pending"},
                    "priority": 0,
                    "created_at": "2026-11-22T03:25:56.123456+00:00",
                }
            ],
        }

    def test_keeps_non_ascii_readable(self) -> None:
        text = dumps_state(MemoryState([chunks.task_abandoned("无法完成", id="c1")]))

        assert "无法完成" in text

    def test_only_id_type_and_content_are_required(self) -> None:
        state = loads_state(
            '{"version": 1, "chunks": [{"id": "c1", "type": "AGENT", "content": "hi"}]}'
        )

        chunk = state.get("c1")
        assert (chunk.text, chunk.role, chunk.priority, state.thread_id) == ("hi", None, 0, None)
        assert chunk.created_at.tzinfo is not None

    def test_loads_the_bundled_example(self) -> None:
        example = Path(__file__).parent.parent / "examples" / "coding_agent.json"

        state = load_state(example)

        assert len(state) > 0
        assert loads_state(dumps_state(state)) == state

    def test_load_and_save_are_exported(self) -> None:
        assert (memctx.load_state, memctx.save_state) == (load_state, save_state)


class TestAtomicSave:
    def test_replaces_an_existing_file(self, tmp_path: Path) -> None:
        path = tmp_path / "state.json"
        save_state(MemoryState([chunks.user("old", id="c1")]), path)

        save_state(MemoryState([chunks.user("new", id="c1")]), path)

        assert load_state(path).get("c1").text == "new"
        assert sorted(p.name for p in tmp_path.iterdir()) == ["state.json"]

    def test_a_failed_write_keeps_the_old_file_and_leaves_no_temporary(
        self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        path = tmp_path / "state.json"
        save_state(MemoryState([chunks.user("old", id="c1")]), path)
        before = path.read_bytes()

        def disk_full(fd: int) -> None:
            raise OSError(28, "No space left on device")

        monkeypatch.setattr(os, "fsync", disk_full)
        with pytest.raises(OSError, match="No space left"):
            save_state(MemoryState([chunks.user("new", id="c1")]), path)

        assert path.read_bytes() == before
        assert sorted(p.name for p in tmp_path.iterdir()) == ["state.json"]

    def test_a_failed_first_write_creates_no_file(
        self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        def interrupted(src: str, dst: str) -> None:
            raise KeyboardInterrupt

        monkeypatch.setattr(os, "replace", interrupted)
        with pytest.raises(KeyboardInterrupt):
            save_state(MemoryState([chunks.user("new")]), tmp_path / "state.json")

        assert list(tmp_path.iterdir()) == []

    def test_accepts_a_str_path_in_the_current_directory(
        self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        monkeypatch.chdir(tmp_path)

        save_state(MemoryState([chunks.user("u", id="c1")]), "state.json")

        assert load_state("state.json").ids == ("c1",)


def document(*chunk_docs: object, **top: Any) -> dict[str, Any]:
    """A valid state document with ``chunk_docs`` (or two good chunks) and ``top`` fields."""
    good = [
        chunk_to_dict(chunks.user("u", id="c0", created_at=WHEN)),
        chunk_to_dict(chunks.tool_result("t", {"ok": True}, "k1", id="c1", created_at=WHEN)),
    ]
    return {"version": FORMAT_VERSION, "thread_id": "t1", "chunks": list(chunk_docs) or good, **top}


def with_chunk(index: int, change: Callable[[dict[str, Any]], None]) -> dict[str, Any]:
    """The default document with chunk ``index`` changed in place by ``change``."""
    doc = copy.deepcopy(document())
    change(doc["chunks"][index])
    return doc


def set_field(name: str, value: Any) -> Callable[[dict[str, Any]], None]:
    def change(chunk: dict[str, Any]) -> None:
        chunk[name] = value

    return change


def set_metadata(name: str, value: Any) -> Callable[[dict[str, Any]], None]:
    def change(chunk: dict[str, Any]) -> None:
        chunk["metadata"][name] = value

    return change


def drop(name: str) -> Callable[[dict[str, Any]], None]:
    def change(chunk: dict[str, Any]) -> None:
        del chunk[name]

    return change


BAD_CHUNK_FIELDS: list[tuple[str, int, Callable[[dict[str, Any]], None], str]] = [
    # (case, index of the bad chunk, how it is made bad, the field the error must name)
    ("unknown-type", 1, set_field("type", "BOGUS"), "type"),
    ("type-number", 1, set_field("type", 3), "type"),
    ("missing-id", 0, drop("id"), "id"),
    ("missing-type", 0, drop("type"), "type"),
    ("missing-content", 0, drop("content"), "content"),
    ("empty-id", 1, set_field("id", ""), "id"),
    ("id-number", 1, set_field("id", 5), "id"),
    ("content-nan", 1, set_field("content", {"s": [1, {"x": float("nan")}]}), "content.s[1].x"),
    ("priority-string", 0, set_field("priority", "high"), "priority"),
    ("priority-float", 0, set_field("priority", 1.5), "priority"),
    ("unknown-role", 0, set_field("role", "bot"), "role"),
    ("role-array", 0, set_field("role", ["user"]), "role"),
    ("action-number", 0, set_field("action", 5), "action"),
    ("empty-subtype", 0, set_field("subtype", ""), "subtype"),
    ("metadata-string", 1, set_field("metadata", "x"), "metadata"),
    ("metadata-empty-array", 1, set_field("metadata", []), "metadata"),
    ("metadata-zero", 1, set_field("metadata", 0), "metadata"),
    ("metadata-tool-number", 1, set_metadata("tool", 5), "metadata.tool"),
    ("metadata-success-string", 1, set_metadata("success", "yes"), "metadata.success"),
    ("metadata-custom-array", 1, set_metadata("custom", [1]), "metadata.custom"),
    ("metadata-unknown-field", 1, set_metadata("colour", "red"), "metadata"),
    ("created-at-number", 0, set_field("created_at", 1700000000), "created_at"),
    ("created-at-garbage", 0, set_field("created_at", "yesterday"), "created_at"),
    ("created-at-naive", 0, set_field("created_at", "2024-01-01T00:00:00"), "created_at"),
    ("duplicate-id", 1, set_field("id", "c0"), "id"),
]


class TestErrors:
    @pytest.mark.parametrize(
        ("index", "change", "field"),
        [
            pytest.param(index, change, field, id=case)
            for case, index, change, field in BAD_CHUNK_FIELDS
        ],
    )
    def test_a_bad_chunk_field_names_its_index_and_field(
        self, index: int, change: Callable[[dict[str, Any]], None], field: str
    ) -> None:
        with pytest.raises(StateFileError) as info:
            loads_state(json.dumps(with_chunk(index, change)))

        assert (info.value.index, info.value.field) == (index, field)
        assert str(info.value).startswith(f"chunks[{index}].{field}: ")

    @pytest.mark.parametrize(
        ("doc", "index"),
        [
            pytest.param(document("not an object", {}), 0, id="chunk-string"),
            pytest.param(with_chunk(1, set_field("colour", "red")), 1, id="unknown-field"),
        ],
    )
    def test_a_bad_chunk_names_its_index(self, doc: dict[str, Any], index: int) -> None:
        with pytest.raises(StateFileError, match=rf"^chunks\[{index}\]: ") as info:
            loads_state(json.dumps(doc))

        assert info.value.index == index

    @pytest.mark.parametrize("version", [0, 2, "1", True, None, [1]], ids=repr)
    def test_a_wrong_version_is_unsupported(self, version: Any) -> None:
        with pytest.raises(UnsupportedVersionError, match=r"^version: .*version") as info:
            loads_state(json.dumps(document(version=version)))

        assert info.value.field == "version"
        assert repr(version) in str(info.value)

    def test_a_missing_version_is_an_error(self) -> None:
        doc = document()
        del doc["version"]

        with pytest.raises(StateFileError, match=r"^version: missing"):
            loads_state(json.dumps(doc))

    @pytest.mark.parametrize(
        ("doc", "field"),
        [
            pytest.param(document(thread_id=5), "thread_id", id="thread-id-number"),
            pytest.param(document(thread_id=""), "thread_id", id="thread-id-empty"),
            pytest.param(document(chunks={"c0": {}}), "chunks", id="chunks-object"),
            pytest.param({"version": 1}, "chunks", id="chunks-missing"),
        ],
    )
    def test_a_bad_top_level_field_is_named(self, doc: dict[str, Any], field: str) -> None:
        with pytest.raises(StateFileError, match=rf"^{field}: ") as info:
            loads_state(json.dumps(doc))

        assert (info.value.index, info.value.field) == (None, field)

    @pytest.mark.parametrize("text", ["[1, 2]", '"state"', "null", "42"])
    def test_a_document_that_is_not_an_object_is_an_error(self, text: str) -> None:
        with pytest.raises(StateFileError, match="must be an object"):
            loads_state(text)

    def test_malformed_json_gives_line_and_column(self) -> None:
        with pytest.raises(StateFileError, match=r"^not valid JSON: .* line 2 column \d+"):
            loads_state('{"version": 1,\n "chunks": [}')

    def test_invalid_utf8_is_an_error(self) -> None:
        with pytest.raises(StateFileError, match="UTF-8"):
            loads_state(b'{"version": 1, "chunks": ["\xff"]}')

    def test_a_missing_file_is_an_error_naming_it(self, tmp_path: Path) -> None:
        missing = tmp_path / "nope.json"

        with pytest.raises(StateFileError, match=r"nope\.json"):
            load_state(missing)

    def test_errors_are_value_errors_and_memctx_errors(self) -> None:
        with pytest.raises(StateFileError) as info:
            loads_state("{")

        assert isinstance(info.value, ValueError)
        assert isinstance(info.value, MemctxError)


class TestFormatEdges:
    def test_version_must_be_the_integer_one(self) -> None:
        with pytest.raises(UnsupportedVersionError):
            loads_state('{"version": 1.0, "chunks": []}')

    def test_null_priority_means_the_default(self) -> None:
        state = loads_state(
            '{"version": 1, "chunks": [{"id": "a", "type": "AGENT", "role": "user", '
            '"content": "x", "priority": null}]}'
        )
        assert state[0].priority == 0

    def test_saved_file_gets_the_mode_of_the_file_it_replaces(self, tmp_path: Path) -> None:
        path = tmp_path / "state.json"
        path.write_text("{}", encoding="utf-8")
        path.chmod(0o640)
        save_state(MemoryState(), path)
        assert path.stat().st_mode & 0o777 == 0o640

    def test_new_file_gets_the_umask_mode_not_0600(self, tmp_path: Path) -> None:
        path = tmp_path / "state.json"
        old = os.umask(0o022)
        try:
            save_state(MemoryState(), path)
        finally:
            os.umask(old)
        assert path.stat().st_mode & 0o777 == 0o644


@pytest.mark.parametrize(
    ("where", "code"), [("missing/state.json", errno.ENOENT), (".", errno.EISDIR)]
)
def test_a_failed_save_names_the_path_given_and_leaves_no_file(
    tmp_path: Path, where: str, code: int
) -> None:
    path = tmp_path / where

    with pytest.raises(StateFileAccessError, match="cannot write") as info:
        save_state(MemoryState([chunks.user("hi")]), path)

    assert isinstance(info.value, OSError)
    assert (info.value.errno, info.value.filename) == (code, str(path))
    assert sorted(p.name for p in tmp_path.iterdir()) == []
