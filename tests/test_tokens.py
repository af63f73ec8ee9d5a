"""Tokenizers: exact tiktoken encodings offline, the estimator, the chat formula."""

from __future__ import annotations

import hashlib
import os
import signal
import time

import pytest
import tiktoken

from memctx import (
    ContextMessage,
    EstimatingTokenizer,
    TiktokenTokenizer,
    Tokenizer,
    TokenizerError,
    UnknownModelError,
    create_tokenizer,
)
from memctx._render import tokens as _tokens
from memctx._render.batch_count import ThreadedCounter, count_each

# The six messages of OpenAI's cookbook "How to count tokens with tiktoken";
# it publishes 129 prompt tokens for gpt-3.5-turbo/gpt-4 and 124 for gpt-4o.
COOKBOOK_MESSAGES = [
    {
        "role": "system",
        "content": "You are a helpful, pattern-following assistant that "
        "translates corporate jargon into plain English.",
    },
    {
        "role": "system",
        "name": "example_user",
        "content": "New synergies will help drive top-line growth.",
    },
    {
        "role": "system",
        "name": "example_assistant",
        "content": "Things working well together will increase revenue.",
    },
    {
        "role": "system",
        "name": "example_user",
        "content": "Let's circle back when we have more "
        "bandwidth to touch base on opportunities for increased leverage.",
    },
    {
        "role": "system",
        "name": "example_assistant",
        "content": "Let's talk later when we're less busy about how to do better.",
    },
    {
        "role": "user",
        "content": "This late pivot means we don't have time to boil the ocean "
        "for the client deliverable.",
    },
]


class TestCreateTokenizer:
    @pytest.mark.parametrize(
        ("model", "encoding"),
        [
            ("gpt-4o", "o200k_base"),
            ("gpt-4o-mini", "o200k_base"),
            ("gpt-4.1", "o200k_base"),
            ("gpt-5", "o200k_base"),
            ("o1", "o200k_base"),
            ("o3-mini", "o200k_base"),
            ("o4-mini", "o200k_base"),
            ("gpt-4", "cl100k_base"),
            ("gpt-4-0613", "cl100k_base"),
            ("gpt-3.5-turbo", "cl100k_base"),
            ("cl100k_base", "cl100k_base"),
            ("o200k_base", "o200k_base"),
        ],
    )
    def test_openai_models_map_to_tiktokens_own_table_and_are_exact(
        self, model: str, encoding: str
    ) -> None:
        tokenizer = create_tokenizer(model)
        assert isinstance(tokenizer, TiktokenTokenizer)
        assert tokenizer.encoding_name == encoding
        assert tokenizer.exact is True
        if model != encoding:
            assert tiktoken.model.encoding_name_for_model(model) == encoding

    def test_claude_is_a_cl100k_approximation_reported_as_not_exact(self) -> None:
        tokenizer = create_tokenizer("claude-3-5-sonnet-20241022")
        assert isinstance(tokenizer, TiktokenTokenizer)
        assert tokenizer.encoding_name == "cl100k_base"
        assert tokenizer.exact is False
        assert "approximated" in tokenizer.name

    def test_estimate_is_ceil_of_chars_over_four_and_not_exact(self) -> None:
        tokenizer = create_tokenizer("estimate")
        assert isinstance(tokenizer, EstimatingTokenizer)
        assert tokenizer.exact is False
        assert [tokenizer.count(t) for t in ("", "a", "abcd", "abcde", "é" * 8)] == [0, 1, 1, 2, 2]

    def test_unknown_model_error_lists_what_is_known(self) -> None:
        with pytest.raises(UnknownModelError) as info:
            create_tokenizer("llama-9000")
        message = str(info.value)
        assert "llama-9000" in message
        for known in ("estimate", "cl100k_base", "o200k_base", "claude-*", "gpt-4o"):
            assert known in message
        assert info.value.model == "llama-9000"

    def test_model_whose_encoding_is_not_bundled_gives_a_clear_error(self) -> None:
        with pytest.raises(TokenizerError, match="p50k_base"):
            create_tokenizer("text-davinci-003")

    @pytest.mark.parametrize("bad", ["", None, 42])
    def test_model_must_be_a_non_empty_string(self, bad: object) -> None:
        with pytest.raises(TokenizerError):
            create_tokenizer(bad)  # type: ignore[arg-type]

    @pytest.mark.parametrize("model", ["gpt-4o", "gpt-4", "claude-3-5-sonnet", "estimate"])
    def test_tokenizers_made_alike_are_equal(self, model: str) -> None:
        assert create_tokenizer(model) == create_tokenizer(model)
        assert hash(create_tokenizer(model)) == hash(create_tokenizer(model))

    @pytest.mark.parametrize(
        ("a", "b"), [("gpt-4o", "gpt-4"), ("gpt-4o", "gpt-4.1"), ("gpt-4o", "o200k_base"),
                     ("gpt-4", "claude-3-5-sonnet"), ("estimate", "gpt-4o")]
    )  # fmt: skip
    def test_tokenizers_of_other_models_or_encodings_differ(self, a: str, b: str) -> None:
        assert create_tokenizer(a) != create_tokenizer(b)

    def test_built_in_tokenizers_satisfy_the_protocol(self) -> None:
        assert isinstance(create_tokenizer("gpt-4o"), Tokenizer)
        assert isinstance(create_tokenizer("estimate"), Tokenizer)


class TestOfflineEncodings:
    def test_each_encoding_is_built_once_per_process(self) -> None:
        assert _tokens.get_encoding("o200k_base") is _tokens.get_encoding("o200k_base")
        assert create_tokenizer("gpt-4o").encoding is create_tokenizer("gpt-4.1").encoding

    @pytest.mark.parametrize(
        ("name", "expected"),
        [("cl100k_base", [15339, 1917]), ("o200k_base", [24912, 2375])],
    )
    def test_bundled_encodings_give_the_official_token_ids(
        self, name: str, expected: list[int]
    ) -> None:
        assert _tokens.get_encoding(name).encode_ordinary("hello world") == expected

    def test_rank_file_with_wrong_hash_is_refused(self) -> None:
        url = "https://example.invalid/encodings/cl100k_base.tiktoken"
        with pytest.raises(TokenizerError, match="sha256"):
            _tokens._read_bundled_ranks(url, expected_hash=hashlib.sha256(b"x").hexdigest())

    def test_missing_rank_file_is_a_tokenizer_error(self) -> None:
        with pytest.raises(TokenizerError, match="could not be read"):
            _tokens._read_bundled_ranks("https://example.invalid/nope_base.tiktoken")

    def test_encoding_that_is_not_bundled_is_refused(self) -> None:
        with pytest.raises(TokenizerError, match="not bundled"):
            _tokens.get_encoding("r50k_base")

    def test_special_token_text_is_counted_as_plain_text(self, gpt4o: TiktokenTokenizer) -> None:
        # encode() would raise on "<|endoftext|>"; memory text may contain it.
        assert gpt4o.count("<|endoftext|>") > 1


# Texts of about 200,000 characters in all: past parallel_min_chars, so counted on threads.
LONG_BATCH = tuple(f"text number {i}\n日本語 🙂 " * (i * 300) for i in range(13))


class TestCountMany:
    def test_a_long_batch_counted_on_threads_equals_counting_one_by_one(self) -> None:
        tokenizer = TiktokenTokenizer("o200k_base", threads=3)
        assert sum(map(len, LONG_BATCH)) >= tokenizer.parallel_min_chars
        assert tokenizer.count_many(LONG_BATCH) == [tokenizer.count(t) for t in LONG_BATCH]

    @pytest.mark.parametrize("threads", [1, 2])
    def test_a_short_batch_equals_counting_one_by_one(self, threads: int) -> None:
        tokenizer = TiktokenTokenizer("cl100k_base", threads=threads)
        texts = ["", "a", "hello world\n", "<|endoftext|>"]
        assert tokenizer.count_many(texts) == [tokenizer.count(t) for t in texts]
        assert tokenizer.count_many([]) == []

    def test_an_error_is_raised_to_the_caller(self) -> None:
        tokenizer = TiktokenTokenizer("o200k_base", threads=2)
        with pytest.raises(TypeError):
            tokenizer.count_many([*LONG_BATCH, 42])  # type: ignore[list-item]

    def test_one_thread_says_batches_do_not_pay(self) -> None:
        assert TiktokenTokenizer("o200k_base", threads=1).batch_min_chars is None
        several = TiktokenTokenizer("o200k_base", threads=2)
        assert several.batch_min_chars == several.parallel_min_chars

    def test_threads_default_to_the_cpus_at_most_four(self) -> None:
        expected = max(1, min(4, os.cpu_count() or 1))
        assert create_tokenizer("gpt-4o").threads == expected  # type: ignore[attr-defined]
        assert create_tokenizer("gpt-4o", threads=1).threads == 1  # type: ignore[attr-defined]

    def test_threads_do_not_make_tokenizers_differ(self) -> None:
        one, two = create_tokenizer("gpt-4o", threads=1), create_tokenizer("gpt-4o", threads=2)
        assert one == two
        assert one.cache_key == two.cache_key

    @pytest.mark.parametrize("bad", [0, -1, 1.5, "2", True])
    def test_threads_must_be_a_whole_number_of_at_least_one(self, bad: object) -> None:
        with pytest.raises(TokenizerError, match="threads"):
            create_tokenizer("gpt-4o", threads=bad)  # type: ignore[arg-type]


def _sleepy_encode(text: str) -> list[int]:
    """One token a character, found while sleeping (no CPU time: as if crowded out)."""
    time.sleep(0.005)
    return [0] * len(text)


def _failing_encode(text: str) -> list[int]:
    if text == "bad":
        raise ValueError("cannot encode 'bad'")
    return [0] * len(text)


class TestThreadedCounter:
    ENCODE = staticmethod(_tokens.get_encoding("o200k_base").encode_ordinary)

    def test_threads_count_what_one_thread_counts(self) -> None:
        counter = ThreadedCounter(self.ENCODE, 2, serial_after_crowded_s=0.0)
        assert counter.count_many(LONG_BATCH, 0) == count_each(self.ENCODE, LONG_BATCH)

    def test_an_error_in_a_helper_thread_is_raised_to_the_caller(self) -> None:
        counter = ThreadedCounter(_failing_encode, 2, serial_after_crowded_s=0.0)
        texts = ["fine"] * 15 + ["bad"]  # the last part: every thread may take it
        for _ in range(5):
            with pytest.raises(ValueError, match="bad"):
                counter.count_many(texts, 0)
        assert counter.count_many(["fine", "ok"], 0) == [4, 2]  # the threads still count

    def test_threads_that_did_not_run_side_by_side_give_way_for_a_while(self) -> None:
        counter = ThreadedCounter(_sleepy_encode, 2, serial_after_crowded_s=0.2)
        assert counter.pays()
        texts = ["ab", "c", "def", "gh"] * 3  # long enough (in time) to judge the machine by
        assert counter.count_many(texts, 0) == [2, 1, 3, 2] * 3
        assert not counter.pays()  # they used almost no CPU time: as on a busy machine
        time.sleep(0.25)
        assert counter.pays()

    def test_one_thread_never_pays(self) -> None:
        assert not ThreadedCounter(self.ENCODE, 1).pays()

    @pytest.mark.skipif(not hasattr(os, "fork"), reason="no os.fork here")
    @pytest.mark.filterwarnings("ignore::DeprecationWarning")  # fork() of a threaded process
    def test_a_forked_child_counts_on_threads_of_its_own(self) -> None:
        counter = ThreadedCounter(self.ENCODE, 2, serial_after_crowded_s=0.0)
        expected = count_each(self.ENCODE, LONG_BATCH)
        assert counter.count_many(LONG_BATCH, 0) == expected  # the parent's threads run
        pid = os.fork()
        if pid == 0:  # the child: the parent's threads are not here
            signal.alarm(20)  # a child waiting on threads that do not exist dies, not hangs
            ok = counter.count_many(LONG_BATCH, 0) == expected
            os._exit(0 if ok else 1)
        _, status = os.waitpid(pid, 0)
        assert os.waitstatus_to_exitcode(status) == 0


class TestChatFormat:
    @pytest.mark.parametrize(
        ("model", "expected"),
        [("gpt-4", 129), ("gpt-3.5-turbo", 129), ("gpt-4o", 124), ("gpt-4o-mini", 124)],
    )
    def test_cookbook_figures_are_reproduced(self, model: str, expected: int) -> None:
        assert create_tokenizer(model).count_messages(COOKBOOK_MESSAGES) == expected

    def test_empty_list_costs_the_reply_priming(self, gpt4o: TiktokenTokenizer) -> None:
        assert gpt4o.count_messages([]) == 3

    def test_each_message_costs_three_plus_role_and_content(self, gpt4o: TiktokenTokenizer) -> None:
        message = {"role": "user", "content": "hello world"}
        assert gpt4o.count_messages([message]) == 3 + 3 + 1 + 2

    def test_context_messages_count_like_dicts(self, gpt4: TiktokenTokenizer) -> None:
        as_dicts = [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "yo"}]
        as_messages = [ContextMessage("user", "hi"), ContextMessage("assistant", "yo")]
        assert gpt4.count_messages(as_messages) == gpt4.count_messages(as_dicts)

    def test_estimator_uses_the_same_formula(self, estimator: EstimatingTokenizer) -> None:
        assert estimator.count_messages([{"role": "user", "content": "abcdefgh"}]) == 3 + 1 + 2 + 3

    def test_message_without_content_is_rejected(self, gpt4o: TiktokenTokenizer) -> None:
        with pytest.raises(TypeError, match="role"):
            gpt4o.count_messages([{"role": "user"}])
