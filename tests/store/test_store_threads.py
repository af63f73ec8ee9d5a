"""Threads and appends: atomic, idempotent, gap-free, and never another thread's data."""

from __future__ import annotations

import datetime as dt
import subprocess
import sys
from collections.abc import Callable

import attrs
import pytest
from sqlalchemy import event

from memctx import (
    Chunk,
    ChunkConflictError,
    ChunkNotFoundError,
    InvalidChunkError,
    MemoryState,
    ThreadExistsError,
    ThreadNotFoundError,
    chunks,
)
from memctx._exceptions import StoreArgumentError
from memctx.store import MemoryStore

Rows = Callable[[], dict[str, list[tuple[object, ...]]]]
T0 = dt.datetime(2026, 3, 1, 12, 0, tzinfo=dt.UTC)
MIXED: list[Callable[[str], Chunk]] = [
    chunks.user,
    lambda text: chunks.tool_call("read", {"path": text}, call_id=text),
    lambda text: chunks.tool_result("read", text, call_id=text),
    lambda text: chunks.assistant(text, pinned=True),
    lambda text: chunks.custom("note", text, role="assistant"),
]
"""Chunks whose rows set different columns (role, action, subtype, metadata)."""


class TestThreads:
    def test_a_created_thread_is_listed_and_empty(self, store: MemoryStore) -> None:
        assert store.create_thread("t1") == "t1"

        [info] = store.list_threads()
        assert (info.id, info.chunk_count, info.batch, info.batch_count) == ("t1", 0, 0, 1)
        assert store.get_current_state("t1") == MemoryState(thread_id="t1")
        assert store.has_thread("t1")
        assert not store.has_thread("t2")

    def test_timestamps_are_timezone_aware_and_in_utc(self, store: MemoryStore) -> None:
        before = dt.datetime.now(dt.UTC)
        store.create_thread("t1")
        store.truncate("t1", keep_last=1)
        after = dt.datetime.now(dt.UTC)

        stamps = [
            store.thread_info("t1").created_at,
            *(b.created_at for b in store.batches("t1")),
            *(e.created_at for e in store.events("t1")),
        ]
        assert all(s.utcoffset() == dt.timedelta(0) for s in stamps)
        assert all(before <= s <= after for s in stamps)

    def test_without_an_id_a_fresh_one_is_generated(self, store: MemoryStore) -> None:
        first, second = store.create_thread(), store.create_thread()

        assert first.startswith("thread_")
        assert first != second
        assert {t.id for t in store.list_threads()} == {first, second}

    def test_creating_an_existing_thread_fails_unless_exist_ok(self, store: MemoryStore) -> None:
        store.create_thread("t1")
        store.append("t1", chunks.user("kept"))

        with pytest.raises(ThreadExistsError, match="'t1' already exists"):
            store.create_thread("t1")
        assert store.create_thread("t1", exist_ok=True) == "t1"
        assert [c.text for c in store.get_current_state("t1")] == ["kept"]

    def test_deleting_a_thread_removes_all_its_data_and_only_its_data(
        self, db_rows: Rows, store: MemoryStore, thread: str
    ) -> None:
        store.create_thread("other")
        store.append("other", chunks.user("mine", id="u1"))
        store.truncate(thread, keep_last=1)
        store.record_event(thread, "custom.event", {"n": 1})

        store.delete_thread(thread)

        assert [t.id for t in store.list_threads()] == ["other"]
        with pytest.raises(ThreadNotFoundError):
            store.get_current_state(thread)
        assert [c.text for c in store.get_current_state("other")] == ["mine"]
        rows = db_rows()
        assert all(row[0] == "other" for row in rows["memctx_threads"])
        assert all(row[0] == "other" for row in rows["memctx_chunks"])

    @pytest.mark.parametrize(
        ("thread_id", "message"),
        [
            ("", "must not be empty"),
            ("   ", "must not be empty"),
            ("a\x00b", "control characters"),
            ("x" * 256, "at most 255"),
            (42, "must be a string"),
        ],
    )
    def test_a_malformed_thread_id_is_refused_before_touching_the_database(
        self, db_rows: Rows, store: MemoryStore, thread_id: object, message: str
    ) -> None:
        before = db_rows()

        with pytest.raises(StoreArgumentError, match=message):
            store.create_thread(thread_id)  # type: ignore[arg-type]
        with pytest.raises(StoreArgumentError, match=message):
            store.append(thread_id, chunks.user("x"))  # type: ignore[arg-type]
        assert db_rows() == before


class TestUnknownThreads:
    @pytest.mark.parametrize(
        "call",
        [
            lambda s: s.get_current_state("nope"),
            lambda s: s.get_all_chunks("nope"),
            lambda s: s.append("nope", chunks.user("x")),
            lambda s: s.truncate("nope", keep_last=1),
            lambda s: s.rollback("nope", 0),
            lambda s: s.events("nope"),
            lambda s: s.export_snapshot("nope"),
            lambda s: s.delete_thread("nope"),
            lambda s: s.build("nope"),
            lambda s: s.thread_info("nope"),
        ],
        ids=[
            "state",
            "all_chunks",
            "append",
            "truncate",
            "rollback",
            "events",
            "export",
            "delete",
            "build",
            "info",
        ],
    )
    def test_an_unknown_thread_is_a_clear_error_and_changes_nothing(
        self, db_rows: Rows, store: MemoryStore, thread: str, call: Callable[[MemoryStore], object]
    ) -> None:
        before = db_rows()

        with pytest.raises(ThreadNotFoundError, match="no thread 'nope'"):
            call(store)
        assert db_rows() == before

    def test_appending_does_not_create_a_thread(self, store: MemoryStore) -> None:
        with pytest.raises(ThreadNotFoundError):
            store.append("t1", chunks.user("x"))

        assert store.list_threads() == []


class TestAppend:
    def test_appended_chunks_come_back_equal_and_in_order(self, store: MemoryStore) -> None:
        store.create_thread("t1")
        given = [chunks.user(f"m{i}", created_at=T0) for i in range(5)]

        assert store.append("t1", *given[:2]) == 2
        assert store.append("t1", *given[2:]) == 3

        assert store.get_current_state("t1") == MemoryState(given, thread_id="t1")
        assert store.get_all_chunks("t1") == tuple(given)

    def test_sequence_numbers_are_gap_free_in_append_order(self, store: MemoryStore) -> None:
        store.create_thread("t1")
        store.append("t1", chunks.user("a"), chunks.user("b"))
        store.append("t1", chunks.user("c"))

        history = store.history("t1")

        assert [item.seq for item in history] == [1, 2, 3]
        assert [item.chunk.text for item in history] == ["a", "b", "c"]
        assert all(item.origin == "append" and item.visible for item in history)

    def test_appending_the_same_chunks_again_is_a_no_op(
        self, db_rows: Rows, store: MemoryStore
    ) -> None:
        store.create_thread("t1")
        batch = [chunks.user("a", id="a"), chunks.assistant("b", id="b")]
        store.append("t1", *batch)
        before = db_rows()

        assert store.append("t1", *batch) == 0
        assert store.append("t1", batch[1], batch[0]) == 0
        assert db_rows() == before

    def test_a_retried_batch_stores_only_its_new_chunks(self, store: MemoryStore) -> None:
        store.create_thread("t1")
        a, b = chunks.user("a", id="a"), chunks.user("b", id="b")
        store.append("t1", a)

        assert store.append("t1", a, b) == 1
        assert store.get_current_state("t1").ids == ("a", "b")

    def test_a_chunk_given_twice_in_one_call_is_stored_once(self, store: MemoryStore) -> None:
        store.create_thread("t1")
        a = chunks.user("a", id="a")

        assert store.append("t1", a, a) == 1
        assert store.get_current_state("t1").ids == ("a",)

    def test_a_different_chunk_under_a_stored_id_fails_and_writes_nothing_of_the_batch(
        self, db_rows: Rows, store: MemoryStore
    ) -> None:
        store.create_thread("t1")
        store.append("t1", chunks.user("original", id="x", created_at=T0))
        before = db_rows()

        with pytest.raises(ChunkConflictError, match=r"'x'.*content differ") as info:
            store.append("t1", chunks.user("new"), chunks.user("changed", id="x", created_at=T0))
        assert (info.value.thread_id, info.value.chunk_id) == ("t1", "x")
        assert db_rows() == before

    def test_a_retry_made_at_another_time_is_the_same_chunk_and_the_stored_one_wins(
        self, store: MemoryStore
    ) -> None:
        store.create_thread("t1")
        first = chunks.user("hello", id="x", custom={"k": 1}, created_at=T0)
        store.append("t1", first)

        later = attrs.evolve(first, created_at=T0 + dt.timedelta(hours=1))
        assert store.append("t1", later) == 0
        assert store.append("t1", later, chunks.user("y", id="y"), later) == 1
        assert store.get_all_chunks("t1")[0].created_at == T0

    @pytest.mark.slow
    def test_a_restarted_process_re_creating_its_chunks_retries_without_conflict(
        self, store: MemoryStore, store_url: str, api: str
    ) -> None:
        """A new process makes its chunks again (new creation times) and appends them again."""
        script = f"""
import asyncio, sys
from memctx import chunks
from memctx.store import AsyncMemoryStore, MemoryStore
made = [chunks.system("rules", id="s"), chunks.user("task", id="u", custom={{"n": [1, 2.0]}})]
if {api!r} == "sync":
    with MemoryStore.open({store_url!r}) as store:
        print(store.append("t1", *made))
else:
    async def main():
        store = await AsyncMemoryStore.open({store_url!r})
        try:
            print(await store.append("t1", *made))
        finally:
            await store.close()
    asyncio.run(main())
"""
        store.create_thread("t1")

        def run() -> str:
            done = subprocess.run(
                [sys.executable, "-c", script], capture_output=True, text=True, timeout=120
            )
            assert done.returncode == 0, done.stderr
            return done.stdout.strip()

        assert run() == "2"
        stored = store.get_all_chunks("t1")
        assert run() == "0"
        assert store.get_all_chunks("t1") == stored

    def test_two_different_chunks_with_one_id_in_one_call_fail(self, store: MemoryStore) -> None:
        store.create_thread("t1")

        with pytest.raises(ChunkConflictError, match="given twice in one call"):
            store.append("t1", chunks.user("a", id="x"), chunks.user("b", id="x"))
        assert store.get_all_chunks("t1") == ()

    def test_json_values_python_calls_equal_but_that_render_differently_conflict(
        self, store: MemoryStore
    ) -> None:
        """1 == True and 1 == 1.0 in Python, but they render differently, so they differ."""
        store.create_thread("t1")
        store.append("t1", chunks.tool_result("calc", {"v": 1}, id="r", created_at=T0))

        for other in (True, 1.0):
            with pytest.raises(ChunkConflictError, match="content differ"):
                store.append("t1", chunks.tool_result("calc", {"v": other}, id="r", created_at=T0))

    def test_the_same_id_may_be_used_by_two_threads(self, store: MemoryStore) -> None:
        store.create_thread("t1")
        store.create_thread("t2")

        store.append("t1", chunks.user("one", id="x"))
        store.append("t2", chunks.user("two", id="x"))

        assert [c.text for c in store.get_current_state("t1")] == ["one"]
        assert [c.text for c in store.get_current_state("t2")] == ["two"]

    def test_a_non_chunk_is_refused_before_anything_is_written(self, store: MemoryStore) -> None:
        store.create_thread("t1")

        with pytest.raises(InvalidChunkError, match="must be a Chunk, got dict"):
            store.append("t1", chunks.user("ok"), {"type": "AGENT"})  # type: ignore[arg-type]
        assert store.get_all_chunks("t1") == ()

    def test_an_id_the_database_cannot_hold_is_refused(self, store: MemoryStore) -> None:
        store.create_thread("t1")

        with pytest.raises(InvalidChunkError, match="id: contains NUL"):
            store.append("t1", chunks.user("x", id="a\x00b"))
        assert store.get_all_chunks("t1") == ()

    def test_an_append_is_a_few_statements_whatever_its_size(self, store: MemoryStore) -> None:
        """Lock, check the ids, insert (one executemany), index them (one statement), keep
        the calls waiting for a result (two, when calls or results come), move last_seq:
        not one per chunk."""
        store.create_thread("t1")
        store.append("t1", chunks.user("warm-up"))
        statements: list[str] = []
        event.listen(
            store.engine,
            "before_cursor_execute",
            lambda conn, cursor, statement, *rest: statements.append(statement),
        )
        counts = []
        for size in (len(MIXED), 300):
            statements.clear()
            store.append("t1", *(MIXED[i % len(MIXED)](f"{size}-{i}") for i in range(size)))
            counts.append(len(statements))

        assert counts[0] == counts[1] <= 9, statements

    def test_a_large_append_is_checked_and_stored_whole(
        self, db_rows: Rows, store: MemoryStore
    ) -> None:
        """More ids than one IN (...) list holds: every one is still checked."""
        store.create_thread("t1")
        given = [chunks.user(f"m{i}", id=f"m{i}", created_at=T0) for i in range(1_200)]
        assert store.append("t1", *given[::2]) == 600

        assert store.append("t1", *given) == 600
        assert [item.seq for item in store.history("t1")] == list(range(1, 1_201))
        assert store.get_all_chunks("t1") == tuple(given[::2] + given[1::2])
        before = db_rows()
        changed = chunks.user("changed", id="m1101", created_at=T0)
        with pytest.raises(ChunkConflictError, match=r"'m1101'.*content differ"):
            store.append("t1", *given[:1_100], chunks.user("new"), changed)
        assert db_rows() == before


class TestOtherThreadsData:
    def test_a_chunk_id_of_another_thread_is_not_found_and_said_so(
        self, db_rows: Rows, store: MemoryStore, thread: str
    ) -> None:
        store.create_thread("t2")
        store.append("t2", chunks.user("other", id="only-in-t2"))
        before = db_rows()

        with pytest.raises(ChunkNotFoundError, match=r"'t1' has no chunk.*another thread"):
            store.replace(thread, "only-in-t2", chunks.user("x"))
        assert db_rows() == before

    def test_a_state_never_holds_another_threads_chunks(self, store: MemoryStore) -> None:
        for name in ("t1", "t2"):
            store.create_thread(name)
            store.append(name, *(chunks.user(f"{name}-{i}") for i in range(3)))
        store.truncate("t1", keep_last=1)
        store.rollback("t1", 0)

        for name in ("t1", "t2"):
            texts = [c.text for c in store.get_all_chunks(name)]
            assert texts == [f"{name}-{i}" for i in range(3)]
            assert store.get_current_state(name).thread_id == name


class TestPersistence:
    def test_everything_survives_closing_and_reopening(
        self, open_store: Callable[[], MemoryStore]
    ) -> None:
        first = open_store()
        first.create_thread("t1")
        first.append("t1", chunks.system("rules", id="s"), chunks.user("hi", id="u"))
        first.truncate("t1", keep_last=1)
        state = first.get_current_state("t1")
        first.close()

        second = open_store()

        assert second.get_current_state("t1") == state
        assert [c.id for c in second.get_all_chunks("t1")] == ["s", "u"]
        assert [b.operation for b in second.batches("t1")] == ["create", "truncate"]

    def test_two_open_stores_see_each_others_writes(
        self, open_store: Callable[[], MemoryStore]
    ) -> None:
        writer, reader = open_store(), open_store()
        writer.create_thread("t1")

        writer.append("t1", chunks.user("hello", id="u"))

        assert reader.get_current_state("t1").ids == ("u",)
