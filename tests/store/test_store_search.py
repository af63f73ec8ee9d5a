"""store.search: the whole history of a thread, ranked alike on SQLite and PostgreSQL.

Every test runs on both backends and through both store classes (the
``store`` fixture), so the asynchronous store is held to the same results.
"""

from __future__ import annotations

import re
from collections.abc import Callable

import pytest
from hypothesis import HealthCheck, given, settings
from sqlalchemy import Engine, text

from memctx import (
    Chunk,
    ChunkConflictError,
    ChunkType,
    MemctxError,
    StoreArgumentError,
    ThreadNotFoundError,
    chunks,
)
from memctx.compaction import ExtractiveSummarizer
from memctx.compress import TrimToolOutputs
from memctx.store import MemoryStore, SearchHit
from memctx.store._search_index import MAX_WORD, words
from strategies import examples, search_queries

FILLER = [f"unrelated note number {n} about lunch" for n in range(8)]


def ids(hits: tuple[SearchHit, ...]) -> list[str]:
    return [hit.chunk.id for hit in hits]


def fill(store: MemoryStore, thread: str, *made: Chunk) -> str:
    """Create ``thread`` holding eight filler notes, then ``made``."""
    store.create_thread(thread)
    notes = [chunks.user(note, id=f"{thread}-note{n}") for n, note in enumerate(FILLER)]
    store.append(thread, *notes, *made)
    return thread


def index_rows(sql: Engine) -> int:
    """How many chunks the search index holds, every thread together."""
    with sql.connect() as connection:
        if sql.dialect.name == "postgresql":
            return int(connection.execute(text("SELECT count(*) FROM memctx_search")).scalar_one())
        # a contentless FTS5 table keeps one length row per indexed chunk
        found = connection.execute(text("SELECT count(*) FROM memctx_search_docsize"))
        return int(found.scalar_one())


class TestRanking:
    def test_the_exact_phrase_ranks_above_more_occurrences_out_of_order(
        self, store: MemoryStore
    ) -> None:
        fill(
            store,
            "t",
            chunks.assistant("jsonrep.py jsonrep.py keyerror in KeyError and in", id="shuffled"),
            chunks.tool_result("bash", "Traceback: KeyError in jsonrep.py line 4", id="exact"),
        )

        hits = store.search("t", "KeyError in jsonrep.py")

        assert ids(hits) == ["exact", "shuffled"]

    def test_chunks_holding_every_word_rank_above_those_holding_some(
        self, store: MemoryStore
    ) -> None:
        fill(
            store,
            "t",
            chunks.assistant("timeout timeout timeout timeout", id="some"),
            chunks.assistant("the database gave up: timeout", id="every"),
        )

        hits = store.search("t", "database timeout")

        assert ids(hits) == ["every", "some"]

    def test_a_rare_word_outweighs_a_common_one(self, store: MemoryStore) -> None:
        store.create_thread("t")
        common = [chunks.user(f"lunch is at {n}", id=f"c{n}") for n in range(8)]
        store.append("t", *common, chunks.assistant("segfault", id="rare"))

        hits = store.search("t", "segfault lunch", limit=1)

        assert ids(hits) == ["rare"]

    def test_more_occurrences_rank_higher_at_the_same_length(self, store: MemoryStore) -> None:
        fill(
            store,
            "t",
            chunks.assistant("flaky once then fine fine fine", id="once"),
            chunks.assistant("flaky flaky flaky then fine fine", id="thrice"),
        )

        assert ids(store.search("t", "flaky")) == ["thrice", "once"]

    def test_a_shorter_chunk_ranks_above_a_longer_one_with_the_same_count(
        self, store: MemoryStore
    ) -> None:
        fill(
            store,
            "t",
            chunks.assistant("deadlock " + "and more words here " * 20, id="long"),
            chunks.assistant("deadlock found", id="short"),
        )

        assert ids(store.search("t", "deadlock")) == ["short", "long"]

    def test_equal_chunks_come_newest_first(self, store: MemoryStore) -> None:
        fill(
            store,
            "t",
            chunks.assistant("disk full", id="older"),
            chunks.assistant("disk full", id="newer"),
        )

        assert ids(store.search("t", "disk full")) == ["newer", "older"]

    def test_scores_fall_best_first_and_name_the_group(self, store: MemoryStore) -> None:
        fill(
            store,
            "t",
            chunks.assistant("permission denied on /etc", id="phrase"),
            chunks.assistant("denied: no permission", id="every"),
            chunks.assistant("permission granted", id="some"),
        )

        hits = store.search("t", "permission denied")

        assert ids(hits) == ["phrase", "every", "some"]
        assert [int(hit.score) for hit in hits] == [2, 1, 0]
        assert [hit.score for hit in hits] == sorted((hit.score for hit in hits), reverse=True)

    def test_limit_caps_the_hits(self, store: MemoryStore) -> None:
        store.create_thread("t")
        store.append("t", *[chunks.user(f"retry {n}", id=f"r{n}") for n in range(12)])

        assert len(store.search("t", "retry")) == 5
        assert len(store.search("t", "retry", limit=3)) == 3
        assert len(store.search("t", "retry", limit=50)) == 12


class TestWhatIsSearched:
    def test_words_ignore_case_and_punctuation(self, store: MemoryStore) -> None:
        fill(store, "t", chunks.tool_result("bash", "E: KeyError('x') in jsonrep.py", id="hit"))

        for query in ("jsonrep", "KEYERROR", "keyerror x", "jsonrep.py", "'jsonrep/py'"):
            assert ids(store.search("t", query)) == ["hit"], query

    def test_tool_skill_names_and_call_ids_are_searched(self, store: MemoryStore) -> None:
        fill(
            store,
            "t",
            chunks.tool_call("grep_files", {"pattern": "x"}, call_id="call_7f3a", id="call"),
            chunks.skill_call("pdf_reader", {"path": "a.pdf"}, call_id="sk99", id="skill"),
        )

        assert ids(store.search("t", "grep_files")) == ["call"]
        assert ids(store.search("t", "call_7f3a")) == ["call"]
        assert ids(store.search("t", "pdf_reader")) == ["skill"]

    def test_json_content_is_searched_by_its_keys_and_values_not_its_escapes(
        self, store: MemoryStore
    ) -> None:
        content = {"command": "pytest -x\nsecond_line", "retries": 3, "timeout_s": 2.5}
        fill(store, "t", chunks.tool_call("bash", content, call_id="c1", id="call"))

        assert ids(store.search("t", "second_line")) == ["call"]
        assert ids(store.search("t", "timeout_s")) == ["call"]
        assert ids(store.search("t", "nsecond")) == []

    def test_text_beyond_ascii_is_searched(self, store: MemoryStore) -> None:
        fill(
            store,
            "t",
            chunks.assistant("Die Straße ist über Nacht gesperrt", id="de"),
            chunks.assistant("无法完成 请求", id="zh"),
        )

        assert ids(store.search("t", "ÜBER NACHT")) == ["de"]
        assert ids(store.search("t", "straße")) == ["de"]
        assert ids(store.search("t", "无法完成")) == ["zh"]

    def test_the_end_of_a_very_long_output_is_searched(self, store: MemoryStore) -> None:
        log = "ok\n" * 60_000 + "FAILED test_parse - AssertionError"
        fill(store, "t", chunks.tool_result("bash", log, id="log"))

        assert ids(store.search("t", "FAILED test_parse - AssertionError")) == ["log"]

    def test_the_position_is_the_index_in_the_whole_history(self, store: MemoryStore) -> None:
        fill(store, "t", chunks.assistant("needle", id="n"))
        store.truncate("t", keep_last=1)

        (hit,) = store.search("t", "needle")

        assert store.get_all_chunks("t")[hit.position] == hit.chunk
        assert hit.position == 8


class TestWords:
    @given(text=search_queries)
    def test_a_word_is_a_run_of_letters_and_digits_lower_cased(self, text: str) -> None:
        assert words(text, cut=False) == re.findall(r"[^\W_]+", text.lower())

    def test_a_word_longer_than_the_limit_is_found_by_its_beginning(
        self, store: MemoryStore
    ) -> None:
        long = "a" * (MAX_WORD + 20)
        fill(store, "t", chunks.assistant(f"hash {long} end", id="long"))

        assert ids(store.search("t", long)) == ["long"]
        assert ids(store.search("t", "a" * MAX_WORD + "b" * 5)) == ["long"]
        assert ids(store.search("t", "a" * (MAX_WORD - 1))) == []


class TestLongThreads:
    def test_a_chunk_older_than_the_sampled_ones_is_found_first(self, store: MemoryStore) -> None:
        store.create_thread("t")
        store.append("t", chunks.tool_result("bash", "Segmentation fault in parse()", id="old"))
        notes = [chunks.user(f"lunch note {n} about the parser", id=f"n{n}") for n in range(700)]
        store.append("t", *notes)

        hits = store.search("t", "segmentation fault parser", limit=3)

        assert ids(hits)[0] == "old"
        assert len(hits) == 3

    def test_a_word_in_most_chunks_still_finds_the_newest(self, store: MemoryStore) -> None:
        store.create_thread("t")
        store.append("t", *[chunks.user(f"retry {n}", id=f"r{n}") for n in range(700)])

        assert ids(store.search("t", "retry", limit=2)) == ["r699", "r698"]


class TestHistory:
    def test_compacted_chunks_are_found_and_visible_false_finds_only_those(
        self, store: MemoryStore
    ) -> None:
        store.create_thread("t")
        store.append(
            "t",
            chunks.user("Fix the parser.", id="task"),
            chunks.tool_call("bash", {"command": "pytest"}, call_id="c1", id="call"),
            chunks.tool_result("bash", "E   KeyError: 'name' in jsonrep.py", "c1", id="error"),
            chunks.assistant("I will read jsonrep.py next. " * 40, id="plan"),
        )
        store.compact("t", ExtractiveSummarizer(), keep_recent_tokens=0)
        assert "error" not in store.get_current_state("t").ids

        assert ids(store.search("t", "KeyError: 'name'"))[0] == "error"
        assert ids(store.search("t", "KeyError: 'name'", visible=False))[0] == "error"
        assert "error" not in ids(store.search("t", "KeyError: 'name'", visible=True))

    def test_a_cleared_tool_output_is_found_in_full(self, store: MemoryStore) -> None:
        store.create_thread("t")
        output = "line\n" * 400 + "ImportError: no module named yaml\n" + "line\n" * 400
        store.append(
            "t",
            chunks.tool_call("bash", {"command": "python run.py"}, call_id="c1", id="call"),
            chunks.tool_result("bash", output, "c1", id="out"),
            chunks.assistant("Installing it.", id="next"),
        )
        store.compress("t", [TrimToolOutputs(keep_recent=0, max_chars=100)])
        assert "out" not in store.get_current_state("t").ids

        (hit,) = store.search("t", "no module named yaml", visible=False)

        assert hit.chunk.content == output

    def test_visible_true_finds_only_what_the_view_shows(self, store: MemoryStore) -> None:
        fill(store, "t", chunks.assistant("build failed", id="old"))
        store.append("t", chunks.assistant("build failed again", id="new"))
        store.truncate("t", keep_last=1)

        assert ids(store.search("t", "build failed", visible=True)) == ["new"]
        assert ids(store.search("t", "build failed", visible=False)) == ["old"]
        assert ids(store.search("t", "build failed")) == ["old", "new"]

    def test_types_keep_only_chunks_of_those_types(self, store: MemoryStore) -> None:
        fill(
            store,
            "t",
            chunks.tool_result("bash", "connection refused", id="env"),
            chunks.assistant("connection refused, retrying", id="agent"),
        )

        assert ids(store.search("t", "connection refused", types=[ChunkType.ENVIRONMENT])) == [
            "env"
        ]
        assert ids(store.search("t", "connection refused", types="AGENT")) == ["agent"]

    def test_views_and_rollback_lose_no_hit(self, store: MemoryStore) -> None:
        fill(store, "t", chunks.assistant("checksum mismatch", id="a"))
        before = store.search("t", "checksum mismatch")
        store.clear("t")
        store.insert("t", 0, chunks.system("Known: checksum mismatch", id="ins"))
        store.rollback("t", 0)

        after = store.search("t", "checksum mismatch")

        assert before[0].chunk in [hit.chunk for hit in after]
        assert sorted(ids(after)) == ["a", "ins"]

    def test_an_imported_snapshot_is_searchable(self, store: MemoryStore) -> None:
        fill(store, "t", chunks.assistant("out of memory", id="oom"))

        store.import_snapshot(store.export_snapshot("t"), thread_id="copy")

        assert ids(store.search("copy", "out of memory")) == ["oom"]


class TestIsolation:
    def test_a_search_never_returns_another_threads_chunk(self, store: MemoryStore) -> None:
        store.create_thread("mine")
        store.create_thread("theirs")
        store.append("theirs", *[chunks.user(f"secret token {n}", id=f"x{n}") for n in range(5)])
        store.append("mine", chunks.user("secret", id="m"))

        assert ids(store.search("mine", "secret token", limit=10)) == ["m"]
        assert len(store.search("theirs", "secret token", limit=10)) == 5

    def test_a_thread_without_chunks_finds_nothing(self, store: MemoryStore) -> None:
        fill(store, "other", chunks.user("anything", id="a"))
        store.create_thread("empty")

        assert store.search("empty", "anything") == ()

    def test_a_deleted_thread_leaves_nothing_in_the_index(
        self, store: MemoryStore, sql: Engine
    ) -> None:
        fill(store, "keep", chunks.user("stays", id="k"))
        before = index_rows(sql)
        fill(store, "gone", chunks.user("vanishes", id="g"))

        store.delete_thread("gone")
        store.create_thread("gone")

        assert index_rows(sql) == before
        assert store.search("gone", "vanishes unrelated") == ()
        assert ids(store.search("keep", "stays")) == ["k"]

    def test_an_unknown_thread_is_an_error(self, store: MemoryStore) -> None:
        with pytest.raises(ThreadNotFoundError):
            store.search("nope", "x")


class TestTheAppendsTransaction:
    def test_a_failed_append_leaves_no_index_rows(self, store: MemoryStore, sql: Engine) -> None:
        fill(store, "t", chunks.user("first", id="a"))
        before = index_rows(sql)

        with pytest.raises(ChunkConflictError):
            store.append("t", chunks.user("marmalade", id="b"), chunks.user("changed", id="a"))

        def stop(done: int, total: int) -> None:
            if done > total // 2:
                raise RuntimeError("stop")

        with pytest.raises(RuntimeError):
            store.append(
                "t", *[chunks.user(f"marmalade {n}", id=f"m{n}") for n in range(20)],
                on_progress=stop,
            )  # fmt: skip

        assert index_rows(sql) == before
        assert store.search("t", "marmalade") == ()

    def test_a_retried_append_indexes_each_chunk_once(
        self, store: MemoryStore, sql: Engine
    ) -> None:
        fill(store, "t", chunks.user("apricot", id="a"))
        before = index_rows(sql)

        store.append("t", chunks.user("apricot", id="a"), chunks.user("plum", id="p"))

        assert index_rows(sql) == before + 1
        assert ids(store.search("t", "apricot")) == ["a"]


QUERIES = [
    '"unbalanced',
    "KeyError AND NOT jsonrep",
    "NEAR(keyerror jsonrep, 2)",
    "key* ^start col:value -minus (paren",
    "'; DROP TABLE memctx_chunks; --",
    "a | b & !c <-> d:*",
    "\\x00 % _ $1 {} []",
    "naïve — 無法",
]


class TestQueriesAreText:
    @pytest.mark.parametrize("query", QUERIES)
    def test_operators_and_sql_are_searched_as_words(self, store: MemoryStore, query: str) -> None:
        fill(store, "t", chunks.assistant(f"the log said: {query}", id="said"))

        hits = store.search("t", query)

        assert ids(hits)[:1] == ["said"]
        assert len(store.get_all_chunks("t")) == 9

    @pytest.mark.parametrize("query", ["", "   ", '"', "!!! ... ---", "\u200b"])
    def test_a_query_without_a_word_finds_nothing(self, store: MemoryStore, query: str) -> None:
        fill(store, "t")

        assert store.search("t", query) == ()

    @settings(
        max_examples=examples(40),
        deadline=None,
        suppress_health_check=[HealthCheck.function_scoped_fixture],
    )
    @given(query=search_queries)
    def test_any_text_is_a_query(self, store: MemoryStore, query: str) -> None:
        if not store.has_thread("t"):
            fill(store, "t", chunks.tool_result("bash", 'KeyError AND "x" OR NEAR(y)', id="k"))

        hits = store.search("t", query, limit=3)

        assert all(isinstance(hit, SearchHit) for hit in hits)
        assert len(hits) <= 3


class TestArguments:
    @pytest.mark.parametrize(
        ("options", "message"),
        [
            ({"limit": 0}, "limit must be a positive int"),
            ({"limit": True}, "limit must be a positive int"),
            ({"limit": "5"}, "limit must be a positive int"),
            ({"types": ["NOPE"]}, "unknown chunk type"),
            ({"types": []}, "types is empty"),
            ({"types": 3}, "types takes chunk types"),
            ({"visible": "yes"}, "visible must be True, False or None"),
        ],
    )
    def test_bad_options_are_refused(
        self, store: MemoryStore, options: dict[str, object], message: str
    ) -> None:
        fill(store, "t")

        with pytest.raises(StoreArgumentError, match=message):
            store.search("t", "lunch", **options)  # type: ignore[arg-type]

    def test_a_query_that_is_not_text_is_refused(self, store: MemoryStore) -> None:
        fill(store, "t")

        with pytest.raises(StoreArgumentError, match="must be a string"):
            store.search("t", b"lunch")  # type: ignore[arg-type]

    def test_every_refusal_is_a_memctx_error(self, store: MemoryStore) -> None:
        with pytest.raises(MemctxError):
            store.search("", "x")


class TestMigration:
    def test_a_schema_3_database_is_indexed_when_opened(
        self, store: MemoryStore, sql: Engine, open_store: Callable[[], MemoryStore]
    ) -> None:
        fill(store, "t", chunks.tool_result("bash", "Segmentation fault (core dumped)", id="sf"))
        fill(store, "u", chunks.assistant("core dumped again", id="again"))
        store.close()
        with sql.begin() as connection:  # what schema version 3 had: no index
            if sql.dialect.name == "postgresql":
                connection.execute(text("DROP TABLE memctx_search"))
                connection.execute(text("DROP TABLE memctx_search_threads"))
                connection.execute(text("DROP FUNCTION memctx_search_thread_deleted()"))
                connection.execute(
                    text("DROP TRIGGER memctx_search_thread_created ON memctx_threads")
                )
                connection.execute(text("DROP FUNCTION memctx_search_thread_created()"))
            else:
                connection.execute(text("DROP TRIGGER memctx_search_thread_created"))
                connection.execute(text("DROP TRIGGER memctx_search_thread_deleted"))
                connection.execute(text("DROP TABLE memctx_search"))
                connection.execute(text("DROP TABLE memctx_search_threads"))
            # nor what version 5 added
            connection.execute(text("DROP TABLE memctx_waiting"))
            for index in ("memctx_chunks_special", "memctx_chunks_unit"):
                connection.execute(text(f"DROP INDEX {index}"))
            connection.execute(text("UPDATE memctx_schema SET version = 3"))

        reopened = open_store()

        assert ids(reopened.search("t", "segmentation fault")) == ["sf"]
        assert ids(reopened.search("u", "core dumped")) == ["again"]
        reopened.append("t", chunks.assistant("fault fixed", id="fixed"))
        assert ids(reopened.search("t", "fault")) == ["fixed", "sf"]
        reopened.delete_thread("u")
        assert reopened.search("t", "again") == ()
