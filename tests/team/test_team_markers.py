"""Routing markers: stripping [FROM:…], [NEXT:…] and [TEAM_TASK]…, and reading [NEXT:…]."""

from __future__ import annotations

import re
from typing import Any

import pytest
from hypothesis import given

from memctx.team import TeamMessageError, parse_next_markers, strip_markers
from memctx.team._markers import cleanup_whitespace
from strategies import marked_texts, texts

MARKER_START = re.compile(r"\[(from:|next:|team_task\])", re.IGNORECASE)


def visible(text: str) -> str:
    """The characters of ``text`` that are not white space."""
    return re.sub(r"\s", "", text, flags=re.UNICODE).replace("\ufeff", "")


class TestStripMarkers:
    @pytest.mark.parametrize(
        ("text", "expected"),
        [
            ("[FROM:max] Hello", "Hello"),
            ("Hello [from:Max]", "Hello"),
            ("Please review [NEXT:sarah]", "Please review"),
            ("Done [NEXT:] now", "Done now"),
            ("Done [next: sarah, max]", "Done"),
            ("[TEAM_TASK] Build the app [NEXT:max] go", "go"),
            ("Intro [team_task] the task body", "Intro"),
            ("[TEAM_TASK] task [FROM:x] still task [NEXT:y] kept", "kept"),
            ("[FROM:a][NEXT:b]", ""),
            ("a  [NEXT:x]  b", "a b"),
            ("line one  \n\n   \n  line two", "line one\nline two"),
            ("tabs\t\tand\u00a0\u00a0nbsp", "tabs and nbsp"),
            ("single\ttab stays", "single\ttab stays"),
            ("[FROM:] kept: FROM needs a name", "[FROM:] kept: FROM needs a name"),
            ("[NEXT:max", "[NEXT:max"),
            ("ünïcödé [NEXT:Ünï] 无法完成", "ünïcödé 无法完成"),
        ],
    )
    def test_strips_markers_and_tidies_white_space(self, text: str, expected: str) -> None:
        assert strip_markers(text) == expected

    def test_a_from_marker_may_span_lines(self) -> None:
        assert strip_markers("[FROM:max\nsarah] hi") == "hi"

    def test_team_task_runs_to_the_end_not_only_the_end_of_a_line(self) -> None:
        assert strip_markers("keep\n[TEAM_TASK] task\nmore task\n") == "keep"

    def test_a_marker_formed_by_removing_another_is_removed_too(self) -> None:
        assert strip_markers("[NEX[NEXT:a]T:b] hi [FR[NEXT:]OM:x]") == "hi"

    @given(texts)
    def test_is_idempotent(self, text: str) -> None:
        once = strip_markers(text)

        assert strip_markers(once) == once

    @given(marked_texts())
    def test_is_idempotent_on_marked_text(self, case: tuple[str, str]) -> None:
        once = strip_markers(case[0])

        assert strip_markers(once) == once

    @given(marked_texts())
    def test_keeps_every_character_outside_markers(self, case: tuple[str, str]) -> None:
        text, outside = case

        assert visible(strip_markers(text)) == visible(outside)

    @given(texts.filter(lambda t: MARKER_START.search(t) is None))
    def test_text_without_markers_only_has_its_white_space_tidied(self, text: str) -> None:
        assert strip_markers(text) == cleanup_whitespace(text)

    @given(texts)
    def test_leaves_no_marker(self, text: str) -> None:
        stripped = strip_markers(text)

        assert re.search(r"\[(FROM:[^\]]+|NEXT:[^\]]*)\]", stripped, re.IGNORECASE) is None
        assert re.search(r"\[TEAM_TASK\]", stripped, re.IGNORECASE) is None


class TestCleanupWhitespace:
    @given(texts)
    def test_is_idempotent(self, text: str) -> None:
        once = cleanup_whitespace(text)

        assert cleanup_whitespace(once) == once

    @given(texts)
    def test_leaves_no_empty_line_and_no_edge_white_space(self, text: str) -> None:
        for line in cleanup_whitespace(text).split("\n"):
            assert line == "" or line == line.strip(" \t\r\u00a0\ufeff\u2028\u2029\v\f")


class TestParseNextMarkers:
    @pytest.mark.parametrize(
        ("text", "expected"),
        [
            ("no marker", ()),
            ("Done. [NEXT:reviewer]", ("reviewer",)),
            ("[NEXT: reviewer, lena ] and [next:coder]", ("reviewer", "lena", "coder")),
            ("[NEXT:] [NEXT: , ]", ()),
            ("[NEXT:a][NEXT:a, b]", ("a", "b")),
        ],
    )
    def test_reads_the_names_in_order_each_once(self, text: str, expected: tuple[str, ...]) -> None:
        assert parse_next_markers(text) == expected


@pytest.mark.parametrize("function", [strip_markers, parse_next_markers])
@pytest.mark.parametrize("given", [None, 5, b"[NEXT:lena]"])
def test_text_that_is_not_a_string_is_a_team_message_error(function: Any, given: object) -> None:
    with pytest.raises(TeamMessageError, match="text: must be a string"):
        function(given)
