"""Claude counts: ctok (the memctx[claude] extra, Python 3.12+) per tokenizer generation, or
the cl100k stand-in, marked inexact. CI runs this file under Python 3.12 with the extra too."""

from __future__ import annotations

import sys

import pytest

from memctx import MemoryState, chunks, create_builder, create_tokenizer
from memctx._render.claude_tokens import claude_version, family
from memctx._render.tokens import TiktokenTokenizer


class TestModelNames:
    @pytest.mark.parametrize(
        ("model", "version", "generation"),
        [
            ("claude-3-5-sonnet-20241022", "3.5", "3"),
            ("claude-3-opus-20240229", "3", "3"),
            ("claude-sonnet-4-20250514", "4", "3"),
            ("claude-opus-4-1", "4.1", "3"),
            ("claude-sonnet-4-6", "4.6", "3"),
            ("claude-opus-4-7", "4.7", "4.7"),
            ("claude-opus-4-8", "4.8", "4.8"),
            ("claude-sonnet-5", "5", "4.8"),
            ("claude-fable-5-1", "5.1", "4.8"),
            ("claude", "3", "3"),
        ],
    )
    def test_a_model_name_gives_its_tokenizer_generation(
        self, model: str, version: str, generation: str
    ) -> None:
        assert claude_version(model) == version
        assert family(version) == generation


class TestWithoutCtok:
    def test_the_stand_in_is_cl100k_marked_inexact(self, monkeypatch: pytest.MonkeyPatch) -> None:
        monkeypatch.setitem(sys.modules, "ctok", None)  # importing it fails

        tokenizer = create_tokenizer("claude-opus-4-7")

        assert isinstance(tokenizer, TiktokenTokenizer)
        assert tokenizer.encoding_name == "cl100k_base"
        assert not tokenizer.exact


class TestWithCtok:
    @pytest.fixture(autouse=True)
    def _ctok(self) -> None:
        pytest.importorskip("ctok", reason="ctok needs Python 3.12+ and memctx[claude]")

    @pytest.mark.parametrize(
        ("model", "expected", "exact"),
        [  # ctok's published figures for "hello, world" as one user message
            ("claude-sonnet-4-5", 10, True),
            ("claude-opus-4-7", 15, True),
            ("claude-opus-4-8", 10, False),
        ],
    )
    def test_one_user_message_counts_as_ctok_publishes(
        self, model: str, expected: int, exact: bool
    ) -> None:
        tokenizer = create_tokenizer(model)

        assert tokenizer.count_messages([{"role": "user", "content": "hello, world"}]) == expected
        assert tokenizer.exact is exact
        assert f"ctok v{family(claude_version(model))}" in tokenizer.name

    def test_opus_4_7_counts_more_than_the_generation_before(self) -> None:
        text = "The retry test fails on CI: retryDelay should never exceed 30 seconds. " * 20

        older = create_tokenizer("claude-sonnet-4-6").count(text)
        newer = create_tokenizer("claude-opus-4-7").count(text)

        assert newer > older

    def test_a_build_counts_claude_s_way_within_its_budget(self) -> None:
        tokenizer = create_tokenizer("claude-sonnet-4-5")
        state = MemoryState(
            [chunks.user("task " * 40, id="u", pinned=True)]
            + [chunks.assistant(f"step {n} " * 30, id=f"a{n}") for n in range(20)]
        )

        result = create_builder(tokenizer).build(state, max_tokens=600, provider="anthropic")

        assert result.token_count <= 600
        assert result.excluded_for("over_budget")
        assert result.tokenizer_name == "claude-sonnet-4-5 (ctok v3)"
        assert not result.token_count_exact  # several messages: the frame is approximated
