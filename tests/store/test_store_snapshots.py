"""Snapshots: a thread exported as versioned JSON and imported as a new thread, or refused."""

from __future__ import annotations

import copy
import json
from collections.abc import Callable
from typing import Any

import pytest

from memctx import (
    StateFileError,
    ThreadExistsError,
    UnsupportedVersionError,
    chunks,
)
from memctx._exceptions import StoreArgumentError
from memctx.statefile import dumps_state, state_from_dict
from memctx.store import SNAPSHOT_IMPORTED, MemoryStore

Rows = Callable[[], dict[str, list[tuple[object, ...]]]]


@pytest.fixture
def edited(store: MemoryStore, thread: str) -> str:
    """``t1`` after a truncation, an insert, a replacement and an append."""
    store.truncate(thread, keep_last=3)
    store.insert(thread, 0, chunks.system("new rules", id="s2"))
    store.replace(thread, "u1", chunks.user("What is 2 + 2?", id="u1b"))
    store.append(thread, chunks.assistant("6", id="a2"))
    return thread


def test_an_imported_snapshot_is_the_same_thread_under_a_new_id(
    store: MemoryStore, edited: str
) -> None:
    snapshot = store.export_snapshot(edited)

    assert store.import_snapshot(snapshot, thread_id="copy") == "copy"

    assert store.get_current_state("copy") == store.get_current_state(edited).with_thread_id("copy")
    strip = lambda items: [(i.seq, i.chunk, i.origin, i.batch, i.visible) for i in items]  # noqa: E731
    assert strip(store.history("copy")) == strip(store.history(edited))
    batches = lambda t: [(b.number, b.operation, b.params, b.current) for b in store.batches(t)]  # noqa: E731
    assert batches("copy") == batches(edited)


def test_rolling_back_the_copy_gives_what_rolling_back_the_original_gives(
    store: MemoryStore, edited: str
) -> None:
    store.import_snapshot(store.export_snapshot(edited), thread_id="copy")

    for number in (2, 0, 1):
        store.rollback(edited, number)
        store.rollback("copy", number)
        assert store.get_current_state("copy").ids == store.get_current_state(edited).ids


def test_a_snapshot_is_a_state_file_of_the_visible_chunks(store: MemoryStore, edited: str) -> None:
    snapshot = json.loads(json.dumps(store.export_snapshot(edited)))

    assert state_from_dict(snapshot) == store.get_current_state(edited)


def test_a_plain_state_file_imports_as_a_thread_of_its_chunks(store: MemoryStore) -> None:
    from memctx import MemoryState

    state = MemoryState([chunks.user("hi", id="u"), chunks.assistant("yo", id="a")], thread_id="s")

    assert store.import_snapshot(dumps_state(state)) == "s"

    assert store.get_current_state("s") == state
    assert [(b.number, b.operation) for b in store.batches("s")] == [(0, "import")]


def test_json_text_and_bytes_are_accepted(store: MemoryStore, edited: str) -> None:
    text = json.dumps(store.export_snapshot(edited))

    store.import_snapshot(text, thread_id="from-text")
    store.import_snapshot(text.encode(), thread_id="from-bytes")

    assert store.get_current_state("from-text").ids == store.get_current_state(edited).ids
    assert store.get_current_state("from-bytes").ids == store.get_current_state(edited).ids


def test_the_import_is_recorded_as_an_event(store: MemoryStore, edited: str) -> None:
    store.import_snapshot(store.export_snapshot(edited), thread_id="copy")

    [event] = store.events("copy", SNAPSHOT_IMPORTED)
    assert event.payload == {"source_thread_id": "t1", "chunks": 7, "batches": 4, "batch": 3,
                             "with_history": True}  # fmt: skip


def test_importing_over_an_existing_thread_is_refused(
    db_rows: Rows, store: MemoryStore, edited: str
) -> None:
    snapshot = store.export_snapshot(edited)
    before = db_rows()

    with pytest.raises(ThreadExistsError, match="'t1' already exists"):
        store.import_snapshot(snapshot)
    assert db_rows() == before


def test_a_snapshot_without_a_thread_id_needs_one(db_rows: Rows, store: MemoryStore) -> None:
    from memctx import MemoryState

    before = db_rows()

    with pytest.raises(StoreArgumentError, match="names no thread; pass thread_id"):
        store.import_snapshot(dumps_state(MemoryState([chunks.user("x")])))
    assert db_rows() == before


def _set(path: str, value: Any) -> Callable[[dict[str, Any]], None]:
    def mutate(doc: dict[str, Any]) -> None:
        *parents, last = path.split("/")
        target: Any = doc
        for part in parents:
            target = target[int(part)] if isinstance(target, list) else target[part]
        if isinstance(target, list):
            target[int(last)] = value
        else:
            target[last] = value

    return mutate


def _delete(path: str) -> Callable[[dict[str, Any]], None]:
    def mutate(doc: dict[str, Any]) -> None:
        *parents, last = path.split("/")
        target: Any = doc
        for part in parents:
            target = target[int(part)] if isinstance(target, list) else target[part]
        del target[int(last) if isinstance(target, list) else last]

    return mutate


CORRUPTIONS: list[tuple[str, Callable[[dict[str, Any]], None], type[Exception], str]] = [
    ("state-version", _set("version", 2), UnsupportedVersionError, "version 2"),
    ("store-version", _set("store/version", 99), UnsupportedVersionError, "store.version"),
    ("chunk-without-id", _delete("chunks/0/id"), StateFileError, r"chunks\[0\].id: missing"),
    ("history-gap", _set("store/history/2/seq", 9), StateFileError, "sequences have no gaps"),
    ("history-duplicate-id", _set("store/history/1/chunk/id", "s"), StateFileError,
     "duplicate chunk id 's'"),
    ("history-bad-origin", _set("store/history/0/origin", "magic"), StateFileError,
     r"store.history\[0\].origin"),
    ("history-bad-chunk", _set("store/history/0/chunk/type", "NOPE"), StateFileError,
     r"store.history\[0\].chunk.*unknown chunk type"),
    ("view-names-a-later-chunk", _set("store/batches/1/view", [1, 7]), StateFileError,
     r"batches\[1\].view\[1\]"),
    ("view-names-a-chunk-twice", _set("store/batches/1/view", [2, 2]), StateFileError,
     "names a chunk twice"),
    ("current-batch-missing", _set("store/batch", 9), StateFileError, "store.batch"),
    ("no-batches", _set("store/batches", []), StateFileError, "non-empty array"),
    ("params-not-object", _set("store/batches/1/params", [1]), StateFileError, "params"),
    ("unknown-store-field", _set("store/extra", 1), StateFileError, r"unknown field\(s\)"),
    ("edited-visible-chunk", _set("chunks/1/content", "tampered"), StateFileError,
     "do not match"),
    ("hidden-chunk-made-visible", _set("chunks/0/id", "u1"), StateFileError, "do not match"),
]  # fmt: skip


@pytest.mark.parametrize(
    ("mutate", "error", "message"),
    [pytest.param(m, e, msg, id=name) for name, m, e, msg in CORRUPTIONS],
)
def test_a_corrupt_snapshot_is_refused_before_anything_is_written(
    db_rows: Rows,
    store: MemoryStore,
    edited: str,
    mutate: Callable[[dict[str, Any]], None],
    error: type[Exception],
    message: str,
) -> None:
    snapshot = copy.deepcopy(store.export_snapshot(edited))
    mutate(snapshot)
    before = db_rows()

    with pytest.raises(error, match=message):
        store.import_snapshot(snapshot, thread_id="copy")
    assert db_rows() == before


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ('{"version": 1, "chunks": [', "not valid JSON"),
        (b"\xff\xfe", "not valid"),
        ("[]", "must be an object"),
        ('{"chunks": []}', "version: missing"),
    ],
)
def test_text_that_is_not_a_snapshot_is_refused(
    db_rows: Rows, store: MemoryStore, text: str | bytes, message: str
) -> None:
    before = db_rows()

    with pytest.raises(StateFileError, match=message):
        store.import_snapshot(text, thread_id="x")
    assert db_rows() == before


@pytest.mark.postgres
def test_a_snapshot_moves_from_sqlite_to_postgresql(tmp_path: Any, postgres_server: Any) -> None:
    with MemoryStore.open(tmp_path / "a.db") as lite:
        lite.create_thread("t1")
        lite.append("t1", chunks.system("rules"), chunks.user("hi"), chunks.assistant("yo"))
        lite.truncate("t1", keep_last=2)
        snapshot = json.dumps(lite.export_snapshot("t1"))
        state = lite.get_current_state("t1")

    with MemoryStore.open(postgres_server.new_database()) as pg:
        pg.import_snapshot(snapshot)

        assert pg.get_current_state("t1") == state
        pg.rollback("t1", 0)
        assert len(pg.get_current_state("t1")) == 3
