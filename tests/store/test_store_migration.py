"""A database written by memctx 0.1.0 (store schema 1) is migrated in place when opened."""

from __future__ import annotations

import json
import shutil
import sqlite3
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import create_engine, text
from store_apis import BACKENDS, open_with

from memctx import StoreError, chunks, create_builder, create_tokenizer
from memctx.store import SCHEMA_VERSION, SNAPSHOT_STORE_VERSION, MemoryStore

DATA = Path(__file__).parent / "data"
EXPECTED: dict[str, Any] = json.loads((DATA / "store-schema-1.json").read_text())


TABLES = ("memctx_schema", "memctx_threads", "memctx_batches", "memctx_chunks",
          "memctx_events", "memctx_token_counts")  # fmt: skip


@pytest.fixture(params=BACKENDS)
def old_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """A database as 0.1.0 left it: a copy of its SQLite file, or its tables and rows on PostgreSQL.

    On PostgreSQL, the tables are created by the DDL 0.1.0's models emit
    there and filled with the rows of the SQLite file.
    """
    path = tmp_path / "old.db"
    shutil.copyfile(DATA / "store-schema-1.db", path)
    if request.param == "sqlite":
        return f"sqlite:///{path}"
    url: str = request.getfixturevalue("postgres_server").new_database()
    engine = create_engine(url)
    with sqlite3.connect(path) as source, engine.begin() as target:
        target.exec_driver_sql((DATA / "store-schema-1.postgresql.sql").read_text())
        for table in TABLES:
            cursor = source.execute(f"SELECT * FROM {table}")
            columns = [d[0] for d in cursor.description]
            rows = [dict(zip(columns, row, strict=True)) for row in cursor]
            if rows:
                names = ", ".join(columns)
                values = ", ".join(f":{c}" for c in columns)
                target.execute(text(f"INSERT INTO {table} ({names}) VALUES ({values})"), rows)
        target.exec_driver_sql(
            "SELECT setval(pg_get_serial_sequence('memctx_events', 'id'), "
            "(SELECT MAX(id) FROM memctx_events))"
        )
    engine.dispose()
    return url


def as_migrated(snapshot: dict[str, Any]) -> dict[str, Any]:
    """What the current release exports for a thread that 0.1.0 exported as ``snapshot``."""
    store = {**snapshot["store"], "version": SNAPSHOT_STORE_VERSION, "metadata": {}}
    return {**snapshot, "store": store}


class TestMigration:
    def test_opening_migrates_to_the_current_schema(self, old_url: str, api: str) -> None:
        open_with(api, old_url).close()

        engine = create_engine(old_url)
        with engine.connect() as connection:
            version = connection.execute(text("SELECT version FROM memctx_schema")).scalar()
        engine.dispose()

        assert version == SCHEMA_VERSION

    def test_threads_chunks_batches_and_events_read_back_as_before(
        self, old_url: str, api: str
    ) -> None:
        with open_with(api, old_url) as store:
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

    def test_the_migrated_database_takes_new_writes(self, old_url: str, api: str) -> None:
        with open_with(api, old_url) as store:
            store.append("chat", chunks.user("after", id="after"), thread_metadata={"v": 2})
            store.rollback("chat", batch=1)

        with MemoryStore.open(old_url) as store:
            assert store.get_current_state("chat").ids[-1] == "after"
            assert store.thread_metadata("chat") == {"v": 2}
            assert len(store.get_all_chunks("chat")) == 10

    def test_the_light_columns_of_stored_chunks_are_filled_in(self, old_url: str, api: str) -> None:
        open_with(api, old_url).close()

        engine = create_engine(old_url)
        with engine.connect() as connection:
            rows = connection.execute(
                text(
                    "SELECT seq, type, unit_key, unit_opener, pinned FROM memctx_chunks"
                    " WHERE thread_id = 'chat' ORDER BY seq"
                )
            ).all()
        engine.dispose()
        units = {seq: (key, bool(opener)) for seq, _, key, opener, _ in rows if key is not None}
        assert units == {4: ('["call", "c1"]', True), 5: ('["call", "c1"]', False)}
        assert not any(pinned for *_, pinned in rows)

    def test_every_stored_chunk_is_searchable(self, old_url: str, api: str) -> None:
        with open_with(api, old_url) as store:
            hits = store.search("chat", "contents of x", limit=1)
            read = store.search("copy", "read_file", types=["WORKFLOW"])
            store.delete_thread("copy")
            assert store.search("chat", "read_file", limit=10) != ()

        assert [(hit.chunk.id, hit.position) for hit in hits] == [("tr1", 4)]
        assert [hit.chunk.id for hit in read] == ["tc1"]

    def test_a_paged_build_of_a_migrated_thread_equals_the_in_memory_build(
        self, old_url: str, api: str
    ) -> None:
        tokenizer = create_tokenizer("gpt-4o")
        with open_with(api, old_url) as store:
            store.append(
                "chat", *(chunks.user(f"later {n} " * 10, id=f"later{n}") for n in range(100))
            )
            state = store.get_current_state("chat")
            result = store.build("chat", max_tokens=120, tokenizer=tokenizer)
            read = store.events("chat")[-1].payload["chunks_read"]

        expected = create_builder().build(state, max_tokens=120, tokenizer=tokenizer)
        assert result.messages == expected.messages
        assert result.excluded_chunk_ids == expected.excluded_chunk_ids
        assert read < len(state)

    def test_cached_token_counts_of_another_renderer_chain_are_not_reused(
        self, old_url: str, api: str
    ) -> None:
        # The old release keyed its counts by renderer class names; today's key is each
        # renderer's configuration, so those counts are recounted once, then reused.
        tokenizer = create_tokenizer("gpt-4o")
        with open_with(api, old_url) as store:
            result = store.build("chat", max_tokens=50, tokenizer=tokenizer)
            first = store.events("chat")[-1].payload
            store.build("chat", max_tokens=50, tokenizer=tokenizer)
            second = store.events("chat")[-1].payload

        assert first["tokens_reused"] == 0
        assert first["tokens_counted"] > 0
        assert second["tokens_counted"] == 0
        assert second["tokens_reused"] == first["tokens_counted"]
        assert result.token_count <= 50


def test_a_migration_that_fails_leaves_the_database_as_it_was(tmp_path: Path) -> None:
    path = tmp_path / "old.db"
    shutil.copyfile(DATA / "store-schema-1.db", path)
    with sqlite3.connect(path) as connection:  # a column the migration is about to add
        connection.execute("ALTER TABLE memctx_threads ADD COLUMN metadata TEXT")

    def dump() -> list[str]:
        with sqlite3.connect(path) as connection:
            return list(connection.iterdump())

    before = dump()

    with pytest.raises(StoreError, match=r"cannot open .*metadata"):
        MemoryStore.open(path)
    assert dump() == before
    assert 'INSERT INTO "memctx_schema" VALUES(1,1);' in before


class TestMigrationToVersion5:
    """A database of schema 4 gains the indexes of paged builds and ``memctx_waiting``."""

    def test_the_waiting_calls_of_a_version_4_database_are_found(
        self, store_url: str, api: str
    ) -> None:
        tokenizer = create_tokenizer("gpt-4o")
        with MemoryStore.open(store_url) as store:
            store.create_thread("t")
            store.append(
                "t",
                chunks.system("Be brief.", id="sys"),
                chunks.tool_call("sh", {"cmd": "a"}, call_id="c1", id="call1"),
                chunks.tool_call("sh", {"cmd": "b"}, call_id="c2", id="call2"),
                *(chunks.assistant(f"step {n} " + "word " * 20, id=f"s{n}") for n in range(40)),
                chunks.tool_result("sh", "done", call_id="c1", id="res1"),
            )
            state = store.get_current_state("t")
        engine = create_engine(store_url)
        with engine.begin() as connection:
            before = connection.execute(text("SELECT * FROM memctx_waiting")).all()
            connection.execute(text("DROP TABLE memctx_waiting"))
            connection.execute(text("DROP INDEX memctx_chunks_special"))
            connection.execute(text("DROP INDEX memctx_chunks_unit"))
            connection.execute(text("UPDATE memctx_schema SET version = 4"))

        with open_with(api, store_url) as store:
            result = store.build("t", max_tokens=200, tokenizer=tokenizer)
        with engine.connect() as connection:
            after = connection.execute(text("SELECT * FROM memctx_waiting")).all()
            version = connection.execute(text("SELECT version FROM memctx_schema")).scalar()
        engine.dispose()

        assert len(before) == 1
        assert (version, after) == (SCHEMA_VERSION, before)
        expected = create_builder().build(state, max_tokens=200, tokenizer=tokenizer)
        assert result.messages == expected.messages
        assert "call2" in result.included_chunk_ids
        assert result.excluded_chunk_ids == expected.excluded_chunk_ids
