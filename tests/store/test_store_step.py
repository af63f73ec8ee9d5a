"""store.step: a context policy run on a stored thread, each change a batch, on both stores."""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable, Sequence

import pytest

from memctx import Chunk, PolicyError, chunks
from memctx.compaction import CompactionPolicy, CompactionReport, ExtractiveSummarizer
from memctx.compress import CompressionReport
from memctx.policy import ClearToolUses, ContextPolicy
from memctx.store import CONTEXT_COMPACTED, CONTEXT_COMPRESSED, MemoryStore

NOW = dt.datetime(2026, 11, 24, 1, 0, tzinfo=dt.UTC)


def policy(**options: object) -> ContextPolicy:
    settings: dict[str, object] = {
        "max_tokens": 3000,
        "clear_tool_uses": ClearToolUses(keep_recent=2),
        "compaction": CompactionPolicy(trigger=0.8, keep_recent=0.2),
    }
    settings.update(options)
    return ContextPolicy("claude-sonnet-4-6", **settings)  # type: ignore[arg-type]


@pytest.fixture
def agent(store: MemoryStore) -> str:
    """A task and twenty answered calls with outputs of ~300 tokens: over a 3,000 budget."""
    store.create_thread("agent")
    made: list[Chunk] = [chunks.system("Be terse.", id="s"), chunks.user("Fix it.", id="task")]
    for n in range(20):
        made.append(
            chunks.tool_call("bash", {"command": f"make t{n}"}, call_id=f"c{n}", id=f"call{n}")
        )
        made.append(chunks.tool_result("bash", "out " * 300, call_id=f"c{n}", id=f"res{n}"))
    store.append("agent", *made)
    return "agent"


class TestStep:
    def test_each_change_is_a_batch_with_its_event(self, store: MemoryStore, agent: str) -> None:
        before = len(store.batches(agent))
        step = store.step(agent, policy(), now=NOW)
        changes = [r for r in step.reports if r.kind != "skipped"]
        assert changes
        assert len(store.batches(agent)) == before + len(changes)
        kinds = [
            e.kind for e in store.events(agent) if e.kind in (CONTEXT_COMPRESSED, CONTEXT_COMPACTED)
        ]
        expected = [
            CONTEXT_COMPACTED if r.kind == "compacted" else CONTEXT_COMPRESSED for r in changes
        ]
        assert kinds == expected

    def test_the_view_is_the_step_state(self, store: MemoryStore, agent: str) -> None:
        step = store.step(agent, policy(), now=NOW)
        assert store.get_current_state(agent).ids == step.state.ids

    def test_the_events_read_back_as_reports(self, store: MemoryStore, agent: str) -> None:
        step = store.step(agent, policy(clear_tool_uses=None), now=NOW)
        (event,) = store.events(agent, CONTEXT_COMPACTED)
        report = CompactionReport.from_event(event.payload)
        assert report.covered_ids == step.reports[-1].detail.covered_ids  # type: ignore[union-attr]

    def test_a_clearing_event_reads_back(self, store: MemoryStore, agent: str) -> None:
        store.step(agent, policy(compaction=None), now=NOW)
        (event,) = store.events(agent, CONTEXT_COMPRESSED)
        assert CompressionReport.from_event(event.payload).changed

    def test_rollback_restores_the_view(self, store: MemoryStore, agent: str) -> None:
        original = store.get_current_state(agent).ids
        first = len(store.batches(agent)) - 1
        store.step(agent, policy(), now=NOW)
        store.rollback(agent, first)
        assert store.get_current_state(agent).ids == original

    def test_the_history_keeps_every_chunk(self, store: MemoryStore, agent: str) -> None:
        store.step(agent, policy(), now=NOW)
        ids = {c.id for c in store.get_all_chunks(agent)}
        assert {"res0", "call0", "task"} <= ids

    def test_nothing_due_writes_nothing(self, store: MemoryStore, agent: str) -> None:
        before = (len(store.batches(agent)), len(store.events(agent)))
        step = store.step(agent, ContextPolicy("claude-sonnet-4-6", max_tokens=100_000))
        assert not step.changed
        assert (len(store.batches(agent)), len(store.events(agent))) == before

    def test_a_failing_summarizer_leaves_the_thread_unchanged(
        self, store: MemoryStore, agent: str
    ) -> None:
        def broken(covered: Sequence[Chunk], previous: str | None) -> str:
            raise RuntimeError("down")

        before = (store.get_current_state(agent).ids, len(store.batches(agent)))
        with pytest.raises(PolicyError, match="summarizer"):
            store.step(agent, policy(clear_tool_uses=None, summarizer=broken))
        assert (store.get_current_state(agent).ids, len(store.batches(agent))) == before


class TestConcurrentAppends:
    def test_a_chunk_appended_while_the_policy_runs_stays_visible(
        self, store: MemoryStore, open_store: Callable[[], MemoryStore], agent: str
    ) -> None:
        other = open_store()
        summarize = ExtractiveSummarizer()

        def appending(covered: Sequence[Chunk], previous: str | None) -> str:
            other.append(agent, chunks.user("Also update the changelog.", id="late"))
            return summarize(covered, previous)

        step = store.step(agent, policy(clear_tool_uses=None, summarizer=appending), now=NOW)
        assert step.compacted
        visible = store.get_current_state(agent).ids
        assert visible[-1] == "late"
        assert visible[:-1] == step.state.ids
