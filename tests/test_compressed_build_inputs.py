"""Compressed builds and compression on any input: ids keep naming chunks, lone surrogates
are text, and nothing but a documented MemctxError ever comes out."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from memctx import (
    BudgetExceededError,
    BuildOptionError,
    ChunkNotFoundError,
    MemctxError,
    MemoryState,
    chunks,
    create_builder,
)
from memctx.compaction import ExtractiveSummarizer, compact
from memctx.compress import MaxChars, MaxChunks, TrimToolOutputs, compress
from strategies import (
    agent_runs,
    compressor_chains,
    examples,
    fit_compressors,
    id_options,
    states,
    texts,
)

BUILDER = create_builder()
LONE = "abc\ud800def\udfff"


def state() -> MemoryState:
    return MemoryState(
        [
            chunks.user("a" * 100, id="a"),
            chunks.assistant("b" * 100, id="b"),
            chunks.tool_call("bash", {"command": "ls"}, call_id="c1", id="call"),
            chunks.tool_result("bash", "out\n" * 60, call_id="c1", id="res"),
            chunks.user("c" * 100, id="c"),
        ]
    )


class TestIdOptions:
    def test_a_pinned_chunk_is_kept_whole_by_the_compressors(self) -> None:
        result = BUILDER.build(
            state(), max_tokens=2_000, compressors=[MaxChars(10)], pinned_chunk_ids=["a"]
        )
        assert "a" in result.included_chunk_ids
        assert result.compression is not None
        assert "a" not in result.compression.replaced_ids
        assert result.messages[0].content.count("a") >= 100

    def test_a_pinned_chunk_is_not_dropped_by_the_compressors(self) -> None:
        result = BUILDER.build(
            state(), max_tokens=2_000, compressors=[MaxChunks(1)], pinned_chunk_ids=["a"]
        )
        assert result.included_chunk_ids == ("a", "c")

    def test_include_only_follows_a_chunk_to_its_compressed_rendition(self) -> None:
        result = BUILDER.build(
            state(), max_tokens=2_000, compressors=[MaxChars(10)], include_only_chunk_ids=["b"]
        )
        assert result.compression is not None
        assert result.included_chunk_ids == (result.compression.replaced_ids["b"],)

    def test_include_only_with_compress_to_fit_names_the_chunks_it_fits(self) -> None:
        result = BUILDER.build(
            state(), max_tokens=60, compress_to_fit=MaxChars(10), include_only_chunk_ids=["a", "b"]
        )
        assert result.included_chunk_ids
        assert result.compression is not None
        for chunk_id in result.included_chunk_ids:
            assert chunk_id in ("a", "b") or chunk_id in result.compression.replaced_ids.values()

    def test_a_chunk_dropped_by_a_compressor_is_simply_not_there(self) -> None:
        result = BUILDER.build(
            state(), max_tokens=2_000, compressors=[MaxChunks(1)], include_only_chunk_ids=["a"]
        )
        assert result.included_chunk_ids == ()

    def test_an_id_the_state_does_not_hold_is_still_an_error(self) -> None:
        with pytest.raises(ChunkNotFoundError, match="nope"):
            BUILDER.build(
                state(), max_tokens=2_000, compressors=[MaxChars(10)], pinned_chunk_ids=["nope"]
            )


class TestLoneSurrogates:
    def lone(self) -> MemoryState:
        return MemoryState(
            [
                chunks.user(LONE * 40, id="u"),
                chunks.tool_call("bash", {"k": LONE}, call_id="c", id="call"),
                chunks.tool_result("bash", LONE * 80, call_id="c", id="res"),
                chunks.user("last", id="l"),
            ]
        )

    @pytest.mark.parametrize(
        "compressor", [MaxChars(10), TrimToolOutputs(keep_recent=0, max_chars=20), MaxChunks(1)]
    )
    def test_compression_cuts_them_as_text(self, compressor: Any) -> None:
        compressed, report = compress(self.lone(), [compressor])
        assert report.changed
        assert BUILDER.build(compressed, max_tokens=10_000).messages

    def test_compaction_summarises_them(self) -> None:
        compacted, report = compact(self.lone(), ExtractiveSummarizer(), keep_recent_tokens=0)
        assert report.compacted
        assert BUILDER.build(compacted, max_tokens=10_000).messages

    def test_a_summary_holding_one_is_a_summary_like_any_other(self) -> None:
        compacted, report = compact(
            self.lone(), lambda covered, previous: f"did {LONE}", keep_recent_tokens=0
        )
        assert report.compacted
        assert compacted.chunks[0].text == f"did {LONE}"
        assert "\ufffd" in BUILDER.build(compacted, max_tokens=10_000).messages[0].content

    def test_a_compressed_build_of_them_works(self) -> None:
        result = BUILDER.build(self.lone(), max_tokens=10_000, compressors=[MaxChars(10)])
        assert result.compression is not None
        assert result.compression.changed


EXPECTED = (BudgetExceededError, BuildOptionError, ChunkNotFoundError)
"""What a compressed build of a valid state with these options may raise."""


class TestProperties:
    @settings(max_examples=examples(150), deadline=None)
    @given(
        st.one_of(agent_runs(max_steps=25), states(max_size=6)),
        compressor_chains,
        fit_compressors,
        st.data(),
    )
    def test_a_compressed_build_raises_only_documented_errors(
        self,
        state: MemoryState,
        chain: list[Any],
        to_fit: Any,
        data: st.DataObject,
    ) -> None:
        options = data.draw(id_options(state))
        max_tokens = data.draw(st.none() | st.integers(20, 4_000))
        try:
            result = BUILDER.build(
                state, max_tokens, compressors=chain, compress_to_fit=to_fit, **options
            )
        except EXPECTED as exc:
            refused: MemctxError | None = exc
        else:
            refused = None
        if isinstance(refused, ChunkNotFoundError):
            assert refused.chunk_id not in state.ids, "an id the state holds was not found"
        if refused is None and "include_only_chunk_ids" not in options:
            for chunk_id in options.get("pinned_chunk_ids", ()):
                assert chunk_id in result.included_chunk_ids

    @settings(max_examples=examples(100), deadline=None)
    @given(texts, compressor_chains)
    def test_compression_of_any_text_raises_only_documented_errors(
        self, text: str, chain: list[Any]
    ) -> None:
        state = MemoryState(
            [
                chunks.user(text, id="u"),
                chunks.tool_call("bash", {"command": text}, call_id="c", id="call"),
                chunks.tool_result("bash", text * 20, call_id="c", id="res"),
                chunks.assistant(text, id="a"),
            ]
        )
        compressed, _ = compress(state, chain)
        compact(compressed, ExtractiveSummarizer(), keep_recent_tokens=0)
        compact(compressed, lambda covered, previous: f"summary: {text}", keep_recent_tokens=0)
