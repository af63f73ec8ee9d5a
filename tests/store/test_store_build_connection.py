"""The connection a PostgreSQL store keeps for its paged builds, and the record's statement.

A store keeps one connection for its paged builds (one build at a time; another
thread's build meanwhile takes one from the pool), and runs a rebuild's record
through libpq, prepared once per connection. A kept connection the server ended
is replaced; a statement the server forgot is prepared again.
"""

from __future__ import annotations

import threading
from typing import Any

import pytest
from sqlalchemy import Engine, create_engine
from sqlalchemy.exc import DBAPIError
from store_builds import fresh_build, same_build

from memctx import TiktokenTokenizer, chunks
from memctx.store import CONTEXT_BUILT, MemoryStore
from memctx.store._prepared import Prepared

GPT4O = TiktokenTokenizer("o200k_base")


pytestmark = pytest.mark.parametrize("store_url", ["postgresql"], indirect=True)


def grown(store: MemoryStore, thread_id: str, turns: int = 30) -> None:
    """A thread of ``turns`` user turns, built once (the store keeps it for paged builds)."""
    store.create_thread(thread_id)
    store.append(
        thread_id, *(chunks.user(f"turn {n} " * 20, id=f"{thread_id}.{n}") for n in range(turns))
    )
    store.build(thread_id, max_tokens=300, tokenizer=GPT4O)


@pytest.mark.parametrize("api", ["sync"], indirect=True)
class TestTheKeptConnection:
    def test_a_rebuild_after_the_server_ended_it_builds_on_a_new_one(
        self, open_store: Any, store: MemoryStore, sql: Engine
    ) -> None:
        grown(store, "t")
        store.append("t", chunks.assistant("one", id="one"))
        store.build("t", max_tokens=300, tokenizer=GPT4O)  # the record, on the kept one
        store.append("t", chunks.assistant("two", id="two"))
        with sql.connect() as connection:
            ended = connection.exec_driver_sql(
                "SELECT pg_terminate_backend(pid) FROM pg_stat_activity"
                " WHERE starts_with(query, 'WITH current AS')"
            ).all()
        assert ended == [(True,)]
        events = len(store.events("t", CONTEXT_BUILT))

        result = store.build("t", max_tokens=300, tokenizer=GPT4O)

        assert result.included_chunk_ids[-2:] == ("one", "two")
        assert len(store.events("t", CONTEXT_BUILT)) == events + 1
        same_build(result, fresh_build(open_store, "t", max_tokens=300, tokenizer=GPT4O))

    def test_threads_of_one_store_build_at_once_as_a_newly_opened_store_does(
        self, open_store: Any, store: MemoryStore
    ) -> None:
        for n in range(4):
            grown(store, f"t{n}", turns=10)
        failures: list[BaseException] = []

        def work(n: int) -> None:
            try:
                for step in range(15):
                    store.append(f"t{n}", chunks.assistant(f"step {step}", id=f"t{n}.s{step}"))
                    store.build(f"t{n}", max_tokens=300, tokenizer=GPT4O)
            except BaseException as exc:  # reported by the test
                failures.append(exc)

        workers = [threading.Thread(target=work, args=(n,)) for n in range(4)]
        for worker in workers:
            worker.start()
        for worker in workers:
            worker.join()

        assert failures == []
        for n in range(4):
            assert len(store.events(f"t{n}", CONTEXT_BUILT)) == 1 + 15
            result = store.build(f"t{n}", max_tokens=300, tokenizer=GPT4O)
            same_build(result, fresh_build(open_store, f"t{n}", max_tokens=300, tokenizer=GPT4O))


class TestAPreparedStatement:
    @pytest.fixture
    def engine(self, store_url: str) -> Any:
        engine = create_engine(store_url, isolation_level="AUTOCOMMIT")
        yield engine
        engine.dispose()

    def test_one_the_server_forgot_is_prepared_again(self, engine: Engine) -> None:
        """psycopg deallocates every statement of a connection after a rollback."""
        statement = Prepared("memctx_test", "SELECT CAST($1 AS integer) + 1")
        with engine.connect() as connection:
            assert statement.run(connection, ["1"]) == 1
            connection.exec_driver_sql("DEALLOCATE ALL")

            assert statement.run(connection, ["2"]) == 1

    def test_its_error_is_raised_as_the_drivers_and_leaves_the_connection_usable(
        self, engine: Engine
    ) -> None:
        statement = Prepared("memctx_test", "SELECT 1 / CAST($1 AS integer)")
        with engine.connect() as connection:
            with pytest.raises(DBAPIError, match="division by zero"):
                statement.run(connection, ["0"])

            assert statement.run(connection, ["1"]) == 1
            assert connection.exec_driver_sql("SELECT 2").scalar() == 2
