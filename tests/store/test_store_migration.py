"""A database written by memctx 0.1.0 (store schema 1) is migrated in place when opened."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import text

from memctx import chunks, create_tokenizer
from memctx.store import SCHEMA_VERSION, SNAPSHOT_STORE_VERSION, MemoryStore

DATA = Path(__file__).parent / "data"
EXPECTED: dict[str, Any] = json.loads((DATA / "store-schema-1.json").read_text())


@pytest.fixture
def old_database(tmp_path: Path) -> Path:
    """A copy of the database 0.1.0 wrote."""
    path = tmp_path / "old.db"
    shutil.copyfile(DATA / "store-schema-1.db", path)
    return path


def as_migrated(snapshot: dict[str, Any]) -> dict[str, Any]:
    """What the current release exports for a thread that 0.1.0 exported as ``snapshot``."""
    store = {**snapshot["store"], "version": SNAPSHOT_STORE_VERSION, "metadata": {}}
    return {**snapshot, "store": store}


class TestMigration:
    def test_opening_migrates_to_the_current_schema(self, old_database: Path) -> None:
        with MemoryStore.open(old_database) as store, store.engine.connect() as connection:
            version = connection.execute(text("SELECT version FROM memctx_schema")).scalar()

        assert version == SCHEMA_VERSION

    def test_threads_chunks_batches_and_events_read_back_as_before(
        self, old_database: Path
    ) -> None:
        with MemoryStore.open(old_database) as store:
            threads = [
                {
                    "id": info.id,
                    "created_at": info.created_at.isoformat(),
                    "chunk_count": info.chunk_count,
                    "batch": info.batch,
                    "batch_count": info.batch_count,
                }
                for info in store.list_threads()
            ]
            snapshots = {t: store.export_snapshot(t) for t in EXPECTED["snapshots"]}
            events = {
                t: [
                    {
                        "kind": e.kind,
                        "payload": json.loads(json.dumps(e.payload)),
                        "created_at": e.created_at.isoformat(),
                    }
                    for e in store.events(t)
                ]
                for t in EXPECTED["events"]
            }

        assert threads == EXPECTED["threads"]
        assert snapshots == {t: as_migrated(s) for t, s in EXPECTED["snapshots"].items()}
        assert events == EXPECTED["events"]

    def test_the_migrated_database_takes_new_writes(self, old_database: Path) -> None:
        with MemoryStore.open(old_database) as store:
            store.append("chat", chunks.user("after", id="after"), thread_metadata={"v": 2})
            store.rollback("chat", batch=1)

        with MemoryStore.open(old_database) as store:
            assert store.get_current_state("chat").ids[-1] == "after"
            assert store.thread_metadata("chat") == {"v": 2}
            assert len(store.get_all_chunks("chat")) == 10

    def test_cached_token_counts_of_another_renderer_chain_are_not_reused(
        self, old_database: Path
    ) -> None:
        # The old release keyed its counts by renderer class names; today's key is each
        # renderer's configuration, so those counts are recounted once, then reused.
        tokenizer = create_tokenizer("gpt-4o")
        with MemoryStore.open(old_database) as store:
            result = store.build("chat", max_tokens=50, tokenizer=tokenizer)
            first = store.events("chat")[-1].payload
            store.build("chat", max_tokens=50, tokenizer=tokenizer)
            second = store.events("chat")[-1].payload

        assert first["tokens_reused"] == 0
        assert first["tokens_counted"] > 0
        assert second["tokens_counted"] == 0
        assert second["tokens_reused"] == first["tokens_counted"]
        assert result.token_count <= 50
