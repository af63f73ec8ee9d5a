"""Thread metadata, and appends that read and update it under the thread's write lock."""

from __future__ import annotations

import json
import multiprocessing
from collections.abc import Callable
from typing import Any

import pytest
from store_apis import run_writers

from memctx import Chunk, ChunkConflictError, ThreadNotFoundError, chunks
from memctx._exceptions import StoreArgumentError
from memctx.store import MemoryStore

Rows = Callable[[], dict[str, list[tuple[object, ...]]]]
VALUES: dict[str, Any] = {
    "mode": "workflow",
    "mode_state": {"current_node": "reviewer", "round": 2, "done": [1, 2.0, None, True]},
    "ratio": 1.0,
    "count": 1,
    "text": "é中 \U0001f600",
}


class TestThreadMetadata:
    def test_a_new_thread_has_empty_metadata(self, store: MemoryStore, thread: str) -> None:
        assert store.thread_metadata(thread) == {}
        assert store.thread_info(thread).metadata == {}

    def test_values_read_back_with_the_same_types(self, store: MemoryStore, thread: str) -> None:
        store.update_thread_metadata(thread, VALUES)

        back = store.thread_metadata(thread)
        assert back == VALUES
        assert type(back["ratio"]) is float
        assert type(back["count"]) is int
        assert type(back["mode_state"]["done"][1]) is float
        assert json.loads(json.dumps(store.thread_info(thread).metadata)) == VALUES  # frozen

    def test_an_update_merges_keys_and_returns_the_whole(
        self, store: MemoryStore, thread: str
    ) -> None:
        store.update_thread_metadata(thread, {"a": 1, "b": {"x": 1}})

        merged = store.update_thread_metadata(thread, {"b": {"y": 2}, "c": None})

        assert merged == {"a": 1, "b": {"y": 2}, "c": None}
        assert store.thread_metadata(thread) == merged

    def test_the_result_is_a_copy(self, store: MemoryStore, thread: str) -> None:
        store.update_thread_metadata(thread, {"list": [1]})

        store.thread_metadata(thread)["list"].append(2)

        assert store.thread_metadata(thread) == {"list": [1]}

    @pytest.mark.parametrize(
        ("values", "message"),
        [
            ({"x": {1, 2}}, "not JSON"),
            ({"x": float("nan")}, "not JSON"),
            ({1: "x"}, "not JSON"),
            (["x"], "must be a mapping"),
        ],
    )
    def test_values_that_are_not_json_change_nothing(
        self, db_rows: Rows, store: MemoryStore, thread: str, values: Any, message: str
    ) -> None:
        store.update_thread_metadata(thread, {"kept": True})
        before = db_rows()

        with pytest.raises(StoreArgumentError, match=message):
            store.update_thread_metadata(thread, values)
        assert db_rows() == before

    def test_a_missing_thread_has_no_metadata(self, store: MemoryStore) -> None:
        with pytest.raises(ThreadNotFoundError):
            store.thread_metadata("nope")
        with pytest.raises(ThreadNotFoundError):
            store.update_thread_metadata("nope", {"a": 1})

    def test_metadata_travels_in_snapshots(self, store: MemoryStore, thread: str) -> None:
        store.update_thread_metadata(thread, VALUES)

        copy = store.import_snapshot(store.export_snapshot(thread), thread_id="copy")

        assert store.thread_metadata(copy) == VALUES
        assert store.export_snapshot(copy)["store"]["metadata"] == VALUES


class TestAppendWithMetadata:
    def test_chunks_and_metadata_are_stored_together(self, store: MemoryStore, thread: str) -> None:
        assert store.append(thread, chunks.user("hi", id="n"), thread_metadata={"turn": 1}) == 1

        assert store.get_current_state(thread).ids[-1] == "n"
        assert store.thread_metadata(thread) == {"turn": 1}

    def test_a_conflicting_chunk_stores_neither(
        self, db_rows: Rows, store: MemoryStore, thread: str
    ) -> None:
        before = db_rows()

        with pytest.raises(ChunkConflictError):
            store.append(thread, chunks.user("changed", id="u1"), thread_metadata={"turn": 1})
        assert db_rows() == before

    def test_bad_metadata_stores_no_chunk(
        self, db_rows: Rows, store: MemoryStore, thread: str
    ) -> None:
        before = db_rows()

        with pytest.raises(StoreArgumentError):
            store.append(thread, chunks.user("new", id="n"), thread_metadata={"x": object()})
        assert db_rows() == before


def _next_message(text: str) -> Callable[[int, dict[str, Any]], Any]:
    """A ``make`` for append_with: the next ``msg-N`` and a message counter in the metadata."""

    def make(length: int, metadata: dict[str, Any]) -> tuple[list[Chunk], dict[str, Any]]:
        count = metadata.get("messages", 0) + 1
        return [chunks.user(text, id=f"msg-{length + 1}")], {"messages": count, "last": text}

    return make


class TestAppendWith:
    def test_make_sees_the_history_length_and_the_metadata(
        self, store: MemoryStore, thread: str
    ) -> None:
        store.update_thread_metadata(thread, {"mode": "free"})
        seen: list[tuple[int, dict[str, Any]]] = []

        def make(length: int, metadata: dict[str, Any]) -> tuple[list[Chunk], None]:
            seen.append((length, metadata))
            return [chunks.user("next", id=f"msg-{length + 1}")], None

        assert store.append_with(thread, make) == 1
        assert seen == [(4, {"mode": "free"})]
        assert store.get_current_state(thread).ids[-1] == "msg-5"
        assert store.thread_metadata(thread) == {"mode": "free"}

    def test_the_chunks_and_the_update_are_stored(self, store: MemoryStore, thread: str) -> None:
        store.append_with(thread, _next_message("one"))
        store.append_with(thread, _next_message("two"))

        assert store.get_current_state(thread).ids[-2:] == ("msg-5", "msg-6")
        assert store.thread_metadata(thread) == {"messages": 2, "last": "two"}

    def test_an_exception_in_make_writes_nothing(
        self, db_rows: Rows, store: MemoryStore, thread: str
    ) -> None:
        before = db_rows()

        def make(length: int, metadata: dict[str, Any]) -> Any:
            raise RuntimeError("changed my mind")

        with pytest.raises(RuntimeError, match="changed my mind"):
            store.append_with(thread, make)
        assert db_rows() == before

    @pytest.mark.parametrize("returned", [None, [chunks.user("x")], ([], {}, 3)])
    def test_make_must_return_chunks_and_an_update(
        self, db_rows: Rows, store: MemoryStore, thread: str, returned: Any
    ) -> None:
        before = db_rows()

        with pytest.raises(StoreArgumentError, match=r"\(chunks, metadata_update\)"):
            store.append_with(thread, lambda length, metadata: returned)
        assert db_rows() == before

    def test_a_retried_make_that_returns_stored_chunks_adds_nothing(
        self, store: MemoryStore, thread: str
    ) -> None:
        same = chunks.user("same", id="same")

        def make(length: int, metadata: dict[str, Any]) -> tuple[list[Chunk], dict[str, int]]:
            return [same], {"n": length}

        assert store.append_with(thread, make) == 1
        assert store.append_with(thread, make) == 0
        assert store.get_all_chunks(thread)[-1] == same
        assert store.thread_metadata(thread) == {"n": 5}


WRITERS = 4
ROUNDS = 15


def _number_messages(store: MemoryStore, worker: int) -> None:
    for r in range(ROUNDS):
        store.append_with("team", _next_message(f"w{worker}.r{r}"))


@pytest.mark.slow
@pytest.mark.skipif("fork" not in multiprocessing.get_all_start_methods(), reason="needs fork()")
def test_processes_numbering_messages_get_gap_free_ids_and_lose_no_update(
    store: MemoryStore, store_url: str, api: str
) -> None:
    store.create_thread("team")

    run_writers(_number_messages, api, store_url, WRITERS)

    total = WRITERS * ROUNDS
    state = store.get_current_state("team")
    assert state.ids == tuple(f"msg-{n}" for n in range(1, total + 1))
    assert sorted(c.text for c in state) == sorted(
        f"w{w}.r{r}" for w in range(WRITERS) for r in range(ROUNDS)
    )
    assert store.thread_metadata("team")["messages"] == total
