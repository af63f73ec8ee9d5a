"""store.compress and store.compact: view operations with their events, on SQLite and PostgreSQL."""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable, Sequence

import pytest

from memctx import Chunk, CompactionError, CompressionError, chunks
from memctx.compaction import CompactionPolicy, CompactionReport, ExtractiveSummarizer
from memctx.compress import CompressionReport, MaxChars, MaxChunks, TrimToolOutputs
from memctx.store import CONTEXT_COMPACTED, CONTEXT_COMPRESSED, MemoryStore
from memctx.store._context_ops import ATTEMPTS

Rows = Callable[[], dict[str, list[tuple[object, ...]]]]
NOW = dt.datetime(2026, 11, 24, 1, 0, tzinfo=dt.UTC)


@pytest.fixture
def agent(store: MemoryStore) -> str:
    """A thread with a task, eight answered calls with long outputs, and a call still waiting."""
    store.create_thread("agent")
    made: list[Chunk] = [chunks.system("Be terse.", id="s"), chunks.user("Fix it.", id="task")]
    for n in range(8):
        made.append(
            chunks.tool_call("bash", {"command": f"step {n}"}, call_id=f"c{n}", id=f"call{n}")
        )
        made.append(chunks.tool_result("bash", "out " * 300, call_id=f"c{n}", id=f"res{n}"))
    made.append(chunks.tool_call("bash", {"command": "make"}, call_id="w", id="waiting"))
    store.append("agent", *made)
    return "agent"


def visible(store: MemoryStore, thread: str) -> tuple[str, ...]:
    return store.get_current_state(thread).ids


class TestCompress:
    def test_the_compressed_chunks_become_the_view_and_the_history_keeps_all(
        self, store: MemoryStore, agent: str
    ) -> None:
        before = store.get_current_state(agent)
        report = store.compress(agent, [TrimToolOutputs(keep_recent=2, max_chars=100)])
        after = store.get_current_state(agent)
        assert len(report.replaced_ids) == 6
        assert [report.replaced_ids.get(c.id, c.id) for c in before] == list(after.ids)
        history = {c.id for c in store.get_all_chunks(agent)}
        assert history == set(before.ids) | set(after.ids)
        batch = store.batches(agent)[-1]
        assert (batch.operation, batch.params["compressors"][0]["name"]) == (
            "compress",
            "TrimToolOutputs",
        )

    def test_the_event_reads_back_as_the_same_report(self, store: MemoryStore, agent: str) -> None:
        report = store.compress(agent, [MaxChunks(5), MaxChars(200)])
        (event,) = store.events(agent, kind=CONTEXT_COMPRESSED)
        assert CompressionReport.from_event(event.payload) == report
        assert (
            event.payload["original_count"],
            event.payload["compressed_count"],
            event.payload["max_messages"],
            event.payload["max_chars_per_message"],
        ) == (report.original_count, report.compressed_count, 5, 200)

    def test_nothing_cut_writes_nothing(
        self, store: MemoryStore, agent: str, db_rows: Rows
    ) -> None:
        rows = db_rows()
        report = store.compress(agent, [MaxChars(100_000)])
        assert not report.changed
        assert db_rows() == rows

    def test_rollback_restores_the_view_exactly(self, store: MemoryStore, agent: str) -> None:
        before = store.get_current_state(agent)
        store.compress(agent, [MaxChars(50)])
        store.rollback(agent, store.batches(agent)[-2].number)
        assert store.get_current_state(agent) == before

    def test_a_compressor_that_breaks_a_rule_writes_nothing(
        self, store: MemoryStore, agent: str, db_rows: Rows
    ) -> None:
        rows = db_rows()
        with pytest.raises(CompressionError, match="protected chunk 'waiting'"):
            store.compress(agent, [lambda s: s.filter(lambda c: c.id != "waiting")])
        assert db_rows() == rows


class TestCompact:
    def test_older_chunks_become_one_summary_in_the_view(
        self, store: MemoryStore, agent: str
    ) -> None:
        report = store.compact(agent, ExtractiveSummarizer(), keep_recent_tokens=400, now=NOW)
        state = store.get_current_state(agent)
        summary = state.get(report.summary_id)  # type: ignore[arg-type]
        assert summary.metadata.derived_from == report.covered_ids
        assert state.ids[0] == "s"
        assert "waiting" in state.ids
        assert store.batches(agent)[-1].operation == "compact"

    def test_the_summary_comes_back_from_the_database_with_its_types(
        self, store: MemoryStore, agent: str, open_store: Callable[[], MemoryStore]
    ) -> None:
        report = store.compact(agent, ExtractiveSummarizer(), keep_recent_tokens=400, now=NOW)
        reopened = open_store()
        summary = reopened.get_current_state(agent).get(report.summary_id)  # type: ignore[arg-type]
        meta = summary.metadata
        assert isinstance(meta.derived_from, tuple)
        assert (meta.derived_from, meta.original_count, meta.compacted_at) == (
            report.covered_ids,
            report.original_count,
            1_795_482_000_000,
        )
        (event,) = reopened.events(agent, kind=CONTEXT_COMPACTED)
        assert CompactionReport.from_event(event.payload) == report

    def test_rollback_restores_the_view_exactly(self, store: MemoryStore, agent: str) -> None:
        before = store.get_current_state(agent)
        store.compact(agent, ExtractiveSummarizer(), keep_recent_tokens=0)
        store.rollback(agent, store.batches(agent)[-2].number)
        assert store.get_current_state(agent) == before

    def test_a_second_compaction_folds_the_first_and_both_roll_back(
        self, store: MemoryStore, agent: str
    ) -> None:
        original = store.get_current_state(agent)
        first = store.compact(agent, ExtractiveSummarizer(), keep_recent_tokens=600, now=NOW)
        after_first = store.get_current_state(agent)
        store.append(agent, chunks.tool_result("bash", "done", call_id="w", id="w_res"))
        store.append(agent, chunks.assistant("Built.", id="built"))
        second = store.compact(agent, ExtractiveSummarizer(), keep_recent_tokens=0, now=NOW)
        assert first.summary_id in second.covered_ids
        store.rollback(agent, store.batches(agent)[-2].number)
        assert visible(store, agent) == (*after_first.ids, "w_res", "built")
        store.rollback(agent, 0)
        assert visible(store, agent) == (*original.ids, "w_res", "built")

    def test_under_a_policy_nothing_is_written_until_it_is_due(
        self, store: MemoryStore, agent: str, db_rows: Rows
    ) -> None:
        rows = db_rows()
        lazy = CompactionPolicy(trigger=1_000_000, keep_recent=1000)
        report = store.compact(agent, ExtractiveSummarizer(), policy=lazy)
        assert (report.compacted, report.reason) == (False, "under trigger")
        assert db_rows() == rows
        eager = CompactionPolicy(trigger=500, keep_recent=200)
        assert store.compact(agent, ExtractiveSummarizer(), policy=eager).compacted

    def test_a_chunk_appended_while_summarising_stays_visible(
        self, store: MemoryStore, agent: str, open_store: Callable[[], MemoryStore]
    ) -> None:
        other = open_store()  # another process appending while the summary is written
        summarize = ExtractiveSummarizer()
        calls = []

        def slow(covered: Sequence[Chunk], previous: str | None) -> str:
            calls.append(len(covered))
            if len(calls) == 1:
                other.append(agent, chunks.user("meanwhile", id="meanwhile"))
            return summarize(covered, previous)

        report = store.compact(agent, slow, keep_recent_tokens=0)
        assert len(calls) == 1  # an append does not make the work redone
        assert report.compacted
        assert "meanwhile" not in report.covered_ids
        assert visible(store, agent)[-1] == "meanwhile"

    def test_a_view_operation_meanwhile_makes_it_compute_again_on_the_new_view(
        self, store: MemoryStore, agent: str, open_store: Callable[[], MemoryStore]
    ) -> None:
        other = open_store()
        calls: list[int] = []

        def contested(covered: Sequence[Chunk], previous: str | None) -> str:
            calls.append(len(covered))
            if len(calls) <= ATTEMPTS:  # every attempt outside the lock loses the race
                other.insert(agent, 1, chunks.user("inserted", id=f"ins{len(calls)}"))
            return "summary"

        report = store.compact(agent, contested, keep_recent_tokens=0)
        assert len(calls) == ATTEMPTS + 1  # the last one computed with the thread locked
        assert report.compacted
        inserted = {f"ins{n}" for n in range(1, ATTEMPTS + 1)}
        assert inserted <= set(report.covered_ids)  # it covered the view it was written over
        assert store.batches(agent)[-1].operation == "compact"

    def test_keep_recent_tokens_or_a_policy_is_needed(self, store: MemoryStore, agent: str) -> None:
        with pytest.raises(CompactionError, match="keep_recent_tokens or policy"):
            store.compact(agent, ExtractiveSummarizer())

    def test_a_failing_summarizer_writes_nothing(
        self, store: MemoryStore, agent: str, db_rows: Rows
    ) -> None:
        def broken(covered: Sequence[Chunk], previous: str | None) -> str:
            raise RuntimeError("quota")

        rows = db_rows()
        with pytest.raises(CompactionError, match="quota"):
            store.compact(agent, broken, keep_recent_tokens=0)
        assert db_rows() == rows
