"""Paged store builds: the budget decides how many rows a build reads, never the result.

Property: for any history of appends and view operations, any build options
and budget, ``store.build`` gives what a fresh builder gives for
``get_current_state`` — messages, count, included ids, and every left-out
visible chunk with its reason — whether the store pages (``recent`` or
``stable`` with a budget), keeps what it read from an earlier build, or reads
every row.
"""

from __future__ import annotations

import itertools
from typing import Any, Final

import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st
from sqlalchemy import create_engine, text
from store_builds import same_build

from histories import TOKENIZERS, build_options
from memctx import (
    ChunkNotFoundError,
    MemctxError,
    MemoryState,
    StoreError,
    chunks,
    create_builder,
    create_tokenizer,
)
from memctx.store import CONTEXT_BUILT, MemoryStore, _paged, _paged_reads
from memctx.store._paged import FIRST_PAGE
from memctx.store._row_reads import ROWS_READ
from strategies import agent_runs, examples

_threads = itertools.count()


def build_both(store: MemoryStore, thread_id: str, options: dict[str, Any]) -> str:
    """A store build and a fresh builder's build of the current state agree (or fail alike);
    how the store read the thread."""
    state = store.get_current_state(thread_id)
    try:
        expected = create_builder().build(state, **options)
    except MemctxError as exc:
        with pytest.raises(type(exc)):
            store.build(thread_id, **options)
        return f"failed alike: {type(exc).__name__}"
    same_build(store.build(thread_id, **options), expected)
    payload = store.events(thread_id, CONTEXT_BUILT)[-1].payload
    return "paged" if payload["chunks_read"] < payload["visible"] else "read in full"


steps = st.lists(
    st.one_of(
        st.tuples(st.just("append"), st.integers(1, 12)),
        st.tuples(st.just("build"), st.integers(0, 2**32)),
        st.tuples(st.just("truncate"), st.integers(1, 30)),
        st.tuples(st.just("insert"), st.integers(0, 60)),
        st.tuples(st.just("clear"), st.booleans()),
        st.tuples(st.just("rollback"), st.integers(0, 3)),
        st.just(("restart",)),
    ),
    min_size=1,
    max_size=12,
)


@pytest.fixture
def small_pages(monkeypatch: pytest.MonkeyPatch) -> None:
    """Pages of a few rows, so that short histories are read in several pages too (and a
    ``stable`` build often finds it must read more than it read first)."""
    monkeypatch.setattr(_paged, "FIRST_PAGE", 3)
    monkeypatch.setattr(_paged_reads, "FIRST_PAGE", 3)
    monkeypatch.setattr(_paged, "MIN_PAGE", 2)
    monkeypatch.setattr(_paged, "STABLE_WANT", 0.5)


EXAMPLES: Final = {"sync": 60, "async": 20}
"""The property's examples per store class. AsyncMemoryStore runs the very same operations
(through ``AsyncSession.run_sync``): its examples check that it pages alike, not the paging."""


class TestPagedBuildsEqualInMemoryBuilds:
    def test_any_history_and_options_build_as_in_memory(
        self, small_pages: None, open_store: Any, api: str
    ) -> None:
        @settings(
            max_examples=examples(EXAMPLES[api]),
            deadline=None,
            suppress_health_check=[HealthCheck.too_slow],
        )
        @given(history=agent_runs(max_steps=80), plan=steps, data=st.data())
        def any_history(
            history: MemoryState, plan: list[tuple[Any, ...]], data: st.DataObject
        ) -> None:
            self.builds_as_in_memory(open_store, history, plan, data)

        any_history()

    def builds_as_in_memory(
        self,
        open_store: Any,
        history: MemoryState,
        plan: list[tuple[Any, ...]],
        data: st.DataObject,
    ) -> None:
        store = open_store()
        thread_id = f"p{next(_threads)}"
        store.create_thread(thread_id)
        pending = list(history)
        first = MemoryState(pending[: len(pending) // 2])
        store.append(thread_id, *first)
        del pending[: len(first)]
        try:
            for step in [*plan, ("build", 0)]:
                name = step[0]
                if name == "append" and pending:
                    store.append(thread_id, *pending[: step[1]])
                    del pending[: step[1]]
                elif name == "truncate":
                    store.truncate(thread_id, keep_last=step[1])
                elif name == "insert" and pending:
                    visible = len(store.get_current_state(thread_id))
                    store.insert(thread_id, min(step[1], visible), pending.pop(0))
                elif name == "clear":
                    store.clear(thread_id, keep_system=step[1])
                elif name == "rollback":
                    batches = store.batches(thread_id)
                    store.rollback(thread_id, batch=batches[min(step[1], len(batches) - 1)].number)
                elif name == "restart":
                    store.close()
                    store = open_store()
                elif name == "build":
                    # Named chunks come from the first append (they may be hidden since).
                    options = data.draw(build_options(first), label="options")
                    if data.draw(st.integers(0, 3), label="paged"):  # mostly paged
                        strategy = data.draw(st.sampled_from(["recent", "stable"]))
                        options["strategy"] = strategy
                        options["max_tokens"] = data.draw(st.integers(60, 600))
                        options.pop("reserve_tokens", None)
                        visible = set(store.get_current_state(thread_id).ids)
                        for field in ("pinned_chunk_ids", "include_only_chunk_ids"):
                            if field in options:  # named chunks that are still visible
                                options[field] = [i for i in options[field] if i in visible]
                    event(build_both(store, thread_id, options))
                    # The same build again: answered from what the store kept.
                    build_both(store, thread_id, options)
        finally:
            store.close()

    def test_a_rebuild_after_appends_sees_them(self, small_pages: None, store: MemoryStore) -> None:
        tokenizer = create_tokenizer("gpt-4o")
        store.create_thread("t")
        store.append("t", *(chunks.user("word " * 40, id=f"u{i}") for i in range(50)))
        build_both(store, "t", {"max_tokens": 300, "tokenizer": tokenizer})

        store.append(
            "t",
            chunks.tool_call("sh", {"cmd": "ls"}, call_id="c1", id="call"),
            chunks.assistant("waiting", id="wait"),
        )
        build_both(store, "t", {"max_tokens": 300, "tokenizer": tokenizer})
        store.append("t", chunks.tool_result("sh", "a\nb\n" * 100, call_id="c1", id="res"))

        build_both(store, "t", {"max_tokens": 300, "tokenizer": tokenizer})


class TestPagedBuildsReadWhatTheBudgetReaches:
    @pytest.fixture
    def long_thread(self, store: MemoryStore) -> str:
        store.create_thread("long")
        made = [chunks.system("You are a coding agent.", id="sys")]
        for n in range(400):
            made.append(chunks.user(f"step {n} " + "word " * 30, id=f"u{n}"))
            made.append(chunks.tool_call("sh", {"cmd": f"ls {n}"}, call_id=f"c{n}", id=f"call{n}"))
            made.append(chunks.tool_result("sh", "file\n" * 40, call_id=f"c{n}", id=f"res{n}"))
        made.insert(5, chunks.assistant("Remember this.", id="kept", pinned=True))
        made.insert(9, chunks.tool_call("sh", {"cmd": "serve"}, call_id="bg", id="bg"))
        store.append("long", *made)
        return "long"

    def rows_read(self, store: MemoryStore, thread_id: str, **options: Any) -> int:
        before = ROWS_READ.count
        store.build(thread_id, **options)
        return ROWS_READ.count - before

    def test_a_small_budget_reads_a_bounded_number_of_rows(
        self, open_store: Any, long_thread: str
    ) -> None:
        tokenizer = create_tokenizer("gpt-4o")
        first = open_store()
        first.build(long_thread, max_tokens=1_000, tokenizer=tokenizer)  # stores the counts
        first.close()

        again = open_store()
        read = self.rows_read(again, long_thread, max_tokens=1_000, tokenizer=tokenizer)

        # ~1,000 tokens reach about 10 steps of 3 chunks; the pinned chunk and the
        # call still waiting far back are read too. The thread holds 1,203.
        assert read <= FIRST_PAGE + 3
        event = again.events(long_thread, CONTEXT_BUILT)[-1].payload
        assert (event["visible"], event["chunks_read"]) == (1_203, read)
        result = again.build(long_thread, max_tokens=1_000, tokenizer=tokenizer)
        assert {"sys", "kept", "bg"} <= set(result.included_chunk_ids)
        assert len(result.excluded_chunk_ids) == 1_203 - len(result.included_chunk_ids)

    def test_a_rebuild_after_another_stores_append_reads_only_the_appended_rows(
        self, open_store: Any, store: MemoryStore, long_thread: str
    ) -> None:
        tokenizer = create_tokenizer("gpt-4o")
        store.build(long_thread, max_tokens=1_000, tokenizer=tokenizer)
        open_store().append(long_thread, chunks.assistant("next", id="next"))

        read = self.rows_read(store, long_thread, max_tokens=1_000, tokenizer=tokenizer)

        assert read == 1

    def test_a_rebuild_after_its_own_append_reads_no_row(
        self, store: MemoryStore, long_thread: str
    ) -> None:
        tokenizer = create_tokenizer("gpt-4o")
        store.build(long_thread, max_tokens=1_000, tokenizer=tokenizer)
        store.append(long_thread, chunks.assistant("next", id="next"))

        read = self.rows_read(store, long_thread, max_tokens=1_000, tokenizer=tokenizer)

        assert read == 0
        assert store.events(long_thread, CONTEXT_BUILT)[-1].payload["chunks_read"] == 1

    @pytest.mark.parametrize("want", [_paged.STABLE_WANT, 0.1])
    def test_a_stable_build_reads_about_what_a_recent_one_reads_and_builds_the_same(
        self, open_store: Any, long_thread: str, monkeypatch: pytest.MonkeyPatch, want: float
    ) -> None:
        """Reading too few rows first (``want`` 0.1) costs more reads, never the result."""
        monkeypatch.setattr(_paged, "FIRST_PAGE", 8)
        monkeypatch.setattr(_paged, "STABLE_WANT", want)
        tokenizer = create_tokenizer("gpt-4o")
        options: dict[str, Any] = {"max_tokens": 1_000, "tokenizer": tokenizer}
        first = open_store()
        first.build(long_thread, **options)  # stores the counts
        first.close()
        recent = self.rows_read(open_store(), long_thread, **options)
        store = open_store()

        for n in range(12):  # the start stays put, then moves a block on
            stable = self.rows_read(store, long_thread, strategy="stable", **options)
            result = store.build(long_thread, strategy="stable", **options)
            fresh = create_builder(tokenizer).build(
                store.get_current_state(long_thread), strategy="stable", **options
            )
            same_build(result, fresh)
            store.append(long_thread, chunks.assistant(f"step {n} " + "word " * 40, id=f"a{n}"))
            if n == 0:  # read cold, as the recent build was
                assert recent <= stable <= 2 * recent
            else:
                assert stable == 0  # the chunk appended: taken as this store wrote it

    def test_a_build_without_a_budget_reads_every_row(
        self, store: MemoryStore, long_thread: str
    ) -> None:
        read = self.rows_read(store, long_thread, tokenizer=TOKENIZERS["gpt-4o"])

        assert read == 1_203

    def test_a_named_chunk_that_is_not_visible_is_not_found(
        self, store: MemoryStore, long_thread: str
    ) -> None:
        store.truncate(long_thread, keep_last=10)

        with pytest.raises(ChunkNotFoundError):
            store.build(long_thread, max_tokens=1_000, pinned_chunk_ids=["u0"])


class TestPagedBuildsReadAWindow:
    """A cold build reads the newest rows, the pinned, SYSTEM and waiting ones, and the
    ids of the rest only when its left-out list is asked for."""

    @pytest.fixture
    def thread(self, store: MemoryStore) -> str:
        store.create_thread("w")
        made = [chunks.system("You are a coding agent.", id="sys"), chunks.user("Fix it.")]
        made.append(chunks.tool_call("sh", {"cmd": "serve"}, call_id="late", id="late-call"))
        made.append(chunks.tool_call("sh", {"cmd": "wait"}, call_id="bg", id="bg"))
        for n in range(300):
            made.append(chunks.assistant(f"step {n} " + "word " * 30, id=f"a{n}"))
        made.append(chunks.tool_result("sh", "served", call_id="late", id="late-result"))
        made += [chunks.assistant(f"after {n} " + "word " * 30, id=f"b{n}") for n in range(30)]
        store.append("w", *made)
        return "w"

    def test_a_call_waiting_far_back_is_pinned_and_one_answered_far_later_is_not(
        self, small_pages: None, open_store: Any, thread: str
    ) -> None:
        store = open_store()
        options = {"max_tokens": 800, "tokenizer": create_tokenizer("gpt-4o")}

        build_both(store, thread, options)
        result = store.build(thread, **options)

        assert {"sys", "bg"} <= set(result.included_chunk_ids)
        assert "late-call" not in result.included_chunk_ids
        store.close()

    def test_the_left_out_list_is_read_when_asked_for_and_stays_that_of_the_build(
        self, open_store: Any, thread: str
    ) -> None:
        store = open_store()
        tokenizer = create_tokenizer("gpt-4o")
        state = store.get_current_state(thread)
        expected = create_builder().build(state, max_tokens=800, tokenizer=tokenizer)

        result = store.build(thread, max_tokens=800, tokenizer=tokenizer)
        store.append(thread, *(chunks.user(f"more {n}", id=f"m{n}") for n in range(20)))
        store.close()

        assert result.excluded_chunk_ids == expected.excluded_chunk_ids
        assert "a0" in result.exclusions
        assert "m0" not in result.exclusions

    def test_the_left_out_list_of_a_deleted_thread_cannot_be_read(
        self, open_store: Any, api: str, thread: str
    ) -> None:
        store = open_store()
        result = store.build(thread, max_tokens=800, tokenizer=create_tokenizer("gpt-4o"))
        store.delete_thread(thread)

        assert "sys" in result.included_chunk_ids
        if api == "async":  # the asyncio store reads the list before the build returns
            assert "a0" in result.excluded_chunk_ids
        else:
            with pytest.raises(StoreError, match="deleted"):
                result.excluded_chunk_ids  # noqa: B018
        store.close()


class TestWaitingUnits:
    def waiting(self, url: str, thread_id: str) -> list[tuple[str, int]]:
        engine = create_engine(url)
        with engine.connect() as connection:
            rows = connection.execute(
                text("SELECT unit_key, seq FROM memctx_waiting WHERE thread_id = :t ORDER BY seq"),
                {"t": thread_id},
            )
            found = [(key, seq) for key, seq in rows]
        engine.dispose()
        return found

    def test_an_appended_call_waits_until_its_result_is_appended(
        self, store: MemoryStore, store_url: str
    ) -> None:
        store.create_thread("t")
        store.append(
            "t",
            chunks.tool_call("sh", {"cmd": "a"}, call_id="c1", id="call1"),
            chunks.tool_call("sh", {"cmd": "b"}, call_id="c2", id="call2"),
            chunks.tool_result("sh", "done", call_id="c1", id="res1"),
        )
        assert self.waiting(store_url, "t") == [('["call", "c2"]', 2)]

        store.append("t", chunks.tool_result("sh", "done", call_id="c2", id="res2"))

        assert self.waiting(store_url, "t") == []


def test_a_unit_whose_ids_hold_nul_is_stored_and_built_as_in_memory(store: MemoryStore) -> None:
    history = [
        chunks.user("Delegate it.", id="task"),
        chunks.spawn_subagent("\x00agent", "coder", "do it", id="spawn"),
        chunks.tool_call("bash", {"cmd": "ls"}, call_id="c\x001", id="call"),
        chunks.tool_result("bash", "a\nb", call_id="c\x001", id="result"),
        chunks.subagent_result("\x00agent", "done", id="back"),
    ]
    store.create_thread("nul")
    store.append("nul", *history)
    tokenizer = create_tokenizer("gpt-4o")

    result = store.build("nul", max_tokens=200, tokenizer=tokenizer)

    expected = create_builder(tokenizer).build(
        store.get_current_state("nul"), max_tokens=200, tokenizer=tokenizer
    )
    same_build(result, expected)
