"""ContextBuilder: grouping, options, budget strategies, atomic units, the report."""

from __future__ import annotations

import gc
import itertools
import json
import pickle
import weakref
from typing import Any

import pytest

from memctx import (
    BudgetExceededError,
    BuildOptionError,
    BuildOptions,
    Chunk,
    ChunkNotFoundError,
    ChunkType,
    ContextBuilder,
    DuplicateChunkError,
    ExclusionReason,
    MemoryState,
    Role,
    chunks,
    create_builder,
)
from memctx._render.tokens import TiktokenTokenizer
from memctx.compress import MaxChars
from memctx.xml import render_element


def ids(result_ids: tuple[str, ...]) -> list[str]:
    return list(result_ids)


class TestGrouping:
    def test_consecutive_chunks_of_one_role_become_one_message(
        self, builder: ContextBuilder, coding_state: MemoryState
    ) -> None:
        result = builder.build(coding_state)
        assert [m.role for m in result.messages] == [
            "system",
            "user",
            "assistant",
            "user",
            "assistant",
            "user",
            "assistant",
            "user",
            "assistant",
        ]
        assert result.messages[2].chunk_ids == ("think1", "call1")
        roles = [m.role for m in result.messages]
        assert all(a != b for a, b in itertools.pairwise(roles))

    def test_message_content_is_each_chunks_xml_followed_by_a_newline(
        self, builder: ContextBuilder, coding_state: MemoryState
    ) -> None:
        result = builder.build(coding_state)
        message = result.messages[2]
        expected = "".join(builder.render(coding_state.get(i))[1] + "\n" for i in message.chunk_ids)
        assert message.content == expected

    def test_system_prompt_and_system_chunks_form_the_leading_system_message(
        self, builder: ContextBuilder
    ) -> None:
        state = MemoryState(
            [chunks.user("hi", id="u"), chunks.system("late rule", id="s"), chunks.assistant("a")]
        )
        result = builder.build(state, system_prompt="You are X.")
        first = result.messages[0]
        assert first.role == "system"
        assert first.content.startswith('You are X.\n<system_context id="s"')
        assert first.chunk_ids == ("s",)
        assert [m.role for m in result.messages[1:]] == ["user", "assistant"]

    def test_system_prompt_alone_makes_a_system_message(self, builder: ContextBuilder) -> None:
        result = builder.build(MemoryState([chunks.user("hi")]), system_prompt="Be brief.")
        assert result.messages[0].content == "Be brief.\n"
        assert result.messages[0].chunk_ids == ()

    def test_empty_state_builds_no_messages(self, builder: ContextBuilder) -> None:
        result = builder.build(MemoryState())
        assert result.messages == ()
        assert result.included_chunk_ids == result.excluded_chunk_ids == ()

    def test_to_openai_gives_chat_completion_dicts(
        self, builder: ContextBuilder, coding_state: MemoryState
    ) -> None:
        result = builder.build(coding_state)
        assert result.to_openai()[1] == {"role": "user", "content": result.messages[1].content}

    def test_provider_adapters_move_system_text_out_of_the_turns(
        self, builder: ContextBuilder, coding_state: MemoryState
    ) -> None:
        result = builder.build(coding_state, system_prompt="P")
        anthropic = result.to_anthropic()
        assert anthropic["system"] == result.messages[0].content
        assert anthropic["messages"][0]["role"] == "user"
        gemini = result.to_gemini()
        assert gemini["config"]["system_instruction"] == result.messages[0].content
        assert {c["role"] for c in gemini["contents"]} == {"user", "model"}
        assert result.to_text().startswith("=== system ===\nP\n")


class TestFilters:
    def test_include_system_false_reports_the_option(
        self, builder: ContextBuilder, coding_state: MemoryState
    ) -> None:
        result = builder.build(coding_state, include_system=False)
        assert "sys" not in result.included_chunk_ids
        assert result.exclusions["sys"].reason is ExclusionReason.SYSTEM_EXCLUDED

    def test_include_environment_false_drops_results_and_keeps_calls(
        self, builder: ContextBuilder, coding_state: MemoryState
    ) -> None:
        result = builder.build(coding_state, include_environment=False)
        assert result.excluded_for("include_environment") == ("res1", "res2")
        assert "call1" in result.included_chunk_ids

    def test_exclude_types_reports_the_option(
        self, builder: ContextBuilder, coding_state: MemoryState
    ) -> None:
        result = builder.build(coding_state, exclude_types=[ChunkType.DELEGATION, "WORKFLOW"])
        assert set(result.excluded_for(ExclusionReason.TYPE_EXCLUDED)) == {
            "spawn",
            "sub_res",
            "call1",
            "call2",
        }

    def test_include_only_chunk_ids_keeps_just_those(
        self, builder: ContextBuilder, coding_state: MemoryState
    ) -> None:
        result = builder.build(coding_state, include_only_chunk_ids=["task", "answer"])
        assert result.included_chunk_ids == ("task", "answer")
        assert result.exclusions["sys"].reason is ExclusionReason.NOT_SELECTED

    def test_include_only_an_unknown_id_is_an_error(
        self, builder: ContextBuilder, coding_state: MemoryState
    ) -> None:
        with pytest.raises(ChunkNotFoundError, match="nope"):
            builder.build(coding_state, include_only_chunk_ids=["nope"])

    @pytest.mark.parametrize(
        ("options", "match"),
        [
            ({"max_tokens": 0}, "max_tokens"),
            ({"max_tokens": 100, "reserve_tokens": 100}, "reserve_tokens"),
            ({"reserve_tokens": -1}, "reserve_tokens"),
            ({"strategy": "random"}, "strategy"),
            ({"exclude_types": ["NOPE"]}, "exclude_types"),
            ({"include_only_chunk_ids": "task"}, "chunk ids"),
            ({"tokenizer": "gpt-4o"}, "tokenizer"),
            ({"system_prompt": 3}, "system_prompt"),
            ({"include_system": "yes"}, "include_system"),
            ({"no_such_option": 1}, "no_such_option"),
        ],
    )
    def test_bad_options_raise_build_option_error(
        self,
        builder: ContextBuilder,
        coding_state: MemoryState,
        options: dict[str, object],
        match: str,
    ) -> None:
        with pytest.raises(BuildOptionError, match=match):
            builder.build(coding_state, **options)  # type: ignore[arg-type]

    def test_options_object_is_accepted(
        self, builder: ContextBuilder, coding_state: MemoryState
    ) -> None:
        options = BuildOptions(max_tokens=10_000, include_system=False)
        assert "sys" not in builder.build(coding_state, options=options).included_chunk_ids


class TestBudget:
    def test_recent_keeps_pinned_then_the_newest_without_holes(
        self, builder: ContextBuilder, coding_state: MemoryState, gpt4o: TiktokenTokenizer
    ) -> None:
        full = builder.build(coding_state, tokenizer=gpt4o)
        result = builder.build(coding_state, max_tokens=full.token_count - 30, tokenizer=gpt4o)
        assert result.token_count <= full.token_count - 30
        included = ids(result.included_chunk_ids)
        assert included[0] == "sys"
        body = [i for i in coding_state.ids if i != "sys"]
        kept = [i for i in included if i != "sys"]
        assert kept == body[len(body) - len(kept) :]

    def test_tool_call_and_result_are_kept_or_dropped_together(
        self, builder: ContextBuilder, coding_state: MemoryState, gpt4o: TiktokenTokenizer
    ) -> None:
        full = builder.build(coding_state, tokenizer=gpt4o)
        for budget in range(60, full.token_count + 1, 7):
            included = set(
                builder.build(coding_state, max_tokens=budget, tokenizer=gpt4o).included_chunk_ids
            )
            assert ("call1" in included) == ("res1" in included)
            assert ("call2" in included) == ("res2" in included)
            assert ("spawn" in included) == ("sub_res" in included)

    def test_a_pinned_chunk_is_always_kept(
        self, builder: ContextBuilder, coding_state: MemoryState, gpt4o: TiktokenTokenizer
    ) -> None:
        result = builder.build(
            coding_state, max_tokens=160, tokenizer=gpt4o, pinned_chunk_ids=["task"]
        )
        assert {"sys", "task", "answer"} <= set(result.included_chunk_ids)
        assert "think1" not in result.included_chunk_ids

    def test_chunk_pinned_at_construction_is_kept(
        self, builder: ContextBuilder, gpt4o: TiktokenTokenizer
    ) -> None:
        state = MemoryState(
            [chunks.user("the task", id="t", pinned=True)]
            + [chunks.assistant("step " * 40, id=f"a{i}") for i in range(10)]
        )
        result = builder.build(state, max_tokens=200, tokenizer=gpt4o)
        assert result.included_chunk_ids[0] == "t"

    def test_pinned_tool_result_pins_its_call(
        self, builder: ContextBuilder, coding_state: MemoryState, gpt4o: TiktokenTokenizer
    ) -> None:
        result = builder.build(
            coding_state, max_tokens=300, tokenizer=gpt4o, pinned_chunk_ids=["res1"]
        )
        assert {"call1", "res1"} <= set(result.included_chunk_ids)

    def test_pending_call_is_kept_with_the_newest(
        self, builder: ContextBuilder, gpt4o: TiktokenTokenizer
    ) -> None:
        state = MemoryState(
            [
                chunks.tool_call("a", {}, call_id="p", id="pending"),
                chunks.tool_call("b", {}, call_id="q", id="answered"),
                chunks.tool_result("b", "x " * 200, call_id="q", id="result"),
                chunks.assistant("x " * 30, id="last"),
            ]
        )
        result = builder.build(state, max_tokens=120, tokenizer=gpt4o)
        assert result.included_chunk_ids == ("pending", "last")

    def test_budget_too_small_for_the_pinned_chunks_says_what_was_needed(
        self, builder: ContextBuilder, coding_state: MemoryState, gpt4o: TiktokenTokenizer
    ) -> None:
        with pytest.raises(BudgetExceededError) as info:
            builder.build(coding_state, max_tokens=20, tokenizer=gpt4o)
        assert info.value.available == 20
        assert info.value.needed > 20
        assert str(info.value.needed) in str(info.value)

    def test_reserve_tokens_are_kept_free(
        self, builder: ContextBuilder, coding_state: MemoryState, gpt4o: TiktokenTokenizer
    ) -> None:
        result = builder.build(coding_state, max_tokens=400, reserve_tokens=150, tokenizer=gpt4o)
        assert result.token_count <= 250

    def test_priority_strategy_keeps_high_priority_first(
        self, builder: ContextBuilder, gpt4o: TiktokenTokenizer
    ) -> None:
        state = MemoryState(
            [chunks.user("important " * 20, id="vip", priority=10)]
            + [chunks.assistant("filler " * 20, id=f"f{i}") for i in range(6)]
            + [chunks.user("now", id="last")]
        )
        recent = builder.build(state, max_tokens=120, tokenizer=gpt4o)
        prioritised = builder.build(state, max_tokens=120, tokenizer=gpt4o, strategy="priority")
        assert "vip" not in recent.included_chunk_ids
        assert "vip" in prioritised.included_chunk_ids

    def test_in_order_strategy_takes_the_oldest_that_fit(
        self, builder: ContextBuilder, gpt4o: TiktokenTokenizer
    ) -> None:
        state = MemoryState([chunks.user(f"message {i} " * 10, id=f"m{i}") for i in range(8)])
        result = builder.build(
            state, max_tokens=110, tokenizer=gpt4o, strategy="in_order", pin_newest=False
        )
        assert result.included_chunk_ids[0] == "m0"
        assert "m7" not in result.included_chunk_ids

    def test_unlimited_budget_includes_everything(
        self, builder: ContextBuilder, coding_state: MemoryState
    ) -> None:
        result = builder.build(coding_state)
        assert result.included_chunk_ids == coding_state.ids
        assert result.excluded_chunk_ids == ()


class TestReport:
    def test_asking_for_an_unknown_reason_is_a_build_option_error(
        self, builder: ContextBuilder, coding_state: MemoryState
    ) -> None:
        result = builder.build(coding_state, max_tokens=150)

        with pytest.raises(BuildOptionError, match=r"reason: unknown 'nope'; one of .*over_budget"):
            result.excluded_for("nope")

    def test_a_results_mappings_cannot_be_changed_and_stay_plain_json(
        self, builder: ContextBuilder, coding_state: MemoryState, gpt4o: TiktokenTokenizer
    ) -> None:
        first = builder.build(coding_state, max_tokens=150, tokenizer=gpt4o)
        again = builder.build(coding_state, max_tokens=150, tokenizer=gpt4o)
        tokens = dict(first.chunk_tokens)

        for mapping in (first.chunk_tokens, first.replaced_characters, first.exclusions):
            with pytest.raises(TypeError, match="never changes"):
                mapping["x"] = 1  # type: ignore[index]
            with pytest.raises(TypeError, match="never changes"):
                mapping.clear()  # type: ignore[attr-defined]

        assert again.chunk_tokens == first.chunk_tokens == tokens
        assert json.loads(json.dumps(first.chunk_tokens)) == tokens
        assert pickle.loads(pickle.dumps(first)) == first

    def test_over_budget_chunks_are_reported_with_the_reason(
        self, builder: ContextBuilder, coding_state: MemoryState, gpt4o: TiktokenTokenizer
    ) -> None:
        result = builder.build(coding_state, max_tokens=150, tokenizer=gpt4o)
        assert result.excluded_chunk_ids
        for chunk_id in result.excluded_chunk_ids:
            assert result.exclusions[chunk_id].reason is ExclusionReason.OVER_BUDGET
        all_ids = set(result.included_chunk_ids) | set(result.excluded_chunk_ids)
        assert all_ids == set(coding_state.ids)

    def test_chunk_tokens_of_included_chunks_add_up_to_the_content(
        self, builder: ContextBuilder, coding_state: MemoryState, gpt4o: TiktokenTokenizer
    ) -> None:
        result = builder.build(coding_state, tokenizer=gpt4o)
        content = sum(gpt4o.count(m.content) for m in result.messages)
        assert sum(result.chunk_tokens[i] for i in result.included_chunk_ids) == content

    def test_the_chunk_that_did_not_fit_was_measured_and_older_ones_estimated(
        self, builder: ContextBuilder, gpt4o: TiktokenTokenizer
    ) -> None:
        state = MemoryState([chunks.user(f"turn {i} " * 30, id=f"u{i}") for i in range(50)])
        result = builder.build(state, max_tokens=300, tokenizer=gpt4o)
        first_out = result.exclusions[result.excluded_chunk_ids[-1]]
        oldest = result.exclusions["u0"]
        segment = builder.render(state.get(first_out.chunk_id))[1] + "\n"
        assert (first_out.tokens, first_out.tokens_estimated) == (gpt4o.count(segment), False)
        assert oldest.tokens_estimated
        assert oldest.tokens == pytest.approx(gpt4o.count(builder.render(state[0])[1]), rel=0.5)

    def test_summary_names_counts_tokens_and_reasons(
        self, builder: ContextBuilder, coding_state: MemoryState, gpt4o: TiktokenTokenizer
    ) -> None:
        summary = builder.build(
            coding_state, max_tokens=150, tokenizer=gpt4o, include_system=False
        ).summary()
        assert "exact" in summary
        assert "left out: over_budget" in summary
        assert "left out: include_system" in summary

    def test_token_count_is_exact_only_with_a_real_encoding(
        self, builder: ContextBuilder, coding_state: MemoryState
    ) -> None:
        assert builder.build(coding_state).token_count_exact is False
        assert builder.build(coding_state, tokenizer=create_tokenizer_("gpt-4o")).token_count_exact
        claude = create_tokenizer_("claude-3-5-sonnet-20241022")
        assert builder.build(coding_state, tokenizer=claude).token_count_exact is False

    def test_forbidden_characters_are_replaced_and_reported(
        self, builder: ContextBuilder, gpt4o: TiktokenTokenizer
    ) -> None:
        state = MemoryState([chunks.tool_result("sh", "\x1b[31mred\x1b[0m\x00", id="r")])
        result = builder.build(state, tokenizer=gpt4o)
        assert result.replaced_characters == {"r": 3}
        assert "\ufffd[31mred" in result.messages[0].content
        assert "3 XML-forbidden characters" in result.summary()


def create_tokenizer_(model: str) -> TiktokenTokenizer:
    from memctx import create_tokenizer

    tokenizer = create_tokenizer(model)
    assert isinstance(tokenizer, TiktokenTokenizer)
    return tokenizer


class PlainRenderer:
    """A third-party renderer whose output starts with whitespace (not XML)."""

    def can_render(self, chunk: Chunk) -> bool:
        return chunk.type is ChunkType.AGENT

    def get_role(self, chunk: Chunk) -> Role:
        return "user"

    def render(self, chunk: Chunk) -> str:
        return "\n\n  " + chunk.text + "\n"


class TestCustomRenderers:
    def test_custom_renderer_wins_over_the_built_in(self, gpt4o: TiktokenTokenizer) -> None:
        class Shouting:
            def can_render(self, chunk: Chunk) -> bool:
                return chunk.type is ChunkType.AGENT and chunk.role == "user"

            def get_role(self, chunk: Chunk) -> Role:
                return "user"

            def render(self, chunk: Chunk) -> str:
                return render_element("shout", [("id", chunk.id)], chunk.text.upper())

        builder = create_builder(renderers=[Shouting()])
        state = MemoryState([chunks.user("hi", id="u"), chunks.assistant("yo", id="a")])
        result = builder.build(state, tokenizer=gpt4o)
        assert result.messages[0].content == '<shout id="u">\nHI\n</shout>\n'
        assert result.messages[1].content.startswith("<assistant_response")

    def test_output_that_cannot_be_counted_piecewise_is_recounted_exactly(
        self, gpt4o: TiktokenTokenizer
    ) -> None:
        builder = create_builder(renderers=[PlainRenderer()])
        state = MemoryState([chunks.user(f"line {i}", id=f"u{i}") for i in range(30)])
        for budget in (60, 100, 200, None):
            result = builder.build(state, max_tokens=budget, tokenizer=gpt4o)
            assert result.recounted is True
            assert result.token_count == gpt4o.count_messages(result.messages)
            if budget is not None:
                assert result.token_count <= budget

    def test_renderings_are_memoised_per_chunk(self, gpt4o: TiktokenTokenizer) -> None:
        calls: list[str] = []

        class Counting:
            def can_render(self, chunk: Chunk) -> bool:
                return True

            def get_role(self, chunk: Chunk) -> Role:
                return "user"

            def render(self, chunk: Chunk) -> str:
                calls.append(chunk.id)
                return render_element("c", [("id", chunk.id)], chunk.text)

        builder = create_builder(renderers=[Counting()])
        state = MemoryState([chunks.user("a", id="a"), chunks.user("b", id="b")])
        builder.build(state, tokenizer=gpt4o)
        builder.build(state.append(chunks.user("c", id="c")), tokenizer=gpt4o)
        assert calls == ["b", "a", "c"]


class TestIncrementalHistories:
    def test_an_older_state_still_builds_correctly_after_appends(
        self, builder: ContextBuilder, gpt4o: TiktokenTokenizer
    ) -> None:
        base = MemoryState([chunks.tool_call("sh", {}, call_id="c", id="call")])
        grown = base.append(chunks.tool_result("sh", "ok", call_id="c", id="res"))
        # In `base` the call is still pending (pinned); in `grown` it is answered.
        assert builder.build(base, tokenizer=gpt4o, pin_newest=False).included_chunk_ids == (
            "call",
        )
        assert builder.build(grown, tokenizer=gpt4o).included_chunk_ids == ("call", "res")
        assert builder.build(base, tokenizer=gpt4o, pin_newest=False).included_chunk_ids == (
            "call",
        )

    def test_branching_histories_do_not_see_each_other(self) -> None:
        base = MemoryState([chunks.user("a", id="a")])
        left = base.append(chunks.user("b", id="b"))
        right = base.append(chunks.user("c", id="c"))
        assert "b" in left
        assert "b" not in right
        assert "c" not in left
        assert right.append(chunks.user("b", id="b")).ids == ("a", "c", "b")
        with pytest.raises(ChunkNotFoundError):
            base.get("b")

    def test_a_duplicate_append_changes_nothing(self) -> None:
        base = MemoryState([chunks.user("a", id="a")])
        with pytest.raises(DuplicateChunkError):
            base.append(chunks.user("x", id="x"), chunks.user("x2", id="x"))
        assert "x" not in base
        assert base.append(chunks.user("x", id="x")).ids == ("a", "x")


class SuperadditiveTokenizer:
    """A custom tokenizer whose count of a whole exceeds the sum of its parts."""

    name = "superadditive"
    exact = False

    def count(self, text: str) -> int:
        return len(text) ** 2 // 400

    def count_messages(self, messages: Any) -> int:
        total = 3
        for message in messages:
            content = message["content"] if isinstance(message, dict) else message.content
            total += 4 + self.count(content)
        return total


def test_custom_tokenizer_counts_are_trimmed_to_the_budget_by_recounting(
    builder: ContextBuilder,
) -> None:
    tokenizer = SuperadditiveTokenizer()
    state = MemoryState([chunks.user(f"user turn {i} " * 3, id=f"u{i}") for i in range(40)])
    result = builder.build(state, max_tokens=2_000, tokenizer=tokenizer)
    assert result.recounted is True
    assert result.token_count == tokenizer.count_messages(result.messages)
    assert result.token_count <= 2_000
    # Piecewise, far more chunks looked affordable than the recount allowed.
    assert 1 < len(result.included_chunk_ids) < 40
    assert result.included_chunk_ids[-1] == "u39"


def test_pinned_chunks_over_budget_on_recount_report_the_recounted_need(
    builder: ContextBuilder,
) -> None:
    tokenizer = SuperadditiveTokenizer()
    # Piecewise the two pinned chunks fit in 400 tokens; counted whole they do not.
    state = MemoryState([chunks.user("x" * 200, id=f"u{i}", pinned=True) for i in range(2)])
    with pytest.raises(BudgetExceededError) as info:
        builder.build(state, max_tokens=400, tokenizer=tokenizer)
    whole = tokenizer.count_messages(builder.build(state, tokenizer=tokenizer).messages)
    assert info.value.needed == whole
    assert whole > 400


class TestMemory:
    @pytest.mark.parametrize(
        "options",
        [{}, {"strategy": "stable"}, {"compressors": [MaxChars(20)]}],
        ids=["recent", "stable", "compressed"],
    )
    def test_a_builder_does_not_keep_the_histories_it_built_alive(
        self, options: dict[str, Any]
    ) -> None:
        builder = create_builder()
        histories = []
        for run in range(3):
            state = MemoryState([chunks.user(f"turn {i} " * 20, id=f"u{i}") for i in range(30)])
            builder.build(state, max_tokens=400, **options)
            builder.build(state.append(chunks.assistant("ok", id=f"a{run}")), 400, **options)
            histories.append(weakref.ref(state.shared_history))
            del state
        gc.collect()

        assert [h() for h in histories] == [None, None, None]
        builder.build(MemoryState([chunks.user("still works", id="u")]), 400, **options)
