"""The reads of a paged build: plain statements on the driver, through their own indexes.

A paged build's statements (:mod:`memctx.store._plain`) run on the driver's
cursor on both backends: a list parameter is one array on PostgreSQL and a
placeholder per value on SQLite, and a database error is a ``StoreError`` as
any other. SQLite has no statistics until ``ANALYZE`` runs, and then prefers
the covering index of every row of the thread to the partial (or unique)
index that holds just the rows a read wants: the reads name their index.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import Engine, create_engine

from memctx import StoreError, chunks, create_tokenizer
from memctx.store import MemoryStore, _paged_reads


@pytest.fixture
def thread(store: MemoryStore) -> str:
    """A thread with a system prompt, a call far back still waiting, and many steps."""
    store.create_thread("t")
    made: list[Any] = [chunks.system("You are a coding agent.", id="sys")]
    made.append(chunks.tool_call("sh", {"cmd": "serve"}, call_id="bg", id="bg"))
    for n in range(200):
        made.append(chunks.tool_call("sh", {"cmd": f"ls {n}"}, call_id=f"c{n}", id=f"call{n}"))
        made.append(chunks.tool_result("sh", "file\n" * 20, call_id=f"c{n}", id=f"res{n}"))
    store.append("t", *made)
    return "t"


@pytest.mark.parametrize("api", ["sync"], indirect=True)
class TestPlainStatements:
    def test_a_list_parameter_of_any_length_reads_its_rows(
        self, store: MemoryStore, thread: str
    ) -> None:
        c0, c7, nope = '["call", "c0"]', '["call", "c7"]', '["call", "nope"]'
        cases = [
            ([c0], {"call0", "res0"}),
            ([c0, c7, nope], {"call0", "res0", "call7", "res7"}),
            ([c7, c7, nope] * 3, {"call7", "res7"}),
        ]
        with store.engine.connect() as connection:
            for keys, expected in cases:
                rows = _paged_reads._UNITS.tuples(connection, {"thread_id": thread, "keys": keys})

                assert sorted(r[1] for r in rows) == sorted(expected)

    def test_rows_are_read_by_column_name(self, store: MemoryStore, thread: str) -> None:
        with store.engine.connect() as connection:
            (row,) = _paged_reads._IDS.rows(connection, {"thread_id": thread, "ids": ["sys"]})

        assert (row.chunk_id, row.type, row.seq) == ("sys", "SYSTEM", 1)

    def test_a_database_error_in_a_paged_build_is_a_store_error(
        self, store: MemoryStore, thread: str, sql: Engine
    ) -> None:
        with sql.begin() as connection:
            connection.exec_driver_sql("DROP TABLE memctx_waiting")

        with pytest.raises(StoreError, match="database error"):
            store.build(thread, max_tokens=500, tokenizer=create_tokenizer("gpt-4o"))


class TestSqlitePlans:
    """Without statistics, the plan of each read names the index that holds its rows."""

    def test_the_special_unit_and_id_reads_do_not_walk_every_row_of_the_thread(
        self, tmp_path: Path
    ) -> None:
        url = f"sqlite:///{tmp_path / 'plans.db'}"
        with MemoryStore.open(url) as store:
            store.create_thread("t")
            store.append("t", *(chunks.user(f"m{i}", id=f"m{i}") for i in range(50)))
        reads = {
            "special": (_paged_reads._SPECIAL, {"thread_id": "t", "base": 0}),
            "units": (_paged_reads._UNITS, {"thread_id": "t", "keys": ["a", "b"]}),
            "ids": (_paged_reads._IDS, {"thread_id": "t", "ids": ["m1", "m2"]}),
        }
        engine = create_engine(url)
        with engine.connect() as connection:
            for name, (plain, params) in reads.items():
                statement, flat = plain.for_sqlite(params)
                plan = connection.exec_driver_sql(f"EXPLAIN QUERY PLAN {statement}", flat).all()
                steps = " / ".join(str(step[-1]) for step in plan)

                assert "memctx_chunks_light" not in steps, f"{name}: {steps}"
                assert "USING" in steps, f"{name}: {steps}"
        engine.dispose()
