"""The store suite's own isolation: a PostgreSQL test starts from the store's tables, empty.

The store tests share one schema per worker process (tests/store/conftest.py); what
one test wrote must be gone before the next, and a test that changed the tables
themselves must not hand them on.
"""

from __future__ import annotations

from typing import Any

import pytest
from sqlalchemy import create_engine, text

from memctx import chunks
from memctx.store import SCHEMA_VERSION, MemoryStore

pytestmark = pytest.mark.postgres


def _rows_and_sequences(url: str) -> tuple[dict[str, int], list[Any]]:
    engine = create_engine(url)
    try:
        with engine.connect() as connection:
            tables = connection.execute(
                text("SELECT tablename FROM pg_tables WHERE schemaname = current_schema()")
            ).scalars()
            counts = {
                t: connection.execute(text(f'SELECT count(*) FROM "{t}"')).scalar_one()
                for t in tables
            }
            sequences = connection.execute(
                text("SELECT last_value FROM pg_sequences WHERE schemaname = current_schema()")
            ).scalars()
            return counts, list(sequences)
    finally:
        engine.dispose()


class TestTheSharedSchema:
    def test_what_a_test_wrote_is_gone_for_the_next_and_sequences_restart(
        self, postgres_server: Any
    ) -> None:
        url = postgres_server.empty_database()
        with MemoryStore.open(url) as store:
            store.create_thread("t1")
            store.append("t1", chunks.user("hello world", id="u1"))
            store.build("t1", max_tokens=100)
        written, _ = _rows_and_sequences(url)

        assert postgres_server.empty_database() == url
        counts, sequences = _rows_and_sequences(url)

        assert written["memctx_chunks"] == 1
        assert counts == {t: int(t == "memctx_schema") for t in written}
        assert sequences == [None] * len(sequences)  # as new sequences: never used
        assert sequences

    def test_a_store_opens_it_as_a_database_of_this_version(self, postgres_server: Any) -> None:
        url = postgres_server.empty_database()

        with MemoryStore.open(url) as store:
            assert store.list_threads() == []
        engine = create_engine(url)
        with engine.connect() as connection:
            rows = connection.execute(text("SELECT id, version FROM memctx_schema")).all()
        engine.dispose()

        assert [tuple(r) for r in rows] == [(1, SCHEMA_VERSION)]

    @pytest.mark.parametrize(
        "change",
        [
            "ALTER TABLE memctx_chunks ADD COLUMN extra INTEGER",
            "DROP INDEX memctx_search_terms",
            "UPDATE memctx_schema SET version = 99",
            "DROP TRIGGER memctx_search_thread_created ON memctx_threads",
        ],
    )
    def test_a_test_that_changed_the_tables_hands_on_a_new_schema(
        self, postgres_server: Any, change: str
    ) -> None:
        url = postgres_server.empty_database()
        engine = create_engine(url)
        with engine.begin() as connection:
            connection.execute(text(change))
        engine.dispose()

        fresh = postgres_server.empty_database()

        assert fresh != url
        with MemoryStore.open(fresh) as store:
            store.create_thread("t1")
            store.append("t1", chunks.user("hello world", id="u1"))
            assert [hit.chunk.id for hit in store.search("t1", "hello")] == ["u1"]
