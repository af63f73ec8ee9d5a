"""Builds through the store: the same result, a context.built event, a persisted token cache."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

import pytest
from sqlalchemy import Engine, text

from memctx import (
    BuildOptionError,
    BuildOptions,
    Chunk,
    ChunkType,
    MemoryState,
    TiktokenTokenizer,
    chunks,
    create_builder,
    create_tokenizer,
)
from memctx._build.builder import counts_of
from memctx._exceptions import StoreArgumentError
from memctx.store import CONTEXT_BUILT, MemoryStore

Rows = Callable[[], dict[str, list[tuple[object, ...]]]]


class SpyTokenizer(TiktokenTokenizer):
    """o200k_base, remembering every text it was asked to count."""

    def __init__(self, encoding: str = "o200k_base") -> None:
        super().__init__(encoding, model="gpt-4o")
        self.counted: list[str] = []

    def count(self, text: str) -> int:
        self.counted.append(text)
        return super().count(text)


class KeylessTokenizer:
    """A tokenizer of one's own, without a ``cache_key``."""

    name = "words"
    exact = False

    def count(self, text: str) -> int:
        return len(text.split())

    def count_messages(self, messages: Iterable[Any]) -> int:
        contents = [m["content"] if isinstance(m, dict) else m.content for m in messages]
        return sum(self.count(c) + 3 for c in contents) + 3


@pytest.fixture
def long_thread(store: MemoryStore) -> str:
    store.create_thread("t1")
    store.append(
        "t1",
        chunks.system("You are a coding agent.", id="s"),
        *(chunks.user(f"question {i} " + "word " * 30, id=f"u{i}") for i in range(6)),
        chunks.tool_call("read_file", {"path": "a.py"}, call_id="c1", id="call"),
        chunks.tool_result("read_file", "print(1)\n" * 20, call_id="c1", id="result"),
    )
    return "t1"


def segments(state: MemoryState) -> set[str]:
    builder = create_builder()
    return {counts_of(builder).render_chunk(chunk).segment for chunk in state}


def test_a_store_build_equals_a_build_of_the_current_state(
    store: MemoryStore, long_thread: str
) -> None:
    tokenizer = create_tokenizer("gpt-4o")
    store.truncate(long_thread, remove_first=1)

    result = store.build(long_thread, max_tokens=200, tokenizer=tokenizer)

    expected = create_builder().build(
        store.get_current_state(long_thread), max_tokens=200, tokenizer=tokenizer
    )
    assert result.messages == expected.messages
    assert result.token_count == expected.token_count
    assert result.included_chunk_ids == expected.included_chunk_ids


def test_a_build_records_its_budget_count_and_what_was_left_out(
    store: MemoryStore, long_thread: str
) -> None:
    result = store.build(long_thread, max_tokens=320, reserve_tokens=20,
                         tokenizer=create_tokenizer("gpt-4o"))  # fmt: skip

    [event] = store.events(long_thread, CONTEXT_BUILT)
    assert result.excluded_chunk_ids
    assert event.payload == {
        "batch": 0, "max_tokens": 320, "reserve_tokens": 20, "budget": 300,
        "strategy": "recent", "tokenizer": "gpt-4o (o200k_base)",
        "token_count": result.token_count, "token_count_exact": True,
        "messages": len(result.messages), "visible": 9,
        "included": len(result.included_chunk_ids),
        "excluded": len(result.excluded_chunk_ids),
        "tokens_reused": 0, "tokens_counted": event.payload["tokens_counted"],
        "prefix_tokens_shared": 0, "chunks_read": 9,
    }  # fmt: skip
    assert event.payload["tokens_counted"] >= len(result.included_chunk_ids)


def test_build_options_can_be_given_as_one_object(store: MemoryStore, long_thread: str) -> None:
    options = BuildOptions(max_tokens=150, exclude_types=[ChunkType.ENVIRONMENT])

    result = store.build(long_thread, options=options)

    assert "result" not in result.included_chunk_ids
    assert store.events(long_thread, CONTEXT_BUILT)[0].payload["max_tokens"] == 150


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"max_tokens": 10, "options": BuildOptions()}, "not both"),
        ({"max_tokens": 0}, "max_tokens"),
        ({"colour": "red"}, "colour"),
    ],
)
def test_bad_build_options_are_refused_and_nothing_is_recorded(
    db_rows: Rows, store: MemoryStore, long_thread: str, kwargs: dict[str, object], message: str
) -> None:
    before = db_rows()

    with pytest.raises(BuildOptionError, match=message):
        store.build(long_thread, **kwargs)  # type: ignore[arg-type]
    assert db_rows() == before


class TestTokenCache:
    def test_a_build_after_a_restart_counts_no_chunk_again(
        self, open_store: Callable[[], MemoryStore], long_thread: str
    ) -> None:
        first = open_store()
        first_result = first.build(long_thread, tokenizer=create_tokenizer("gpt-4o"))
        first.close()
        state = open_store().get_current_state(long_thread)
        spy = SpyTokenizer()

        again = open_store()
        result = again.build(long_thread, builder=create_builder(), tokenizer=spy)

        assert segments(state).isdisjoint(spy.counted)
        assert result.token_count == first_result.token_count
        event = again.events(long_thread, CONTEXT_BUILT)[-1]
        assert (event.payload["tokens_reused"], event.payload["tokens_counted"]) == (9, 0)

    def test_only_new_chunks_are_counted_on_the_next_build(
        self, store: MemoryStore, long_thread: str
    ) -> None:
        store.build(long_thread, tokenizer=create_tokenizer("gpt-4o"))
        new = chunks.assistant("A fresh answer.", id="fresh")
        store.append(long_thread, new)
        spy = SpyTokenizer()

        store.build(long_thread, builder=create_builder(), tokenizer=spy)

        counted_segments = segments(store.get_current_state(long_thread)) & set(spy.counted)
        assert counted_segments == segments(MemoryState([new]))

    def test_counts_are_kept_per_encoding(
        self, sql: Engine, store: MemoryStore, long_thread: str
    ) -> None:
        store.build(long_thread, tokenizer=create_tokenizer("gpt-4o"))
        spy = SpyTokenizer("cl100k_base")

        store.build(long_thread, builder=create_builder(), tokenizer=spy)

        assert segments(store.get_current_state(long_thread)) <= set(spy.counted)
        with sql.connect() as connection:
            keys = connection.execute(
                text("SELECT tokenizer, COUNT(*) FROM memctx_token_counts GROUP BY tokenizer")
            ).all()
        assert sorted(keys) == [("tiktoken:cl100k_base", 9), ("tiktoken:o200k_base", 9)]

    def test_counts_are_not_reused_under_another_renderer_chain(
        self, store: MemoryStore, long_thread: str
    ) -> None:
        class Shouting:
            def can_render(self, chunk: Chunk) -> bool:
                return chunk.type is ChunkType.AGENT

            def get_role(self, chunk: Chunk) -> str:
                return "user"

            def render(self, chunk: Chunk) -> str:
                return f"<shout>{chunk.text.upper()}</shout>"

        store.build(long_thread, tokenizer=create_tokenizer("gpt-4o"))
        custom = create_builder(renderers=[Shouting()])  # type: ignore[list-item]
        spy = SpyTokenizer()

        store.build(long_thread, builder=custom, tokenizer=spy)

        assert any("<shout>" in t for t in spy.counted)
        event = store.events(long_thread, CONTEXT_BUILT)[-1]
        assert event.payload["tokens_reused"] == 0

    def test_a_tokenizer_without_a_cache_key_builds_but_caches_nothing(
        self, sql: Engine, store: MemoryStore, long_thread: str
    ) -> None:
        result = store.build(long_thread, tokenizer=KeylessTokenizer())

        assert result.included_chunk_ids
        with sql.connect() as connection:
            stored = connection.execute(text("SELECT COUNT(*) FROM memctx_token_counts")).scalar()
        assert stored == 0


class TestStableRebuilds:
    """``stable`` builds page as ``recent`` ones do: rebuilds read what was appended."""

    def test_a_rebuild_after_appends_reads_only_the_new_rows_and_equals_a_fresh_build(
        self, open_store: Callable[[], MemoryStore], long_thread: str
    ) -> None:
        gpt4o = create_tokenizer("gpt-4o")
        store = open_store()
        options: dict[str, Any] = {"tokenizer": gpt4o, "strategy": "stable"}
        store.build(long_thread, 300, **options)
        for n in range(3):
            store.append(long_thread, chunks.assistant(f"step {n} " * 20, id=f"step{n}"))
            result = store.build(long_thread, 300, **options)

            event = store.events(long_thread, CONTEXT_BUILT)[-1].payload
            fresh = create_builder(gpt4o).build(
                store.get_current_state(long_thread), 300, strategy="stable"
            )
            assert (event["chunks_read"], event["tokens_counted"]) == (1, 1)
            assert event["tokens_reused"] == event["visible"] - 1
            assert result.messages == fresh.messages
            assert result.excluded_chunk_ids == fresh.excluded_chunk_ids

        restarted = open_store()
        restarted.build(long_thread, 300, **options)
        event = restarted.events(long_thread, CONTEXT_BUILT)[-1].payload
        assert (event["chunks_read"], event["tokens_counted"]) == (event["visible"], 0)

    def test_another_builder_reuses_the_rows_and_counts_read_before(
        self, store: MemoryStore, long_thread: str
    ) -> None:
        options: dict[str, Any] = {"tokenizer": create_tokenizer("gpt-4o"), "strategy": "stable"}
        store.build(long_thread, 300, **options)
        store.append(long_thread, chunks.assistant("more", id="more"))

        result = store.build(long_thread, 300, builder=create_builder(), **options)

        event = store.events(long_thread, CONTEXT_BUILT)[-1].payload
        fresh = create_builder().build(store.get_current_state(long_thread), 300, **options)
        assert (event["chunks_read"], event["visible"]) == (1, 10)  # the new one
        assert (event["tokens_reused"], event["tokens_counted"]) == (9, 1)
        assert result.messages == fresh.messages


class TestEvents:
    def test_events_of_your_own_are_recorded_in_order_and_filtered_by_kind(
        self, store: MemoryStore, long_thread: str
    ) -> None:
        store.record_event(long_thread, "context.compressed",
                           {"original_count": 9, "compressed_count": 4, "ratio": 0.44})  # fmt: skip
        store.truncate(long_thread, keep_last=2)
        store.record_event(long_thread, "context.compressed", {"original_count": 2})

        assert [e.kind for e in store.events(long_thread)] == [
            "context.compressed", "view.changed", "context.compressed",
        ]  # fmt: skip
        first, second = store.events(long_thread, "context.compressed")
        assert first.payload == {"original_count": 9, "compressed_count": 4, "ratio": 0.44}
        assert first.created_at <= second.created_at

    @pytest.mark.parametrize(
        ("kind", "payload", "message"),
        [
            ("", {}, "kind must not be empty"),
            ("x", [1, 2], "payload must be a JSON object"),
            ("x", {"when": object()}, "not JSON"),
            ("x", {"n": float("nan")}, "not JSON"),
        ],
    )
    def test_an_unusable_event_is_refused(
        self, db_rows: Rows, store: MemoryStore, long_thread: str, kind: str, payload: object,
        message: str,
    ) -> None:  # fmt: skip
        before = db_rows()

        with pytest.raises(StoreArgumentError, match=message):
            store.record_event(long_thread, kind, payload)  # type: ignore[arg-type]
        assert db_rows() == before


def test_a_rebuild_after_an_append_reports_the_prefix_the_two_requests_share(
    store: MemoryStore, long_thread: str
) -> None:
    tokenizer = create_tokenizer("gpt-4o")
    first = store.build(long_thread, max_tokens=100_000, tokenizer=tokenizer, strategy="stable")
    store.append(long_thread, chunks.assistant("noted", id="later"))

    second = store.build(long_thread, max_tokens=100_000, tokenizer=tokenizer, strategy="stable")

    event = store.events(long_thread, kind="context.built")[-1]
    assert second.prefix_tokens_shared > first.token_count - 10
    assert event.payload["prefix_tokens_shared"] == second.prefix_tokens_shared
    assert second.included_chunk_ids[-1] == "later"
    assert event.payload["visible"] == len(second.included_chunk_ids)


@pytest.mark.parametrize("strategy", ["recent", "stable"])
@pytest.mark.parametrize("max_tokens", [300, 100_000])
def test_building_an_unchanged_thread_again_records_its_whole_request_as_shared(
    store: MemoryStore, long_thread: str, strategy: str, max_tokens: int
) -> None:
    tokenizer = create_tokenizer("gpt-4o")
    options: dict[str, Any] = {"tokenizer": tokenizer, "strategy": strategy}
    first = store.build(long_thread, max_tokens, **options)

    again = store.build(long_thread, max_tokens, **options)

    whole = tokenizer.count_messages(again.messages) - tokenizer.count_messages([])
    events = store.events(long_thread, kind="context.built")
    assert again.messages == first.messages
    assert again.prefix_tokens_shared == whole
    assert [e.payload["prefix_tokens_shared"] for e in events] == [0, whole]


def test_a_view_change_between_builds_is_seen_by_the_next_build(
    store: MemoryStore, long_thread: str
) -> None:
    tokenizer = create_tokenizer("gpt-4o")
    store.build(long_thread, tokenizer=tokenizer)
    store.truncate(long_thread, keep_last=2)
    store.append(long_thread, chunks.user("after the view", id="after"))

    result = store.build(long_thread, tokenizer=tokenizer)

    assert result.included_chunk_ids == (*store.get_current_state(long_thread).ids,)
    assert len(result.included_chunk_ids) == 3


def test_a_rebuild_after_a_view_that_hides_newer_chunks_leaves_them_hidden(
    store: MemoryStore, long_thread: str
) -> None:
    tokenizer = create_tokenizer("gpt-4o")
    store.clear(long_thread, keep_system=True)  # the view ends with an older chunk than it hides
    first = store.build(long_thread, tokenizer=tokenizer)

    again = store.build(long_thread, tokenizer=tokenizer)

    assert first.included_chunk_ids == again.included_chunk_ids == ("s",)
