"""A rebuild after this store's own append takes the rows as the append wrote them.

The append notes what it wrote (with the older members of its chunks' units, read by
its duplicate check); the next paged build takes those rows without reading them,
and writes its record only if the thread is still at the state it built: otherwise
nothing is written and the build is made again from what the database holds. So a
rebuild after an own append is one round trip on PostgreSQL (the record), and its
result is what a newly opened store builds — also when another store appended
before it, or while it ran.
"""

from __future__ import annotations

import datetime as dt
import itertools
import os
import sqlite3
import tempfile
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sqlalchemy import event
from store_builds import fresh_build, same_build

from memctx import (
    BudgetExceededError,
    MemctxError,
    MemoryState,
    TiktokenTokenizer,
    chunks,
    create_builder,
)
from memctx.store import CONTEXT_BUILT, MemoryStore, _paged, _paged_reads
from memctx.store._row_reads import ROWS_READ
from strategies import agent_runs, examples

_threads = itertools.count()
GPT4O = TiktokenTokenizer("o200k_base")


def built_events(store: MemoryStore, thread_id: str) -> int:
    return len(store.events(thread_id, CONTEXT_BUILT))


@pytest.fixture
def small_pages(monkeypatch: pytest.MonkeyPatch) -> None:
    """Pages of a few rows, so that short histories are read in several pages too."""
    monkeypatch.setattr(_paged, "FIRST_PAGE", 3)
    monkeypatch.setattr(_paged_reads, "FIRST_PAGE", 3)
    monkeypatch.setattr(_paged, "MIN_PAGE", 2)
    monkeypatch.setattr(_paged, "STABLE_WANT", 0.5)


@st.composite
def reused_calls(draw: st.DrawFn, history: MemoryState) -> list[Any]:
    """Calls (and results) under call ids the history used already: their units reach
    back to rows the rebuild did not read."""
    used = sorted({c.metadata.call_id for c in history if c.metadata.call_id})
    made: list[Any] = []
    for n, call_id in enumerate(draw(st.lists(st.sampled_from(used), max_size=3)) if used else []):
        made.append(chunks.tool_call("bash", {"command": f"again {n}"}, call_id=call_id))
        if draw(st.booleans()):
            made.append(chunks.tool_result("bash", f"again {n}\n" * 5, call_id=call_id))
    return made


class TestARebuildAfterItsOwnAppend:
    def test_any_history_builds_as_a_newly_opened_store_builds_it(
        self, small_pages: None, open_store: Any
    ) -> None:
        @settings(
            max_examples=examples(25),
            deadline=None,
            suppress_health_check=[HealthCheck.too_slow],
        )
        @given(history=agent_runs(max_steps=50), data=st.data())
        def any_history(history: MemoryState, data: st.DataObject) -> None:
            store = open_store()
            thread_id = f"own{next(_threads)}"
            store.create_thread(thread_id)
            pending = list(history) + data.draw(reused_calls(history), label="reused")
            cut = data.draw(st.integers(0, len(pending)), label="first append")
            store.append(thread_id, *pending[:cut])
            del pending[:cut]
            try:
                while True:
                    options = {
                        "max_tokens": data.draw(st.integers(60, 600), label="max_tokens"),
                        "strategy": data.draw(st.sampled_from(["recent", "stable"])),
                        "tokenizer": GPT4O,
                    }
                    try:
                        result = store.build(thread_id, **options)
                    except MemctxError as exc:  # a newly opened store fails alike
                        with pytest.raises(type(exc)):
                            fresh_build(open_store, thread_id, **options)
                    else:
                        same_build(result, fresh_build(open_store, thread_id, **options))
                    if not pending:
                        break
                    size = data.draw(st.integers(1, 6), label="append")
                    store.append(thread_id, *pending[:size])
                    del pending[:size]
            finally:
                store.close()

        any_history()

    def test_a_call_id_used_again_brings_the_older_members_of_its_unit(
        self, small_pages: None, open_store: Any, store: MemoryStore
    ) -> None:
        store.create_thread("t")
        store.append(
            "t",
            chunks.tool_call("sh", {"cmd": "serve"}, call_id="c1", id="first"),
            chunks.tool_result("sh", "served", call_id="c1", id="first-result"),
            *(chunks.assistant("step " * 30, id=f"s{n}") for n in range(40)),
        )
        store.build("t", max_tokens=200, tokenizer=GPT4O)
        store.append("t", chunks.tool_call("sh", {"cmd": "again"}, call_id="c1", id="again"))

        before = ROWS_READ.count
        result = store.build("t", max_tokens=200, tokenizer=GPT4O)

        assert ROWS_READ.count - before > 0  # the unit's first members, too far back
        assert {"first", "first-result", "again"} <= set(result.included_chunk_ids)
        same_build(result, fresh_build(open_store, "t", max_tokens=200, tokenizer=GPT4O))

    def test_it_reads_no_row_and_records_the_build_as_a_read_one_does(
        self, open_store: Any, store: MemoryStore
    ) -> None:
        store.create_thread("t")
        store.append("t", *(chunks.user(f"turn {n} " * 20, id=f"u{n}") for n in range(30)))
        store.build("t", max_tokens=300, tokenizer=GPT4O)
        store.append("t", chunks.assistant("one more " * 10, id="new"))

        before = ROWS_READ.count
        result = store.build("t", max_tokens=300, tokenizer=GPT4O)

        assert ROWS_READ.count == before
        payload = store.events("t", CONTEXT_BUILT)[-1].payload
        assert (payload["visible"], payload["chunks_read"], payload["tokens_counted"]) == (31, 1, 1)
        assert payload["included"] == len(result.included_chunk_ids)
        again = fresh_build(open_store, "t", max_tokens=300, tokenizer=GPT4O)
        same_build(result, again)
        # Its count was stored: the newly opened store counted nothing.
        assert store.events("t", CONTEXT_BUILT)[-1].payload["tokens_counted"] == 0

    def test_a_chunk_of_another_time_zone_is_in_it_as_a_read_gives_it(
        self, open_store: Any, store: MemoryStore
    ) -> None:
        """The rebuild takes the chunks the append was given where they are the chunks a
        read gives: a ``created_at`` in UTC (another offset reads back as a fixed one)."""
        paris = dt.timezone(dt.timedelta(hours=1), "CET")
        store.create_thread("t")
        store.append("t", *(chunks.user(f"turn {n} " * 20, id=f"u{n}") for n in range(5)))
        store.build("t", max_tokens=300, tokenizer=GPT4O)
        when = dt.datetime(2026, 5, 17, 9, 30, tzinfo=paris)
        store.append("t", chunks.user("in Paris", id="p", created_at=when), chunks.user("here"))

        result = store.build("t", max_tokens=300, tokenizer=GPT4O)

        fresh = fresh_build(open_store, "t", max_tokens=300, tokenizer=GPT4O)
        same_build(result, fresh)
        zones = [c.created_at.tzname() for c in result.included_chunks]
        assert zones == [c.created_at.tzname() for c in fresh.included_chunks]
        assert zones[-2:] == ["UTC+01:00", "UTC"]


class TestAnotherWriter:
    def test_an_append_by_another_store_before_the_rebuild_is_in_it(
        self, open_store: Any, store: MemoryStore
    ) -> None:
        other = open_store()
        store.create_thread("t")
        store.append("t", *(chunks.user(f"turn {n} " * 20, id=f"u{n}") for n in range(30)))
        store.build("t", max_tokens=300, tokenizer=GPT4O)
        store.append("t", chunks.assistant("mine", id="mine"))
        other.append("t", chunks.user("theirs", id="theirs"))
        events, read = built_events(store, "t"), ROWS_READ.count

        result = store.build("t", max_tokens=300, tokenizer=GPT4O)

        # Built from its own append first: that record found the thread changed and wrote
        # nothing; built again, reading only the row the other store appended.
        assert ROWS_READ.count - read == 1
        assert result.included_chunk_ids[-2:] == ("mine", "theirs")
        assert built_events(store, "t") == events + 1  # the build is recorded once
        same_build(result, fresh_build(open_store, "t", max_tokens=300, tokenizer=GPT4O))
        assert store.events("t", CONTEXT_BUILT)[-1].payload["tokens_counted"] == 0

    def test_a_view_change_by_another_store_before_the_rebuild_is_in_it(
        self, open_store: Any, store: MemoryStore
    ) -> None:
        store.create_thread("t")
        store.append("t", *(chunks.user(f"turn {n} " * 20, id=f"u{n}") for n in range(30)))
        store.build("t", max_tokens=300, tokenizer=GPT4O)
        store.append("t", chunks.assistant("mine", id="mine"))
        open_store().truncate("t", keep_last=5)

        result = store.build("t", max_tokens=300, tokenizer=GPT4O)

        assert len(result.included_chunk_ids) + len(result.excluded_chunk_ids) == 5
        same_build(result, fresh_build(open_store, "t", max_tokens=300, tokenizer=GPT4O))

    def test_a_build_that_fails_for_the_state_the_thread_has_left_is_built_again(
        self, open_store: Any, store: MemoryStore
    ) -> None:
        """The pinned chunks of the state before the other store's truncation do not fit
        the budget; those of the state after do."""
        pinned = [chunks.user("remember " * 20, id=f"p{n}", pinned=True) for n in range(4)]
        store.create_thread("t")
        store.append("t", *pinned[:2])
        store.build("t", max_tokens=100, tokenizer=GPT4O)
        store.append("t", *pinned[2:])
        open_store().truncate("t", keep_last=2)

        result = store.build("t", max_tokens=100, tokenizer=GPT4O)

        assert result.included_chunk_ids == ("p2", "p3")
        with pytest.raises(BudgetExceededError):  # the state the rebuild took first
            create_builder(GPT4O).build(MemoryState(pinned), 100)

    @pytest.mark.parametrize("api", ["sync"], indirect=True)
    def test_an_append_while_the_rebuild_runs_makes_it_write_nothing_and_build_again(
        self, open_store: Any, store: MemoryStore, store_url: str
    ) -> None:
        """On PostgreSQL the rebuild holds no lock: another store appends while it builds
        (its tokenizer appends, once), so the thread is no longer the state it built. (On
        SQLite the rebuild's transaction holds the write lock from its start.)"""
        if not store_url.startswith("postgresql"):
            pytest.skip("SQLite's rebuild holds the write lock: no append lands during it")
        other = open_store()
        store.create_thread("t")
        store.append("t", *(chunks.user(f"turn {n} " * 20, id=f"u{n}") for n in range(30)))
        store.build("t", max_tokens=300, tokenizer=GPT4O)
        store.append("t", chunks.assistant("mine", id="mine"))
        events = built_events(store, "t")

        class Interrupting(TiktokenTokenizer):
            """gpt-4o's encoding; the first count appends a chunk through another store."""

            appended = False

            def count(self, text: str) -> int:
                if not self.appended:
                    self.appended = True
                    other.append("t", chunks.user("theirs", id="theirs"))
                return super().count(text)

        result = store.build("t", max_tokens=300, tokenizer=Interrupting("o200k_base"))

        assert result.included_chunk_ids[-2:] == ("mine", "theirs")
        assert built_events(store, "t") == events + 1
        payload = store.events("t", CONTEXT_BUILT)[-1].payload
        assert payload["visible"] == 32
        same_build(result, fresh_build(open_store, "t", max_tokens=300, tokenizer=GPT4O))
        # The counts of the build that wrote nothing were written by the one that did.
        assert store.events("t", CONTEXT_BUILT)[-1].payload["tokens_counted"] == 0


@pytest.fixture
def round_trips(store: MemoryStore, store_url: str) -> Iterator[Callable[[], int]]:
    """How many round trips the store's connections have made so far: on PostgreSQL the
    queries and syncs libpq sent (its protocol trace), on SQLite the statements run."""
    postgres = store_url.startswith("postgresql")
    counted: list[str] = []
    with tempfile.TemporaryFile("w+") as trace:

        def listen(dbapi_connection: Any, record: Any) -> None:
            if postgres:
                from psycopg import pq

                dbapi_connection.pgconn.trace(trace.fileno())
                flags = pq.Trace.SUPPRESS_TIMESTAMPS | pq.Trace.REGRESS_MODE
                dbapi_connection.pgconn.set_trace_flags(flags)
            else:
                assert isinstance(dbapi_connection, sqlite3.Connection)
                dbapi_connection.set_trace_callback(counted.append)

        def count() -> int:
            if not postgres:
                return len(counted)
            trace.flush()
            trace.seek(0)
            sent = [line for line in trace.read().splitlines() if line.startswith("F\t")]
            trace.seek(0, os.SEEK_END)
            return sum(1 for line in sent if "\tQuery\t" in line or "\tSync" in line)

        engines = [store.engine] if postgres else [store.engine, store._build_write]
        for engine in engines:
            engine.dispose()  # every connection from now on is a new one, traced
            event.listen(engine, "connect", listen)
        yield count
        store.close()  # (its connections back in the pool, which is closed next)
        for engine in engines:
            event.remove(engine, "connect", listen)
            engine.dispose()


@pytest.mark.parametrize("api", ["sync"], indirect=True)
class TestRoundTrips:
    def test_an_append_and_the_rebuild_after_it_take_a_fixed_number_of_round_trips(
        self, store: MemoryStore, store_url: str, round_trips: Callable[[], int]
    ) -> None:
        """PostgreSQL: the record, which checks the thread's state, in one statement.
        SQLite: ``BEGIN IMMEDIATE``, the check, the count, the event, ``COMMIT``."""
        store.create_thread("t")
        store.append("t", *(chunks.user(f"turn {n} " * 20, id=f"u{n}") for n in range(30)))
        store.build("t", max_tokens=300, tokenizer=GPT4O)
        spent, appends = [], []
        for n in range(3):  # the statement is prepared on its second run: counted alike
            before = round_trips()
            store.append("t", chunks.assistant(f"step {n}", id=f"a{n}"))
            appends.append(round_trips() - before)
            before = round_trips()
            store.build("t", max_tokens=300, tokenizer=GPT4O)
            spent.append(round_trips() - before)

        expected = 1 if store_url.startswith("postgresql") else 5
        assert spent[-1] == expected, spent
        assert max(spent) <= 2 * expected
        if store_url.startswith("postgresql"):
            # The append: BEGIN, lock the thread, check the ids (with the units' members),
            # insert, index for search, move last_seq, COMMIT. (On SQLite the statements
            # counted include those FTS5 runs inside its search index.)
            assert appends[-1] == 7, appends  # (the first ones also prepare statements)
