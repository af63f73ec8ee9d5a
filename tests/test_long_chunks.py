"""Long chunks are measured against the room left from a prefix of their rendering.

A chunk whose text is longer than ``LONG_CHUNK_CHARS`` is not rendered whole
to learn its role, nor, when the tokenizer's counts add up, to find that it
cannot fit: the build counts a prefix its renderer makes. The result must be
exactly the result of rendering everything whole.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from unittest import mock

import attrs
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import memctx._build.chunk_costs
from histories import agent_histories, build_options
from memctx import (
    BudgetExceededError,
    Chunk,
    ContextBuildResult,
    ExclusionReason,
    MemoryState,
    RendererRegistry,
    chunks,
    create_builder,
    create_tokenizer,
)
from memctx._render.tokens import TiktokenTokenizer
from memctx.xml import sanitize
from memctx_renderers.environment import EnvironmentRenderer
from strategies import examples, texts


@contextmanager
def long_from(chars: int, prefix: int | None = None) -> Iterator[None]:
    """Chunks of more than ``chars`` characters are long; prefixes of ``prefix`` characters."""
    with mock.patch.object(memctx._build.chunk_costs, "LONG_CHUNK_CHARS", chars):
        if prefix is None:
            yield
            return
        with mock.patch.object(memctx._build.chunk_costs, "prefix_chars", return_value=prefix):
            yield


@contextmanager
def no_prefixes() -> Iterator[None]:
    with mock.patch.object(RendererRegistry, "render_prefix", return_value=None):
        yield


def outcome(result: ContextBuildResult) -> tuple[object, ...]:
    return (
        result.messages,
        result.token_count,
        result.included_chunk_ids,
        result.excluded_chunk_ids,
        {i: e.reason for i, e in result.exclusions.items()},
    )


LINES = st.lists(
    st.sampled_from(["x = a < b && c > d", "]]>", "\r", "  indented", "/path/to", "plain"]),
    min_size=1,
    max_size=6,
).map("\n".join)


def lengthened(data: st.DataObject, state: MemoryState) -> MemoryState:
    """``state`` with some text chunks made long: many lines of code-like text."""
    made = []
    for chunk in state:
        if isinstance(chunk.content, str) and data.draw(st.integers(0, 2)) == 0:
            lines = data.draw(LINES)
            chunk = attrs.evolve(chunk, content=chunk.content + (lines + "\n") * 60)
        made.append(chunk)
    return MemoryState(made)


@settings(max_examples=examples(120), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_a_build_that_renders_long_chunks_in_part_equals_one_that_renders_them_whole(
    data: st.DataObject,
) -> None:
    state = lengthened(data, data.draw(agent_histories()))
    opts = data.draw(build_options(state))
    threshold = data.draw(st.integers(0, 80))
    prefix = data.draw(st.one_of(st.none(), st.integers(0, 3000)))
    with long_from(threshold, prefix):
        try:
            in_part = outcome(create_builder().build(state, **opts))
        except BudgetExceededError as exc:
            in_part = ("refused", exc.needed, exc.available)
        with no_prefixes():
            try:
                whole = outcome(create_builder().build(state, **opts))
            except BudgetExceededError as exc:
                whole = ("refused", exc.needed, exc.available)

    assert in_part == whole


@settings(max_examples=examples(40), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_rebuilding_with_more_room_goes_on_from_a_prefix_count(data: st.DataObject) -> None:
    state = lengthened(data, data.draw(agent_histories()))
    small, large = sorted(data.draw(st.lists(st.integers(60, 2500), min_size=2, max_size=2)))
    builder = create_builder(tokenizer=create_tokenizer("gpt-4o"))
    prefix = data.draw(st.integers(0, 3000))
    with long_from(20, prefix):
        try:
            builder.build(state, max_tokens=small)
            again = outcome(builder.build(state, max_tokens=large))
        except BudgetExceededError:
            return
        with no_prefixes():
            fresh = outcome(
                create_builder(tokenizer=create_tokenizer("gpt-4o")).build(state, max_tokens=large)
            )

    assert again == fresh


class CountingEnvironmentRenderer(EnvironmentRenderer):
    """The built-in environment renderer, counting whole renders per chunk id."""

    def __init__(self) -> None:
        self.whole: list[str] = []
        self.prefixes: list[str] = []

    def render(self, chunk: Chunk) -> str:
        self.whole.append(chunk.id)
        return super().render(chunk)

    def render_prefix(self, chunk: Chunk, chars: int) -> str:
        self.prefixes.append(chunk.id)
        return super().render_prefix(chunk, chars)


def huge_output_history(size: int) -> MemoryState:
    line = "drwxr-xr-x  2 user group 4096 Jan  1 00:00 some/directory/name <a> & b\n"
    huge = line * (size // len(line) + 1)
    return MemoryState(
        [
            chunks.user("List everything.", id="task"),
            chunks.tool_call("bash", {"cmd": "ls -lR /"}, call_id="c1", id="call"),
            chunks.tool_result("bash", huge, call_id="c1", id="huge"),
            chunks.assistant("That is a lot; I will look at one directory.", id="reply"),
            chunks.tool_call("bash", {"cmd": "ls"}, call_id="c2", id="call2"),
            chunks.tool_result("bash", "a\nb\n", call_id="c2", id="small"),
        ]
    )


@pytest.mark.parametrize("content", ["cdata", "escape"])
def test_a_huge_chunk_that_cannot_fit_is_never_rendered_whole(content: str) -> None:
    renderer = CountingEnvironmentRenderer()
    builder = create_builder(tokenizer=create_tokenizer("gpt-4o"), content=content)  # type: ignore[arg-type]
    builder.register_renderer(renderer)

    result = builder.build(huge_output_history(2_000_000), max_tokens=2000)

    assert result.exclusions["huge"].reason is ExclusionReason.OVER_BUDGET
    assert "huge" in renderer.prefixes
    assert "huge" not in renderer.whole
    assert result.included_chunk_ids == ("reply", "call2", "small")


def test_a_huge_chunk_that_fits_is_rendered_whole_and_counted_exactly() -> None:
    state = huge_output_history(300_000)
    builder = create_builder(tokenizer=create_tokenizer("gpt-4o"))

    result = builder.build(state, max_tokens=200_000)

    assert "huge" in result.included_chunk_ids
    assert result.token_count == builder.tokenizer.count_messages(result.messages)
    with no_prefixes():
        whole = create_builder(tokenizer=create_tokenizer("gpt-4o")).build(
            state, max_tokens=200_000
        )
    assert outcome(whole) == outcome(result)


@pytest.mark.parametrize("content", ["cdata", "escape"])
@pytest.mark.parametrize("prefix", [0, 40, 500, 5000])
def test_a_long_chunk_counted_first_in_part_then_whole_is_counted_exactly(
    content: str, prefix: int
) -> None:
    output = "x = a < b && c > d\n]]>\r\nplain text\n" * 80
    state = MemoryState(
        [
            chunks.user("Run it.", id="task"),
            chunks.tool_call("bash", {"cmd": "run"}, call_id="c1", id="call"),
            chunks.tool_result("bash", output, call_id="c1", id="long"),
            chunks.assistant("Done.", id="done"),
        ]
    )
    tokenizer = create_tokenizer("gpt-4o")
    builder = create_builder(tokenizer=tokenizer, content=content)  # type: ignore[arg-type]

    with long_from(100, prefix):
        builder.build(state, max_tokens=300)  # counts the long chunk in part, then refuses it
        result = builder.build(state, max_tokens=5000)

    assert "long" in result.included_chunk_ids
    assert result.token_count == tokenizer.count_messages(result.messages)


class RecordingTokenizer(TiktokenTokenizer):
    """gpt-4o's encoding, remembering the length of every text it encodes."""

    def __init__(self) -> None:
        super().__init__("o200k_base", model="gpt-4o")
        self.lengths: list[int] = []

    def count(self, text: str) -> int:
        self.lengths.append(len(text))
        return super().count(text)


def one_huge_line(kind: str) -> str:
    if kind == "minified json":
        return json.dumps([{"k": i, "v": "abc"} for i in range(600_000)], separators=(",", ":"))
    if kind == "words":
        return "word " * 2_000_000
    return "x" * 10_000_000


class TestHugeLines:
    """Text without line breaks cannot be counted in pieces; it is not encoded whole either."""

    @pytest.mark.parametrize("kind", ["minified json", "words", "one letter"])
    def test_a_huge_line_that_cannot_fit_is_never_encoded(self, kind: str) -> None:
        tokenizer = RecordingTokenizer()
        renderer = CountingEnvironmentRenderer()
        builder = create_builder(tokenizer=tokenizer)
        builder.register_renderer(renderer)
        state = MemoryState(
            [
                chunks.user("Dump it.", id="task"),
                chunks.tool_call("bash", {"cmd": "cat"}, call_id="c1", id="call"),
                chunks.tool_result("bash", one_huge_line(kind), call_id="c1", id="huge"),
                chunks.assistant("Too long; I will grep instead.", id="reply"),
            ]
        )

        result = builder.build(state, max_tokens=8_000)

        assert result.exclusions["huge"].reason is ExclusionReason.OVER_BUDGET
        assert max(tokenizer.lengths) < 300_000
        if kind != "one letter":  # one run of letters is a single pre-token: see docs/limits.md
            assert "huge" not in renderer.whole

    @settings(max_examples=examples(200), deadline=None)
    @given(text=texts, extra=texts, repeat=st.integers(1, 400), limit=st.integers(0, 300))
    def test_more_than_never_claims_a_text_longer_than_it_is(
        self, text: str, extra: str, repeat: int, limit: int
    ) -> None:
        tokenizer = create_tokenizer("gpt-4o")
        assert isinstance(tokenizer, TiktokenTokenizer)
        whole = sanitize(text * repeat + extra)
        start = whole[: len(whole) // 2]
        if tokenizer.more_than(whole, limit):
            assert tokenizer.count(whole) > limit
        if tokenizer.more_than(start, limit, complete=False):
            assert tokenizer.count(whole) > limit
