"""ParsedOptions: a build's options parsed once per distinct call, never mixed up."""

from __future__ import annotations

import pytest

from memctx import BuildOptionError, create_tokenizer
from memctx._build.options import ParsedOptions


class TestParsedOptions:
    def test_a_repeated_call_of_plain_values_is_parsed_once(self) -> None:
        parse = ParsedOptions()
        first = parse(8_000, {"reserve_tokens": 100, "strategy": "stable"})
        assert parse(8_000, {"strategy": "stable", "reserve_tokens": 100}) is first

    def test_a_value_of_another_type_is_checked_anew(self) -> None:
        parse = ParsedOptions()
        parse(8_000, {"reserve_tokens": 1})
        with pytest.raises(BuildOptionError):
            parse(8_000, {"reserve_tokens": True})  # equal to 1, but not an int

    def test_each_tokenizer_object_gets_its_own_options(self) -> None:
        parse = ParsedOptions()
        one, other = create_tokenizer("gpt-4o"), create_tokenizer("gpt-4o")
        assert parse(8_000, {"tokenizer": one}).tokenizer is one
        assert parse(8_000, {"tokenizer": other}).tokenizer is other
        assert parse(8_000, {"tokenizer": one}) is parse(8_000, {"tokenizer": one})

    def test_other_values_are_parsed_each_time(self) -> None:
        parse = ParsedOptions()
        ids = ["a", "b"]
        first = parse(8_000, {"pinned_chunk_ids": ids})
        ids.append("c")  # a list may change between calls: never served from the cache
        assert parse(8_000, {"pinned_chunk_ids": ids}).pinned_chunk_ids != first.pinned_chunk_ids
