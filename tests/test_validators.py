"""The reusable checks: what they accept, the error they raise, how they print."""

from __future__ import annotations

import re

import attrs
import pytest

from memctx import BuildOptionError, InvalidChunkError, StateFileError, ViewOperationError
from memctx._validators import (
    describe,
    int_in_range,
    is_bool,
    is_str,
    message_error,
    name,
    non_empty_str,
    optional,
    state_file_error,
)


class TestDescribe:
    def test_a_short_value_is_its_repr(self) -> None:
        assert describe("yes") == "'yes'"

    def test_a_long_text_is_cut_and_sized(self) -> None:
        shown = describe("x" * 1_000_000)

        assert shown.endswith("... (str of 1000000 characters)")
        assert len(shown) < 100

    def test_an_int_too_long_to_print_is_described(self) -> None:
        assert describe(10**5000) == "an int of more than 4300 digits"

    def test_a_value_whose_repr_fails_is_named_by_its_type(self) -> None:
        deep: list[object] = []
        for _ in range(100_000):
            deep = [deep]

        assert describe(deep) == "a list"
        assert describe([10**5000]) == "a list"


class TestAsAttrsValidators:
    def test_the_field_name_and_prefix_name_the_value(self) -> None:
        @attrs.frozen
        class Options:
            flag: bool = attrs.field(validator=is_bool(InvalidChunkError, prefix="metadata."))

        with pytest.raises(InvalidChunkError, match=r"^metadata\.flag: must be a bool, got 1$"):
            Options(flag=1)  # type: ignore[arg-type]

    def test_the_error_factory_decides_the_class(self) -> None:
        @attrs.frozen
        class Options:
            count: int = attrs.field(validator=int_in_range(BuildOptionError, 0))

        with pytest.raises(BuildOptionError) as caught:
            Options(count=-1)

        assert caught.value.option == "count"


class TestChecks:
    @pytest.mark.parametrize(
        ("check", "value", "message"),
        [
            (is_str(InvalidChunkError), 5, "must be a string, got int"),
            (non_empty_str(InvalidChunkError), "", "must not be empty"),
            (non_empty_str(InvalidChunkError, blank_ok=False), "  ", "must not be empty or blank"),
            (non_empty_str(InvalidChunkError, max_length=3), "abcd", "at most 3 characters, got 4"),
            (int_in_range(InvalidChunkError), True, "must be an int, got True"),
            (int_in_range(InvalidChunkError, 1), 0, "must be a positive int, got 0"),
            (int_in_range(InvalidChunkError, None, 9), 10, "must be an int of at most 9"),
            (int_in_range(InvalidChunkError, 0, 1), 10**5000, "from 0 to 1, got an int of more"),
            (name(InvalidChunkError, max_length=9, forbidden=re.compile("[\x00]"),
                  forbidden_name="NUL"), "a\x00",
                  r"must not contain NUL, got '\x00' at position 1"),
        ],
        ids=["str", "empty", "blank", "long", "bool-as-int", "positive", "at-most", "huge", "name"],
    )  # fmt: skip
    def test_a_bad_value_is_refused_with_a_message_naming_it(
        self, check: object, value: object, message: str
    ) -> None:
        with pytest.raises(InvalidChunkError) as caught:
            check.check(value, "field")  # type: ignore[attr-defined]

        assert str(caught.value) == f"field: {str(caught.value).split(': ', 1)[1]}"
        assert message in str(caught.value)

    def test_a_good_value_is_returned(self) -> None:
        assert int_in_range(InvalidChunkError, 0, 9).check(3, "n") == 3
        assert optional(is_bool(InvalidChunkError)).check(None, "b") is None

    def test_a_message_error_puts_the_field_first(self) -> None:
        with pytest.raises(ViewOperationError, match=r"^keep_system must be a bool, got 'no'$"):
            is_bool(message_error(ViewOperationError)).check("no", "keep_system")

    def test_a_state_file_error_carries_the_field(self) -> None:
        with pytest.raises(StateFileError) as caught:
            is_bool(state_file_error).check(0, "store.flag")

        assert caught.value.field == "store.flag"


class TestRepr:
    @pytest.mark.parametrize(
        ("check", "shown"),
        [
            (is_bool(InvalidChunkError), "<is_bool validator>"),
            (int_in_range(InvalidChunkError, -1, 1), "<int validator: an int from -1 to 1>"),
            (optional(non_empty_str(InvalidChunkError, max_length=5)),
             "<optional validator for <str validator: non-empty, at most 5 characters> or None>"),
            (name(InvalidChunkError, max_length=9, forbidden=re.compile("x"),
                  forbidden_name="x"),
             "<str validator: non-empty, not blank, at most 9 characters, no x>"),
        ],
    )  # fmt: skip
    def test_says_what_it_accepts(self, check: object, shown: str) -> None:
        assert repr(check) == shown
