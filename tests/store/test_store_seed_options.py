"""Seed 001's clear that brings back the tool description, and the store's compressed build."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from memctx import ChunkNotFoundError, chunks
from memctx.compress import MaxChars
from memctx.store import CONTEXT_BUILT, CONTEXT_COMPRESSED, MemoryStore

Rows = Callable[[], dict[str, list[tuple[object, ...]]]]
TOOLS = "可用工具:\n- read_file(path)\n- bash(command)"


@pytest.fixture
def tooled(store: MemoryStore) -> str:
    """A thread whose tool description (a system chunk) was hidden by a truncation."""
    store.create_thread("t")
    store.append(
        "t",
        chunks.system(TOOLS, id="tools"),
        chunks.system("Be terse.", id="rules"),
        chunks.user("hi", id="u1"),
        chunks.assistant("hello", id="a1"),
    )
    store.truncate("t", remove_first=1)
    return "t"


def visible(store: MemoryStore, thread: str) -> tuple[str, ...]:
    return store.get_current_state(thread).ids


class TestClearKeep:
    def test_a_hidden_tool_description_is_shown_again(
        self, store: MemoryStore, tooled: str
    ) -> None:
        assert visible(store, tooled) == ("rules", "u1", "a1")

        store.clear(tooled, keep=["tools"])

        assert visible(store, tooled) == ("tools", "rules")
        assert store.batches(tooled)[-1].params == {"keep_system": True, "keep": ("tools",)}

    def test_it_is_shown_even_when_system_chunks_go(self, store: MemoryStore, tooled: str) -> None:
        store.clear(tooled, keep_system=False, keep="tools")

        assert visible(store, tooled) == ("tools",)

    def test_a_visible_one_is_shown_once(self, store: MemoryStore, tooled: str) -> None:
        store.clear(tooled, keep=["rules", "rules"])

        assert visible(store, tooled) == ("rules",)

    def test_an_unknown_id_is_refused_and_writes_nothing(
        self, store: MemoryStore, tooled: str, db_rows: Rows
    ) -> None:
        rows = db_rows()
        with pytest.raises(ChunkNotFoundError, match="nope"):
            store.clear(tooled, keep=["nope"])
        assert db_rows() == rows

    def test_rollback_restores_the_view(self, store: MemoryStore, tooled: str) -> None:
        store.clear(tooled, keep=["tools"])
        store.rollback(tooled, store.batches(tooled)[-2].number)

        assert visible(store, tooled) == ("rules", "u1", "a1")


class TestCompressedBuild:
    def test_compressors_apply_and_the_cut_is_recorded(self, store: MemoryStore) -> None:
        store.create_thread("c")
        store.append("c", chunks.user("x" * 500, id="u"), chunks.assistant("ok", id="a"))

        result = store.build("c", 1000, compressors=[MaxChars(100)])

        assert result.compression is not None
        assert result.included_chunk_ids == (result.compression.replaced_ids["u"], "a")
        assert [e.kind for e in store.events("c")][-2:] == [CONTEXT_BUILT, CONTEXT_COMPRESSED]
        (event,) = store.events("c", kind=CONTEXT_COMPRESSED)
        assert (event.payload["original_count"], event.payload["max_chars_per_message"]) == (2, 100)
        assert visible(store, "c") == ("u", "a")  # the thread's view is not changed

    def test_nothing_cut_records_only_the_build(self, store: MemoryStore) -> None:
        store.create_thread("c")
        store.append("c", chunks.user("short", id="u"))

        store.build("c", 1000, compressors=[MaxChars(100)])

        assert [e.kind for e in store.events("c")] == [CONTEXT_BUILT]

    def test_compress_to_fit_works_too(self, store: MemoryStore) -> None:
        store.create_thread("c")
        store.append("c", *(chunks.user("line\n" * 200, id=f"u{n}") for n in range(4)))

        result = store.build("c", 400, compress_to_fit=MaxChars(200))

        assert len(result.included_chunk_ids) == 4
        assert result.token_count <= 400
