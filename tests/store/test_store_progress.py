"""``on_progress``: large appends, imports and exports tell how far they are, on both store
classes and both databases."""

from __future__ import annotations

import pytest

from memctx import MemoryState, chunks
from memctx.statefile import state_to_dict
from memctx.store import MemoryStore

COUNT = 2500  # more than one INSERT part (2,000 rows)


class Recorder:
    def __init__(self, fail_after: int | None = None) -> None:
        self.seen: list[tuple[int, int]] = []
        self.fail_after = fail_after

    def __call__(self, done: int, total: int) -> None:
        self.seen.append((done, total))
        if self.fail_after is not None and done > self.fail_after:
            raise KeyboardInterrupt  # what a user pressing Ctrl-C during a bar raises

    def check(self, total: int, *, at_least: int = 50) -> None:
        """From (0, total) to (total, total), in order, ``at_least`` to about a hundred
        times (some steps are taken many at once: a whole state read, 2,000 rows written)."""
        assert self.seen[0] == (0, total)
        assert self.seen[-1] == (total, total)
        dones = [done for done, _ in self.seen]
        assert dones == sorted(set(dones))
        assert at_least <= len(self.seen) <= 102


def many(prefix: str = "c") -> list[chunks.Chunk]:
    return [chunks.user(f"message {i}", id=f"{prefix}{i}") for i in range(COUNT)]


def test_append_tells_each_chunk_checked_then_stored(store: MemoryStore) -> None:
    store.create_thread("t")
    progress = Recorder()

    added = store.append("t", *many(), on_progress=progress)

    assert added == COUNT
    progress.check(2 * COUNT)
    assert [c.id for c in store.get_all_chunks("t")] == [f"c{i}" for i in range(COUNT)]


def test_a_retried_append_still_ends_at_the_total(store: MemoryStore) -> None:
    store.create_thread("t")
    store.append("t", *many()[:1000])
    progress = Recorder()

    assert store.append("t", *many(), on_progress=progress) == COUNT - 1000

    progress.check(2 * COUNT)


def test_an_exception_from_the_callback_aborts_the_append(store: MemoryStore) -> None:
    store.create_thread("t")

    with pytest.raises(KeyboardInterrupt):
        store.append("t", *many(), on_progress=Recorder(fail_after=3 * COUNT // 2))

    assert store.get_all_chunks("t") == ()


def test_export_tells_each_chunk_read_and_written(store: MemoryStore) -> None:
    store.create_thread("t")
    store.append("t", *many())
    store.truncate("t", keep_last=COUNT // 2)
    progress = Recorder()

    snapshot = store.export_snapshot("t", on_progress=progress)

    assert snapshot == store.export_snapshot("t")
    progress.check(2 * COUNT + COUNT // 2)


def test_import_tells_each_chunk_checked_and_written(store: MemoryStore) -> None:
    store.create_thread("t")
    store.append("t", *many())
    store.truncate("t", keep_last=COUNT // 2)
    snapshot = store.export_snapshot("t")
    progress = Recorder()

    store.import_snapshot(snapshot, thread_id="u", on_progress=progress)

    progress.check(2 * COUNT + 2 * (COUNT // 2), at_least=20)
    assert store.get_current_state("u") == store.get_current_state("t").with_thread_id("u")


def test_importing_a_state_file_tells_its_chunks_read_checked_and_written(
    store: MemoryStore,
) -> None:
    progress = Recorder()

    store.import_snapshot(state_to_dict(MemoryState(many(), thread_id="s")), on_progress=progress)

    progress.check(3 * COUNT, at_least=20)
    assert len(store.get_current_state("s")) == COUNT


def test_a_bad_snapshot_fails_before_anything_is_written(store: MemoryStore) -> None:
    data = state_to_dict(MemoryState(many(), thread_id="s"))
    data["chunks"][-1]["type"] = "NOPE"
    progress = Recorder()

    with pytest.raises(Exception, match="NOPE"):
        store.import_snapshot(data, on_progress=progress)

    assert progress.seen == [(0, 3 * COUNT)]
    assert store.list_threads() == []
