"""Non-destructive views: each operation changes only what is visible, in batches."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from memctx import ChunkConflictError, ChunkType, ViewOperationError, chunks
from memctx.store import VIEW_CHANGED, MemoryStore

Rows = Callable[[], dict[str, list[tuple[object, ...]]]]
ALL = ("s", "u1", "a1", "u2")


def ids(store: MemoryStore, thread: str = "t1") -> tuple[str, ...]:
    return store.get_current_state(thread).ids


class TestTruncate:
    @pytest.mark.parametrize(
        ("option", "expected"),
        [
            ({"keep_first": 2}, ("s", "u1")),
            ({"keep_last": 2}, ("a1", "u2")),
            ({"keep_last": 0}, ()),
            ({"keep_last": 10}, ALL),
            ({"remove_first": 1}, ("u1", "a1", "u2")),
            ({"remove_last": 3}, ("s",)),
            ({"remove_last": 9}, ()),
            ({"range": (1, 3)}, ("u1", "a1")),
            ({"range": (-2, None)}, ("a1", "u2")),
            ({"range": (None, 1)}, ("s",)),
        ],
    )
    def test_truncation_slices_the_visible_chunks(
        self, store: MemoryStore, thread: str, option: dict[str, Any], expected: tuple[str, ...]
    ) -> None:
        assert store.truncate(thread, **option) == 1

        assert ids(store) == expected

    def test_truncation_applies_to_what_is_visible_not_to_the_history(
        self, store: MemoryStore, thread: str
    ) -> None:
        store.truncate(thread, remove_first=1)
        store.truncate(thread, keep_first=1)

        assert ids(store) == ("u1",)

    def test_history_is_kept_whatever_is_hidden(self, store: MemoryStore, thread: str) -> None:
        store.truncate(thread, keep_last=0)

        assert [c.id for c in store.get_all_chunks(thread)] == list(ALL)
        assert [item.visible for item in store.history(thread)] == [False] * 4

    def test_chunks_appended_after_a_truncation_are_visible_at_the_end(
        self, store: MemoryStore, thread: str
    ) -> None:
        store.truncate(thread, keep_last=1)
        store.append(thread, chunks.assistant("6", id="a2"))

        assert ids(store) == ("u2", "a2")

    @pytest.mark.parametrize(
        ("options", "message"),
        [
            ({}, "exactly one of"),
            ({"keep_first": 1, "keep_last": 1}, "got keep_first, keep_last"),
            ({"keep_last": -1}, "non-negative int"),
            ({"keep_last": True}, "non-negative int"),
            ({"remove_first": "2"}, "non-negative int"),
            ({"range": (1,)}, r"range must be \(start, end\)"),
            ({"range": "1:2"}, r"range must be \(start, end\)"),
            ({"range": (1.5, 2)}, "ints or None"),
        ],
    )
    def test_bad_truncations_are_refused_and_change_nothing(
        self,
        db_rows: Rows,
        store: MemoryStore,
        thread: str,
        options: dict[str, Any],
        message: str,
    ) -> None:
        before = db_rows()

        with pytest.raises(ViewOperationError, match=message):
            store.truncate(thread, **options)
        assert db_rows() == before


class TestInsert:
    def test_insert_shows_several_new_chunks_at_a_position(
        self, store: MemoryStore, thread: str
    ) -> None:
        store.insert(thread, 1, chunks.system("new rule", id="n1"), chunks.user("hi", id="n2"))

        assert ids(store) == ("s", "n1", "n2", "u1", "a1", "u2")

    @pytest.mark.parametrize(("position", "expected"), [(-1, (*ALL, "n")), (4, (*ALL, "n")),
                                                         (0, ("n", *ALL))])  # fmt: skip
    def test_positions_count_visible_chunks_and_minus_one_is_the_end(
        self, store: MemoryStore, thread: str, position: int, expected: tuple[str, ...]
    ) -> None:
        store.insert(thread, position, chunks.user("x", id="n"))

        assert ids(store) == expected

    def test_inserted_chunks_join_the_history_with_their_origin(
        self, store: MemoryStore, thread: str
    ) -> None:
        store.insert(thread, 0, chunks.user("x", id="n"))

        last = store.history(thread)[-1]
        assert (last.seq, last.chunk.id, last.origin, last.batch) == (5, "n", "insert", 0)

    def test_inserting_a_hidden_stored_chunk_shows_it_again(
        self, store: MemoryStore, thread: str
    ) -> None:
        system = store.get_current_state(thread).get("s")
        store.truncate(thread, remove_first=1)

        store.insert(thread, 0, system)

        assert ids(store) == ALL
        assert len(store.get_all_chunks(thread)) == 4

    @pytest.mark.parametrize(
        ("position", "given", "error", "message"),
        [
            (5, [chunks.user("x")], ViewOperationError, r"outside the visible chunks \(0..4"),
            (-2, [chunks.user("x")], ViewOperationError, "-1 \\(the end\\) or from 0 on"),
            ("0", [chunks.user("x")], ViewOperationError, "position must be an int"),
            (0, [], ViewOperationError, "at least one chunk"),
            (0, [chunks.user("changed", id="u1")], ChunkConflictError, "'u1'"),
        ],
    )
    def test_bad_inserts_are_refused_and_change_nothing(
        self,
        db_rows: Rows,
        store: MemoryStore,
        thread: str,
        position: Any,
        given: list[Any],
        error: type[Exception],
        message: str,
    ) -> None:
        before = db_rows()

        with pytest.raises(error, match=message):
            store.insert(thread, position, *given)
        assert db_rows() == before

    def test_a_chunk_that_is_visible_already_cannot_be_inserted_again(
        self, db_rows: Rows, store: MemoryStore, thread: str
    ) -> None:
        visible = store.get_current_state(thread).get("u1")
        before = db_rows()

        with pytest.raises(ViewOperationError, match="'u1' is visible already"):
            store.insert(thread, -1, visible)
        assert db_rows() == before


class TestReplace:
    @pytest.mark.parametrize("target", [1, -3, "u1"])
    def test_replace_shows_the_new_chunk_in_place_and_keeps_the_old_in_history(
        self, store: MemoryStore, thread: str, target: int | str
    ) -> None:
        store.replace(thread, target, chunks.user("What is two plus two?", id="u1b"))

        assert ids(store) == ("s", "u1b", "a1", "u2")
        history = store.history(thread)
        assert [(i.chunk.id, i.visible, i.origin) for i in (history[1], history[4])] == [
            ("u1", False, "append"),
            ("u1b", True, "replace"),
        ]

    def test_the_event_names_the_replaced_chunk(self, store: MemoryStore, thread: str) -> None:
        store.replace(thread, 0, chunks.system("new", id="s2"))

        [event] = store.events(thread, VIEW_CHANGED)
        assert event.payload["params"] == {"target": 0, "chunk_id": "s2", "replaced_chunk_id": "s"}

    @pytest.mark.parametrize(
        ("target", "replacement", "error", "message"),
        [
            (4, chunks.user("x"), ViewOperationError, "index 4 is outside the 4 visible"),
            (-5, chunks.user("x"), ViewOperationError, "outside"),
            (1.0, chunks.user("x"), ViewOperationError, "a visible index or a chunk id"),
            (0, chunks.user("same id, other text", id="s"), ChunkConflictError, "'s'"),
            (0, chunks.user("reusing a visible id", id="u2"), ChunkConflictError, "'u2'"),
        ],
    )
    def test_bad_replacements_are_refused_and_change_nothing(
        self,
        db_rows: Rows,
        store: MemoryStore,
        thread: str,
        target: Any,
        replacement: Any,
        error: type[Exception],
        message: str,
    ) -> None:
        before = db_rows()

        with pytest.raises(error, match=message):
            store.replace(thread, target, replacement)
        assert db_rows() == before

    def test_a_hidden_chunk_cannot_be_replaced_by_id(
        self, db_rows: Rows, store: MemoryStore, thread: str
    ) -> None:
        store.truncate(thread, keep_last=1)
        before = db_rows()

        with pytest.raises(ViewOperationError, match="'u1' is hidden"):
            store.replace(thread, "u1", chunks.user("x"))
        assert db_rows() == before


class TestClear:
    def test_clear_keeps_the_visible_system_chunks(self, store: MemoryStore, thread: str) -> None:
        store.clear(thread)

        assert ids(store) == ("s",)

    def test_clear_without_system_hides_everything(self, store: MemoryStore, thread: str) -> None:
        store.clear(thread, keep_system=False)

        assert ids(store) == ()
        assert len(store.get_all_chunks(thread)) == 4

    def test_clear_does_not_bring_back_a_hidden_system_chunk(
        self, store: MemoryStore, thread: str
    ) -> None:
        store.truncate(thread, remove_first=1)

        store.clear(thread)

        assert ids(store) == ()


class TestFilter:
    @pytest.fixture
    def mixed(self, store: MemoryStore) -> str:
        store.create_thread("m")
        store.append(
            "m",
            chunks.system("rules", id="s"),
            chunks.user("please read main.ts", id="u"),
            chunks.tool_call("read_file", {"path": "main.ts"}, call_id="c1", id="call"),
            chunks.tool_result("read_file", "export const x = 1", call_id="c1", id="result"),
            chunks.assistant("main.ts exports x", id="a"),
        )
        return "m"

    @pytest.mark.parametrize(
        ("criteria", "expected"),
        [
            ({"roles": ["user"]}, ("u",)),
            ({"roles": "assistant"}, ("call", "a")),
            ({"roles": ["system", "user"]}, ("s", "u")),
            ({"roles": ["user", "assistant"]}, ("u", "call", "a")),
            ({"roles": "tool"}, ("result",)),
            ({"types": [ChunkType.AGENT]}, ("u", "a")),
            ({"types": "ENVIRONMENT"}, ("result",)),
            ({"contains": "main.ts"}, ("u", "call", "a")),
            ({"contains": ["main.ts", "exports"]}, ("a",)),
            ({"excludes": "main.ts"}, ("s", "result")),
            ({"roles": ["assistant"], "contains": "main", "excludes": "exports"}, ("call",)),
        ],
    )
    def test_filter_keeps_the_chunks_meeting_every_criterion(
        self, store: MemoryStore, mixed: str, criteria: dict[str, Any], expected: tuple[str, ...]
    ) -> None:
        store.filter(mixed, **criteria)

        assert ids(store, mixed) == expected

    def test_filter_applies_to_the_visible_chunks_only(
        self, store: MemoryStore, mixed: str
    ) -> None:
        store.truncate(mixed, keep_first=2)

        store.filter(mixed, roles=["user"])

        assert ids(store, mixed) == ("u",)

    @pytest.mark.parametrize(
        ("criteria", "message"),
        [
            ({}, "at least one of"),
            ({"roles": ["function"]}, "unknown role 'function'"),
            ({"types": ["NOPE"]}, "unknown chunk type"),
            ({"contains": [""]}, r"contains\[0\] must not be empty"),
            ({"excludes": [3]}, r"excludes\[0\] must be a string"),
        ],
    )
    def test_bad_filters_are_refused_and_change_nothing(
        self, db_rows: Rows, store: MemoryStore, mixed: str, criteria: dict[str, Any], message: str
    ) -> None:
        before = db_rows()

        with pytest.raises(ViewOperationError, match=message):
            store.filter(mixed, **criteria)
        assert db_rows() == before


class TestBatchesAndRollback:
    def test_every_operation_starts_a_new_batch(self, store: MemoryStore, thread: str) -> None:
        numbers = [
            store.truncate(thread, keep_last=3),
            store.insert(thread, 0, chunks.user("x", id="x")),
            store.replace(thread, "x", chunks.user("y", id="y")),
            store.filter(thread, excludes="zzz"),
            store.clear(thread),
            store.rollback(thread, 0),
        ]

        assert numbers == [1, 2, 3, 4, 5, 6]
        batches = store.batches(thread)
        assert [b.operation for b in batches] == ["create", "truncate", "insert", "replace",
                                                  "filter", "clear", "rollback"]  # fmt: skip
        assert [b.current for b in batches] == [False] * 6 + [True]
        assert store.thread_info(thread).batch == 6

    def test_rollback_returns_to_any_earlier_batch(self, store: MemoryStore, thread: str) -> None:
        store.truncate(thread, keep_last=3)
        store.truncate(thread, keep_last=2)
        store.clear(thread, keep_system=False)

        store.rollback(thread, 2)
        assert ids(store) == ("a1", "u2")
        store.rollback(thread, 1)
        assert ids(store) == ("u1", "a1", "u2")
        store.rollback(thread, 0)
        assert ids(store) == ALL

    def test_a_rollback_can_itself_be_rolled_back(self, store: MemoryStore, thread: str) -> None:
        store.truncate(thread, keep_last=1)
        store.rollback(thread, 0)

        store.rollback(thread, 1)

        assert ids(store) == ("u2",)

    def test_rollback_keeps_chunks_appended_since_and_drops_inserted_ones(
        self, store: MemoryStore, thread: str
    ) -> None:
        store.truncate(thread, keep_last=1)
        store.insert(thread, 0, chunks.system("inserted", id="ins"))
        store.append(thread, chunks.assistant("6", id="a2"))

        store.rollback(thread, 0)

        assert ids(store) == (*ALL, "a2")
        assert "ins" in [c.id for c in store.get_all_chunks(thread)]

    def test_rollback_to_a_view_batch_shows_that_view_plus_later_appends(
        self, store: MemoryStore, thread: str
    ) -> None:
        store.truncate(thread, keep_last=2)
        store.clear(thread, keep_system=False)
        store.append(thread, chunks.assistant("6", id="a2"))

        store.rollback(thread, 1)

        assert ids(store) == ("a1", "u2", "a2")

    @pytest.mark.parametrize("batch", [-1, 2, True, "0"])
    def test_rollback_to_a_batch_that_does_not_exist_is_refused(
        self, db_rows: Rows, store: MemoryStore, thread: str, batch: Any
    ) -> None:
        store.truncate(thread, keep_last=1)
        before = db_rows()

        with pytest.raises(ViewOperationError):
            store.rollback(thread, batch)
        assert db_rows() == before

    def test_every_view_change_records_an_event_with_its_parameters(
        self, store: MemoryStore, thread: str
    ) -> None:
        store.truncate(thread, keep_last=2)
        store.rollback(thread, 0)

        events = store.events(thread, VIEW_CHANGED)

        assert [dict(e.payload) for e in events] == [
            {"operation": "truncate", "params": {"keep_last": 2}, "batch": 1,
             "previous_batch": 0, "visible_before": 4, "visible_after": 2},
            {"operation": "rollback", "params": {"batch": 0}, "batch": 2,
             "previous_batch": 1, "visible_before": 2, "visible_after": 4},
        ]  # fmt: skip
        assert events[0].id < events[1].id
        assert all(e.thread_id == thread for e in events)
