"""apply_view: a view operation of your own that makes a given list of chunks the visible one."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from memctx import (
    ChunkConflictError,
    MemoryState,
    ThreadNotFoundError,
    ViewConflictError,
    ViewOperationError,
    chunks,
)
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
            ({"operation": "x", "based_on": 5}, ViewOperationError, "based_on must be"),
            ({"operation": "x", "based_on": "s"}, ViewOperationError, "based_on must be"),
            ({"operation": "x", "based_on": ["s", ""]}, ViewOperationError, "based_on"),
            ({"operation": "x", "based_on": ["s", 1]}, ViewOperationError, "based_on"),
            (
                {"operation": "x", "based_on": MemoryState(thread_id="other")},
                ViewOperationError,
                "state of thread 'other'",
            ),
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


class TestApplyViewBasedOn:
    """``based_on``: the view covers only the chunks of the state it was computed from."""

    def test_chunks_appended_after_the_state_was_read_stay_visible(
        self, store: MemoryStore, thread: str
    ) -> None:
        state = store.get_current_state(thread)
        store.append(thread, chunks.user("meanwhile", id="late"))
        summary = chunks.progress_summary("so far", original_count=3, id="sum")

        store.apply_view(thread, [state[0], summary], operation="compact", based_on=state)

        assert visible(store, thread) == ["s", "sum", "late"]

    def test_the_state_s_chunk_ids_do_as_well(self, store: MemoryStore, thread: str) -> None:
        state = store.get_current_state(thread)
        store.append(thread, chunks.user("meanwhile", id="late"))

        store.apply_view(thread, [state[3]], operation="keep-last", based_on=list(state.ids))

        assert visible(store, thread) == ["u2", "late"]

    def test_a_chunk_appended_since_and_given_in_the_view_is_shown_once(
        self, store: MemoryStore, thread: str
    ) -> None:
        state = store.get_current_state(thread)
        late = chunks.user("meanwhile", id="late")
        store.append(thread, late)

        store.apply_view(thread, [late, state[0]], operation="x", based_on=state)

        assert visible(store, thread) == ["late", "s"]

    def test_nothing_appended_since_is_the_view_as_given(
        self, store: MemoryStore, thread: str
    ) -> None:
        state = store.get_current_state(thread)

        store.apply_view(thread, [state[1]], operation="x", based_on=state)

        assert visible(store, thread) == ["u1"]
        assert store.events(thread)[-1].payload["visible_before"] == 4

    @pytest.mark.parametrize(
        "change",
        [
            lambda store, thread: store.truncate(thread, keep_last=2),
            lambda store, thread: store.insert(thread, 0, chunks.user("first", id="f")),
            lambda store, thread: store.apply_view(thread, [], operation="clear-all"),
        ],
        ids=["truncate", "insert", "apply_view"],
    )
    def test_a_view_another_operation_changed_since_is_a_conflict_that_writes_nothing(
        self, db_rows: Rows, store: MemoryStore, thread: str, change: Any
    ) -> None:
        state = store.get_current_state(thread)
        change(store, thread)
        before = db_rows()

        with pytest.raises(ViewConflictError, match="read the state again") as caught:
            store.apply_view(
                thread, [chunks.user("new", id="n")], operation="compact", based_on=state
            )

        assert caught.value.thread_id == thread
        assert db_rows() == before

    def test_a_view_that_still_starts_with_the_state_keeps_what_follows(
        self, store: MemoryStore, thread: str
    ) -> None:
        store.truncate(thread, keep_first=2)
        state = store.get_current_state(thread)
        store.rollback(thread, batch=0)  # shows a1 and u2 again, after s and u1

        store.apply_view(thread, [state[1]], operation="x", based_on=state)

        assert visible(store, thread) == ["u1", "a1", "u2"]
