"""apply_view: a view operation of your own that makes a given list of chunks the visible one."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from memctx import ChunkConflictError, ThreadNotFoundError, ViewOperationError, chunks
from memctx._exceptions import StoreArgumentError
from memctx.store import VIEW_CHANGED, MemoryStore

Rows = Callable[[], dict[str, list[tuple[object, ...]]]]


def visible(store: MemoryStore, thread: str) -> list[str]:
    return list(store.get_current_state(thread).ids)


class TestApplyView:
    def test_the_chunks_become_the_visible_list_in_their_order(
        self, store: MemoryStore, thread: str
    ) -> None:
        s, _, _, u2 = store.get_current_state(thread)
        summary = chunks.progress_summary("asked 2+2, got 4", original_count=2, id="sum")

        batch = store.apply_view(thread, [s, summary, u2], operation="compact")

        assert visible(store, thread) == ["s", "sum", "u2"]
        assert store.batches(thread)[-1].number == batch == 1
        assert store.batches(thread)[-1].operation == "compact"

    def test_new_chunks_join_the_history_and_stored_ones_are_reused(
        self, store: MemoryStore, thread: str
    ) -> None:
        s, *_ = store.get_current_state(thread)

        store.apply_view(thread, [chunks.user("short", id="short"), s], operation="compress")

        history = store.history(thread)
        assert [(i.chunk.id, i.origin, i.visible) for i in history] == [
            ("s", "append", True), ("u1", "append", False), ("a1", "append", False),
            ("u2", "append", False), ("short", "view", True),
        ]  # fmt: skip
        assert visible(store, thread) == ["short", "s"]

    def test_a_hidden_chunk_of_the_history_can_be_shown_again(
        self, store: MemoryStore, thread: str
    ) -> None:
        u1 = store.get_current_state(thread)[1]
        store.truncate(thread, keep_last=1)

        store.apply_view(thread, [u1], operation="restore")

        assert visible(store, thread) == ["u1"]
        assert len(store.history(thread)) == 4

    def test_params_and_events_are_recorded_with_the_batch(
        self, store: MemoryStore, thread: str
    ) -> None:
        s = store.get_current_state(thread)[0]
        payload = {"original_count": 4, "compressed_count": 1, "max_messages": 1}

        batch = store.apply_view(
            thread,
            [s],
            operation="compress",
            params={"max_messages": 1},
            events=[("context.compressed", payload)],
        )

        assert store.batches(thread)[-1].params == {"max_messages": 1}
        changed, compressed = store.events(thread)[-2:]
        assert (changed.kind, changed.payload["batch"]) == (VIEW_CHANGED, batch)
        assert (changed.payload["visible_before"], changed.payload["visible_after"]) == (4, 1)
        assert (compressed.kind, compressed.payload) == ("context.compressed", payload)

    def test_rollback_restores_the_previous_view(self, store: MemoryStore, thread: str) -> None:
        before = visible(store, thread)
        store.apply_view(thread, [chunks.user("only", id="only")], operation="compact")

        store.rollback(thread, batch=0)

        assert visible(store, thread) == before

    def test_chunks_appended_later_show_after_the_view(
        self, store: MemoryStore, thread: str
    ) -> None:
        store.apply_view(thread, [chunks.user("only", id="only")], operation="compact")

        store.append(thread, chunks.user("later", id="later"))

        assert visible(store, thread) == ["only", "later"]
        store.rollback(thread, batch=0)
        assert visible(store, thread) == ["s", "u1", "a1", "u2", "later"]

    def test_an_empty_list_hides_everything(self, store: MemoryStore, thread: str) -> None:
        store.apply_view(thread, [], operation="clear-all")

        assert visible(store, thread) == []


class TestApplyViewRefuses:
    def test_a_different_chunk_under_a_stored_id_changes_nothing(
        self, db_rows: Rows, store: MemoryStore, thread: str
    ) -> None:
        before = db_rows()

        with pytest.raises(ChunkConflictError, match="u1"):
            store.apply_view(
                thread, [chunks.user("new", id="n"), chunks.user("edited", id="u1")], operation="x"
            )
        assert db_rows() == before

    @pytest.mark.parametrize(
        ("arguments", "error", "message"),
        [
            ({"operation": ""}, ViewOperationError, "operation"),
            ({"operation": "x", "params": {"x": {1}}}, StoreArgumentError, "params .* not JSON"),
            ({"operation": "x", "params": [1]}, StoreArgumentError, "params .* JSON object"),
            ({"operation": "x", "events": [("", {})]}, StoreArgumentError, "event kind"),
            ({"operation": "x", "events": [("k", [1])]}, StoreArgumentError, "JSON object"),
            ({"operation": "x", "events": ["k"]}, StoreArgumentError, "pair"),
        ],
    )
    def test_bad_arguments_change_nothing(
        self,
        db_rows: Rows,
        store: MemoryStore,
        thread: str,
        arguments: dict[str, Any],
        error: type[Exception],
        message: str,
    ) -> None:
        before = db_rows()

        with pytest.raises(error, match=message):
            store.apply_view(thread, [chunks.user("n", id="n")], **arguments)
        assert db_rows() == before

    def test_a_chunk_given_twice_changes_nothing(
        self, db_rows: Rows, store: MemoryStore, thread: str
    ) -> None:
        new = chunks.user("n", id="n")
        before = db_rows()

        with pytest.raises(ViewOperationError, match="'n' is given twice"):
            store.apply_view(thread, [new, new], operation="x")
        assert db_rows() == before

    def test_a_missing_thread(self, store: MemoryStore) -> None:
        with pytest.raises(ThreadNotFoundError):
            store.apply_view("nope", [], operation="x")
