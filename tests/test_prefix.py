"""shared_prefix_tokens: the leading tokens two requests have in common."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from histories import TOKENIZERS, agent_histories
from memctx import (
    BudgetExceededError,
    ContextMessage,
    MemoryState,
    TiktokenTokenizer,
    chunks,
    create_builder,
    create_tokenizer,
)
from memctx._render.prefix import (
    EncodingMemo,
    _common_prefix_length,
    shared_messages,
    shared_prefix_tokens,
)
from memctx._render.segments import last_word_split_point, word_split_point
from memctx._render.tokens import EstimatingTokenizer
from strategies import examples

# Stand-ins for the tokens that open a message, separate its role from its content
# and close it: together the 3 tokens per message of OpenAI's counting recipe.
START, SEP, END = -1, -2, -3


def request_tokens(messages: list[ContextMessage], tokenizer: TiktokenTokenizer) -> list[int]:
    """A request as the token sequence the model reads (without the reply priming)."""
    encode = tokenizer.encoding.encode_ordinary
    out: list[int] = []
    for m in messages:
        out += [START, *encode(m.role), SEP, *encode(m.content), END]
    return out


def common_prefix(a: list[Any], b: list[Any]) -> int:
    n = 0
    for x, y in zip(a, b, strict=False):
        if x != y:
            break
        n += 1
    return n


def msg(role: str, content: str) -> ContextMessage:
    return ContextMessage(role, content)  # type: ignore[arg-type]


REQUEST = [
    msg("system", "You are a coding agent."),
    msg("user", '<user_message id="task">\nFix the test.\n</user_message>'),
    msg("assistant", '<tool_call id="c1" tool="read_file">\n{"path": "a.py"}\n</tool_call>'),
]

contents = st.text(alphabet=st.sampled_from(list('ab <>/\n"=_x1')), max_size=40)
messages = st.lists(
    st.builds(msg, st.sampled_from(["system", "user", "assistant"]), contents), max_size=4
)
# Texts around the points where tiktoken must split: newlines before and after
# letters, digits, slashes, punctuation and (Unicode) whitespace.
_FRAGMENTS = [
    *("\n", "\n/", "\n ", "\n\n", "\r\n", "/", " ", "  ", ".", ">", "a", "B", "1", "'s"),
    *(" '", "'ll", "<x", '="', "\u0301"),
]
split_texts = st.lists(
    st.sampled_from([*_FRAGMENTS, "\t", "\u00a0", "\x1c", "\u3000", "é"]), max_size=12
).map("".join)
roles = st.sampled_from(["system", "user", "assistant"])
_ENCODINGS = ["cl100k_base", "o200k_base"]


class TestSharedPrefixTokens:
    def test_identical_requests_share_everything_but_the_reply_priming(
        self, gpt4o: TiktokenTokenizer
    ) -> None:
        expected = gpt4o.count_messages(REQUEST) - gpt4o.count_messages([])

        assert shared_prefix_tokens(REQUEST, REQUEST, gpt4o) == expected

    def test_a_request_that_appends_messages_shares_all_of_the_shorter_one(
        self, gpt4o: TiktokenTokenizer
    ) -> None:
        longer = [*REQUEST, msg("user", "<tool_result>ok</tool_result>")]
        expected = gpt4o.count_messages(REQUEST) - gpt4o.count_messages([])

        assert shared_prefix_tokens(REQUEST, longer, gpt4o) == expected
        assert shared_prefix_tokens(longer, REQUEST, gpt4o) == expected

    def test_a_first_message_of_another_role_shares_only_the_opening_token(
        self, gpt4o: TiktokenTokenizer
    ) -> None:
        other_role = [msg("user", "You are a coding agent."), *REQUEST[1:]]

        assert shared_prefix_tokens(REQUEST, other_role, gpt4o) == 1

    def test_a_grown_last_message_shares_its_header_and_common_content_tokens(
        self, gpt4o: TiktokenTokenizer
    ) -> None:
        grown = [*REQUEST[:2], msg("assistant", REQUEST[2].content + "\n<thinking>hm</thinking>")]
        reference = common_prefix(request_tokens(REQUEST, gpt4o), request_tokens(grown, gpt4o))

        assert shared_prefix_tokens(REQUEST, grown, gpt4o) == reference
        whole = gpt4o.count_messages(REQUEST[:2]) - gpt4o.count_messages([])
        assert reference > whole + 2  # more than the whole messages and the header

    def test_takes_message_dicts_too(self, gpt4o: TiktokenTokenizer) -> None:
        dicts = [m.to_dict() for m in REQUEST]

        assert shared_prefix_tokens(dicts, REQUEST, gpt4o) == shared_prefix_tokens(
            REQUEST, REQUEST, gpt4o
        )

    def test_empty_requests_share_nothing(self, gpt4o: TiktokenTokenizer) -> None:
        assert shared_prefix_tokens([], REQUEST, gpt4o) == 0
        assert shared_prefix_tokens([], [], gpt4o) == 0

    @settings(max_examples=examples(200), deadline=None)
    @given(messages, messages)
    def test_equals_the_common_prefix_of_the_token_sequences(
        self, a: list[ContextMessage], b: list[ContextMessage]
    ) -> None:
        """For tiktoken, exactly the tokens the two requests begin with in common."""
        tokenizer = create_tokenizer("gpt-4o")
        assert isinstance(tokenizer, TiktokenTokenizer)
        reference = common_prefix(request_tokens(a, tokenizer), request_tokens(b, tokenizer))

        assert shared_prefix_tokens(a, b, tokenizer) == reference
        assert shared_prefix_tokens(b, a, tokenizer) == reference

    @settings(max_examples=examples(300), deadline=None)
    @given(common=split_texts, rest_a=split_texts, rest_b=split_texts, role=roles)
    def test_a_known_content_count_gives_the_same_figure(
        self, common: str, rest_a: str, rest_b: str, role: str
    ) -> None:
        """Given the count of a differing message's content, only the texts after the last
        point where both must split are encoded; the figure is the same."""
        tokenizer = create_tokenizer("gpt-4o")
        assert isinstance(tokenizer, TiktokenTokenizer)
        a = [REQUEST[0], msg(role, common + rest_a)]
        b = [REQUEST[0], msg(role, common + rest_b)]
        reference = common_prefix(request_tokens(a, tokenizer), request_tokens(b, tokenizer))

        def content_tokens(message: Any) -> int:
            return tokenizer.count(message.content)

        assert shared_prefix_tokens(a, b, tokenizer, content_tokens) == reference
        assert shared_prefix_tokens(b, a, tokenizer, content_tokens) == reference

    @settings(max_examples=examples(300), deadline=None)
    @given(common=split_texts, rest_a=split_texts, rest_b=split_texts, role=roles)
    def test_encoding_only_around_the_first_difference_gives_the_same_figure(
        self, common: str, rest_a: str, rest_b: str, role: str
    ) -> None:
        """Without counts, the contents are encoded only between the split points around
        their first differing character; the figure is still exact."""
        tokenizer = create_tokenizer("gpt-4o")
        assert isinstance(tokenizer, TiktokenTokenizer)
        a = [REQUEST[0], msg(role, common + rest_a + "\nTail of a.")]
        b = [REQUEST[0], msg(role, common + rest_b + "\nTail of b.")]
        reference = common_prefix(request_tokens(a, tokenizer), request_tokens(b, tokenizer))

        assert shared_prefix_tokens(a, b, tokenizer) == reference
        assert shared_prefix_tokens(b, a, tokenizer) == reference

    @settings(max_examples=examples(100), deadline=None)
    @given(messages, messages)
    def test_an_estimate_never_exceeds_either_request(
        self, a: list[ContextMessage], b: list[ContextMessage]
    ) -> None:
        estimator = EstimatingTokenizer()
        shared = shared_prefix_tokens(a, b, estimator)
        priming = estimator.count_messages([])

        assert (
            0 <= shared <= min(estimator.count_messages(a), estimator.count_messages(b)) - priming
        )
        assert shared == shared_prefix_tokens(b, a, estimator)


@given(
    common=st.text("ab", max_size=400),
    rest_a=st.text("abc", max_size=300),
    rest_b=st.text("abd", max_size=300),
)
def test_the_common_prefix_length_is_where_two_texts_first_differ(
    common: str, rest_a: str, rest_b: str
) -> None:
    a, b = common + rest_a, common + rest_b
    expected = next((i for i, (x, y) in enumerate(zip(a, b, strict=False)) if x != y), None)
    assert _common_prefix_length(a, b) == (min(len(a), len(b)) if expected is None else expected)


class TestWordSplitPoints:
    """The points where tiktoken must split a text: the prefix figure encodes only between
    the ones around the first differing character."""

    @settings(max_examples=examples(300), deadline=None)
    @given(text=split_texts, start=st.integers(0, 14), encoding=st.sampled_from(_ENCODINGS))
    def test_a_text_encodes_as_its_two_sides_of_a_split_point(
        self, text: str, start: int, encoding: str
    ) -> None:
        encode = create_tokenizer(encoding).encoding.encode_ordinary  # type: ignore[attr-defined]
        end = min(start, len(text))
        for split in (word_split_point(text, start), last_word_split_point(text, end)):
            if split:
                assert encode(text) == encode(text[:split]) + encode(text[split:])

    def test_a_space_after_a_word_or_a_quote_is_a_split_point(self) -> None:
        text = '<thinking id="g1">a  b'
        assert word_split_point(text, 1) == 9  # before " id"
        assert word_split_point(text, 10) == 19  # before "  b": only the first space
        assert last_word_split_point(text, 12) == 9

    def test_whitespace_before_a_space_is_not_a_split_point(self) -> None:
        assert word_split_point("a\t b", 1) is None
        assert last_word_split_point("\t b", 3) == 0


class TestSharedMessages:
    @settings(max_examples=examples(200))
    @given(a=messages, b=messages)
    def test_counts_the_leading_messages_equal_in_role_and_content(
        self, a: list[ContextMessage], b: list[ContextMessage]
    ) -> None:
        same = shared_messages(a, b)

        assert a[:same] == b[:same]
        assert same == min(len(a), len(b)) or a[same] != b[same]
        assert same == shared_messages(b, a)

    def test_a_result_reports_the_messages_it_shares_with_the_previous_build(self) -> None:
        gpt4o = create_tokenizer("gpt-4o")
        builder = create_builder(gpt4o)
        start = MemoryState([chunks.system("Be brief."), chunks.user("Fix the test.")])
        first = builder.build(start)
        state = start.append(chunks.assistant("On it."))  # the same history, grown
        grown = builder.build(state)

        assert first.prefix_messages_shared == 0  # no previous build
        assert grown.prefix_messages_shared == 2  # the system message and the task
        assert builder.build(state, max_tokens=10_000).prefix_messages_shared == 0  # other options

    def test_a_new_tokenizer_object_for_each_build_still_finds_the_previous_build(self) -> None:
        builder = create_builder()
        start = MemoryState([chunks.system("Be brief."), chunks.user("Fix the test.")])
        builder.build(start, max_tokens=1000, tokenizer=create_tokenizer("gpt-4o"))
        grown = start.append(chunks.assistant("On it."))

        result = builder.build(grown, max_tokens=1000, tokenizer=create_tokenizer("gpt-4o"))

        assert result.prefix_messages_shared == 2
        assert result.prefix_tokens_shared > 0

    @pytest.mark.parametrize("strategy", ["recent", "stable", "priority"])
    @pytest.mark.parametrize("prompt", [None, "You are a careful agent."])
    def test_building_the_same_state_again_reports_its_whole_request_as_shared(
        self, strategy: str, prompt: str | None
    ) -> None:
        gpt4o = create_tokenizer("gpt-4o")
        builder = create_builder(gpt4o)
        state = MemoryState(
            [chunks.system("Be brief."), chunks.user("Fix the test."), chunks.assistant("On it.")]
        )
        options: dict[str, Any] = {"strategy": strategy, "system_prompt": prompt}
        first = builder.build(state, 2000, **options)

        again = builder.build(state, 2000, **options)

        whole = gpt4o.count_messages(again.messages) - gpt4o.count_messages([])
        assert again == first
        assert first.prefix_tokens_shared == 0  # no previous build
        assert again.prefix_tokens_shared == whole
        assert again.prefix_messages_shared == len(again.messages)


@settings(max_examples=examples(60), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_a_results_shared_prefix_equals_a_count_of_the_two_requests(data: st.DataObject) -> None:
    """The result counts whole shared messages from its chunks' counts: the figure must be
    the one counting both requests gives."""
    history = data.draw(agent_histories())
    tokenizer = TOKENIZERS[data.draw(st.sampled_from(sorted(TOKENIZERS)))]
    strategy = data.draw(st.sampled_from(["recent", "stable"]))
    budget = data.draw(st.one_of(st.none(), st.integers(300, 3000)))
    prompt = data.draw(st.one_of(st.none(), st.just("You are a careful agent.")))
    again = data.draw(st.sets(st.integers(0, max(0, len(history) - 1)), max_size=3))
    builder = create_builder(tokenizer)
    state = MemoryState()
    previous = None
    for position, chunk in enumerate(history):
        state = state.append(chunk)
        for _ in range(2 if position in again else 1):  # some states are built twice
            try:
                result = builder.build(state, budget, strategy=strategy, system_prompt=prompt)
            except BudgetExceededError:
                continue  # the builder's previous build stays the last one that succeeded
            expected = (
                0
                if previous is None
                else shared_prefix_tokens(result.messages, previous.messages, tokenizer)
            )
            assert result.prefix_tokens_shared == expected
            previous = result


class TestEncodingMemo:
    def test_reuses_the_last_figures_encodings_and_keeps_only_its_own(
        self, gpt4o: TiktokenTokenizer
    ) -> None:
        calls: list[str] = []

        def encode(text: str) -> list[int]:
            calls.append(text)
            return gpt4o.encoding.encode_ordinary(text)

        first = EncodingMemo(encode)
        first("<a>\n")
        second = EncodingMemo(encode, first.encoded)
        assert second("<a>\n") == gpt4o.encoding.encode_ordinary("<a>\n")
        second("<b>\n")
        assert calls == ["<a>\n", "<b>\n"]
        assert set(second.encoded) == {"<a>\n", "<b>\n"}
        third = EncodingMemo(encode, second.encoded)
        third("<b>\n")
        assert set(third.encoded) == {"<b>\n"}
