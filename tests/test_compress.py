"""Compressors and compress(): smaller states that keep their shape."""

from __future__ import annotations

import json
from typing import Any

import attrs
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from counting import CountingTokenizer
from invariants import assert_builds_within, assert_lawful
from memctx import CompressionError, MemoryState, chunks, create_builder
from memctx._build.builder import counts_of
from memctx._build.compress_step import apply_compressors
from memctx._build.counts import chunk_tokens
from memctx._render.tokens import TiktokenTokenizer
from memctx.compress import (
    MaxChars,
    MaxChunks,
    TrimToolOutputs,
    compress,
    derived_chunk,
    protected_ids,
)
from memctx.compress._compressors import cut_text
from strategies import agent_runs, examples


@pytest.fixture
def run() -> MemoryState:
    """System, a pinned task, two answered calls (one long), a pending call, a long answer."""
    return MemoryState(
        [
            chunks.system("Be terse.", id="sys"),
            chunks.user("Fix the bug.", id="task", pinned=True),
            chunks.tool_call("bash", {"command": "cat a.py"}, call_id="c1", id="call1"),
            chunks.tool_result("bash", "A" * 3000, call_id="c1", id="res1"),
            chunks.tool_call("bash", {"command": "pytest"}, call_id="c2", id="call2"),
            chunks.assistant("B" * 5000, id="long_answer"),
            chunks.tool_result("bash", "C" * 800, call_id="c2", id="res2"),
            chunks.tool_call("bash", {"command": "sleep 100"}, call_id="c3", id="waiting"),
            chunks.user("Any news?", id="nudge"),
        ]
    )


class TestMaxChunks:
    def test_keeps_the_newest_n_and_drops_the_rest(self) -> None:
        state = MemoryState([chunks.user(str(i), id=f"u{i}") for i in range(6)])
        new, report = compress(state, [MaxChunks(2)])
        assert new.ids == ("u4", "u5")
        assert report.dropped_ids == ("u0", "u1", "u2", "u3")

    def test_keeps_system_pinned_and_waiting_chunks_wherever_they_are(
        self, run: MemoryState
    ) -> None:
        new, _ = compress(run, [MaxChunks(1)])
        assert new.ids == ("sys", "task", "waiting", "nudge")

    def test_keeps_a_unit_whole_when_one_member_is_among_the_newest(self, run: MemoryState) -> None:
        new, _ = compress(run, [MaxChunks(3)])
        # res2 is among the newest three, so its call stays too; the long answer does not.
        assert new.ids == ("sys", "task", "call2", "res2", "waiting", "nudge")

    def test_a_short_state_comes_back_unchanged(self, run: MemoryState) -> None:
        new, report = compress(run, [MaxChunks(50)])
        assert new is run
        assert not report.changed

    @pytest.mark.parametrize("n", [-1, 1.5, True, "3"])
    def test_a_bad_count_is_refused(self, n: object) -> None:
        with pytest.raises(CompressionError, match="MaxChunks: n must be an int >= 0"):
            MaxChunks(n)  # type: ignore[arg-type]


class TestMaxChars:
    def test_the_default_cap_is_4000_characters(self) -> None:
        assert MaxChars().n == 4000

    def test_a_long_content_is_cut_and_says_how_much_was_cut(self, run: MemoryState) -> None:
        new, report = compress(run, [MaxChars(1000)])
        answer = next(c for c in new if c.metadata.derived_from == ("long_answer",))
        assert answer.text == "B" * 960 + "\n[memctx: cut 4,040 of 5,000 characters]"
        assert len(answer.text) == 1000  # the line saying what was cut counts
        assert report.replaced_ids["long_answer"] == answer.id

    def test_the_cut_chunk_keeps_its_kind_unit_and_time_under_a_new_id(
        self, run: MemoryState
    ) -> None:
        new, _ = compress(run, [MaxChars(1000)])
        original = run.get("res1")
        cut = next(c for c in new if c.metadata.derived_from == ("res1",))
        assert cut.id != original.id
        assert (cut.type, cut.action, cut.metadata.call_id, cut.metadata.tool) == (
            original.type,
            original.action,
            "c1",
            "bash",
        )
        assert cut.created_at == original.created_at

    def test_the_same_cut_gives_the_same_chunk(self, run: MemoryState) -> None:
        assert compress(run, [MaxChars(1000)])[0] == compress(run, [MaxChars(1000)])[0]

    def test_short_chunks_are_left_alone(self, run: MemoryState) -> None:
        new, report = compress(run, [MaxChars(10_000)])
        assert new is run
        assert report.changes == ()

    def test_protected_chunks_are_never_cut(self) -> None:
        long = "x" * 500
        state = MemoryState(
            [
                chunks.system(long, id="sys"),
                chunks.user(long, id="task", pinned=True),
                chunks.tool_call("bash", {"command": long}, call_id="c", id="waiting"),
            ]
        )
        new, _ = compress(state, [MaxChars(10)])
        assert new is state
        assert protected_ids(state) == {"sys", "task", "waiting"}

    def test_a_json_content_is_cut_in_its_serialised_form(self) -> None:
        call = chunks.tool_call("write", {"text": "x"}, call_id="c", id="call")
        output = chunks.tool_result("write", {"text": "y" * 100}, call_id="c", id="res")
        new, _ = compress(MemoryState([call, output]), [MaxChars(20)])
        assert new[1].content == cut_text(output.text, 20)
        assert new[0] == call  # a call's arguments stay an object: it is still sent natively

    @pytest.mark.parametrize(("length", "n"), [(21, 10), (5_000, 4_000), (100, 40), (41, 40)])
    def test_a_cut_is_never_longer_than_n_nor_than_the_text(self, length: int, n: int) -> None:
        state = MemoryState([chunks.user("x" * length, id="u"), chunks.user("end", id="e")])
        new, report = compress(state, [MaxChars(n)])
        assert len(new[0].text) <= n < length
        assert new[0].text.endswith(("characters]", "\u2026"))  # the cut shows
        assert report.changes[0].chars_after <= n

    @given(text=st.text(min_size=1, max_size=300), n=st.integers(1, 300))
    def test_a_cut_never_lengthens_a_text(self, text: str, n: int) -> None:
        cut = cut_text(text, n)
        assert len(cut) <= min(n, len(text)) or cut == text
        assert cut_text(cut, n) == cut

    def test_a_call_s_arguments_stay_a_json_object_with_their_long_strings_cut(self) -> None:
        """So a compressed call is still sent as a native call."""
        arguments = {"path": "/src/app.py", "content": "y" * 5_000, "mode": 3}
        call = chunks.tool_call("write", arguments, call_id="c", id="call")
        state = MemoryState([call, chunks.tool_result("write", "ok", call_id="c", id="res")])

        new, _ = compress(state, [MaxChars(400)])

        cut = new[0].content
        assert len(new[0].text) <= 400
        assert (cut["path"], cut["mode"]) == ("/src/app.py", 3)
        assert cut["content"] == "y" * 311 + "…[memctx: cut 4,689 of 5,000 characters]"
        assert new[0].metadata.derived_from == ("call",)
        again, _ = compress(new, [MaxChars(400)])
        assert again is new

    def test_a_cut_call_is_still_sent_as_a_native_call(self) -> None:
        call = chunks.tool_call("write", {"content": "y" * 5_000}, call_id="c", id="call")
        state = MemoryState([call, chunks.tool_result("write", "ok", call_id="c", id="res")])
        new, _ = compress(state, [MaxChars(200)])

        sent = create_builder().build(new).to_openai()

        arguments = json.loads(sent[0]["tool_calls"][0]["function"]["arguments"])
        assert arguments == dict(new[0].content)

    def test_images_documents_and_signed_reasoning_are_never_cut(self, png: bytes) -> None:
        state = MemoryState(
            [
                chunks.user("look", id="u"),
                chunks.image(png, id="img"),
                chunks.thinking("z" * 500, "sig", id="t"),
                chunks.redacted_thinking("q" * 500, id="r"),
            ]
        )
        new, _ = compress(state, [MaxChars(10)])

        assert list(new) == list(state)


class TestTrimToolOutputs:
    def test_old_outputs_become_head_and_tail_and_the_newest_stay_whole(self) -> None:
        outputs = [
            chunks.tool_result("bash", f"{i}" + "-" * 200 + f"{i}", call_id=None, id=f"r{i}")
            for i in range(4)
        ]
        new, report = compress(MemoryState(outputs), [TrimToolOutputs(keep_recent=2, max_chars=10)])
        assert [c.text for c in new][2:] == [outputs[2].text, outputs[3].text]
        assert new[0].text == "0----\n[memctx: trimmed 192 of 202 characters]\n----0"
        assert sorted(report.replaced_ids) == ["r0", "r1"]

    def test_only_the_named_tools_are_trimmed(self) -> None:
        state = MemoryState(
            [
                chunks.tool_result("bash", "x" * 100, id="bash_out"),
                chunks.skill_result("search", "y" * 100, id="search_out"),
                chunks.user("next", id="u"),
            ]
        )
        new, _ = compress(state, [TrimToolOutputs(keep_recent=0, max_chars=10, tools=["search"])])
        assert new[0] == state[0]
        assert new[1].metadata.derived_from == ("search_out",)

    def test_other_chunks_are_never_trimmed(self) -> None:
        state = MemoryState([chunks.assistant("z" * 100, id="a"), chunks.user("u" * 100, id="u")])
        assert compress(state, [TrimToolOutputs(keep_recent=0, max_chars=5)])[0] is state

    def test_tools_must_be_a_list_of_names(self) -> None:
        with pytest.raises(CompressionError, match="not one string"):
            TrimToolOutputs(tools="bash")  # type: ignore[arg-type]


class TestCompress:
    def test_a_chunk_cut_then_trimmed_names_the_original(self, run: MemoryState) -> None:
        new, report = compress(run, [MaxChars(2000), TrimToolOutputs(keep_recent=1, max_chars=100)])
        trimmed = next(c for c in new if c.metadata.derived_from == ("res1",))
        assert "trimmed" in trimmed.text
        (change,) = [c for c in report.changes if c.chunk_id == "res1"]
        assert change.by == ("MaxChars", "TrimToolOutputs")
        assert change.replacement_id == trimmed.id

    def test_the_report_counts_characters_and_tokens_per_chunk(
        self, run: MemoryState, gpt4o: TiktokenTokenizer
    ) -> None:
        new, report = compress(run, [MaxChars(1000)], tokenizer=gpt4o)
        (change,) = [c for c in report.changes if c.chunk_id == "long_answer"]
        assert (change.action, change.chars_before, change.chars_after) == (
            "replaced",
            5000,
            len(new.get(change.replacement_id).text),  # type: ignore[arg-type]
        )
        assert change.tokens_after < change.tokens_before
        assert report.tokens_before - report.tokens_after == sum(
            c.tokens_before - c.tokens_after for c in report.changes
        )
        assert report.tokenizer == gpt4o.name

    def test_the_chunks_a_compressor_keeps_are_not_counted_again(self, run: MemoryState) -> None:
        tokenizer = CountingTokenizer()
        counter = counts_of(create_builder(tokenizer))
        chunk_tokens(counter, run, tokenizer)  # as the build before it counted them
        tokenizer.texts.clear()
        new, report = apply_compressors(run, [MaxChars(1000)], tokenizer=tokenizer, counter=counter)
        replaced = [new.get(c.replacement_id) for c in report.changes if c.replacement_id]
        assert len(replaced) == 2
        assert len(tokenizer.texts) == len(replaced)
        assert all(any(c.text[:200] in t for c in replaced) for t in tokenizer.texts)

    def test_the_event_payload_has_the_counts_and_the_limits(self, run: MemoryState) -> None:
        _, report = compress(run, [MaxChunks(4), MaxChars(1000)])
        event = report.to_event()
        assert {
            k: event[k]
            for k in ("original_count", "compressed_count", "max_messages", "max_chars_per_message")
        } == {
            "original_count": 9,
            "compressed_count": 7,
            "max_messages": 4,
            "max_chars_per_message": 1000,
        }

    def test_the_summary_lists_each_changed_chunk(self, run: MemoryState) -> None:
        _, report = compress(run, [MaxChars(1000)])
        lines = report.summary().splitlines()
        assert lines[0].startswith("9 chunks -> 9; 2 replaced, 0 dropped;")
        assert lines[1].split()[:2] == ["replaced", "res1"]

    def test_a_plain_function_is_a_compressor(self, run: MemoryState) -> None:
        def drop_answers(state: MemoryState) -> MemoryState:
            return state.filter(lambda c: c.role != "assistant")

        new, report = compress(run, [drop_answers])
        assert "long_answer" not in new
        assert report.changes[0].by == ("drop_answers",)

    def test_a_compressor_that_raises_is_a_compression_error_naming_it(
        self, run: MemoryState
    ) -> None:
        def broken(state: MemoryState) -> MemoryState:
            return state.filter(lambda c: 1 / 0 > 0)

        with pytest.raises(CompressionError, match="broken failed: ZeroDivisionError") as info:
            compress(run, [broken])
        assert isinstance(info.value.__cause__, ZeroDivisionError)

    @pytest.mark.parametrize(
        ("options", "message"),
        [({"tokenizer": 5}, "tokenizer: 5 is not a Tokenizer"),
         ({"builder": "x"}, "builder: must be a ContextBuilder")],
    )  # fmt: skip
    def test_a_tokenizer_or_builder_of_the_wrong_kind_is_refused(
        self, run: MemoryState, options: dict[str, Any], message: str
    ) -> None:
        with pytest.raises(CompressionError, match=message):
            compress(run, [MaxChars(10)], **options)

    def test_dropping_a_pinned_chunk_is_refused(self, run: MemoryState) -> None:
        with pytest.raises(CompressionError, match="protected chunk 'task'"):
            compress(run, [lambda s: s.filter(lambda c: c.id != "task")])

    def test_changing_a_chunk_under_its_own_id_is_refused(self, run: MemoryState) -> None:
        def rewrite(state: MemoryState) -> MemoryState:
            return MemoryState(
                attrs.evolve(c, content="?") if c.id == "long_answer" else c for c in state
            )

        with pytest.raises(CompressionError, match="changed chunk 'long_answer' but kept its id"):
            compress(run, [rewrite])

    def test_splitting_a_unit_is_refused(self, run: MemoryState) -> None:
        with pytest.raises(CompressionError, match="split the unit call 'c1'"):
            compress(run, [lambda s: s.filter(lambda c: c.id != "res1")])

    def test_a_replacement_that_leaves_its_unit_is_refused(self, run: MemoryState) -> None:
        def orphan(state: MemoryState) -> MemoryState:
            return MemoryState(
                derived_chunk(
                    attrs.evolve(c, metadata=attrs.evolve(c.metadata, call_id="other")), "x", "x"
                )
                if c.id == "res1"
                else c
                for c in state
            )

        with pytest.raises(CompressionError, match="changes the unit of"):
            compress(run, [orphan])

    def test_an_unnamed_new_chunk_is_refused(self, run: MemoryState) -> None:
        with pytest.raises(CompressionError, match="names no chunk it stands for"):
            compress(run, [lambda s: s.append(chunks.user("new"))])

    def test_reordering_is_refused(self, run: MemoryState) -> None:
        with pytest.raises(CompressionError, match="out of order"):
            compress(run, [lambda s: MemoryState(reversed(s.chunks))])

    def test_a_compressor_must_return_a_state(self, run: MemoryState) -> None:
        with pytest.raises(CompressionError, match="returned list, not a MemoryState"):
            compress(run, [lambda s: list(s)])

    def test_compressors_must_be_callables(self, run: MemoryState) -> None:
        with pytest.raises(CompressionError, match="is not a compressor"):
            compress(run, [42])  # type: ignore[list-item]


compressor_lists = st.lists(
    st.one_of(
        st.integers(0, 30).map(MaxChunks),
        st.integers(1, 500).map(MaxChars),
        st.builds(TrimToolOutputs, keep_recent=st.integers(0, 4), max_chars=st.integers(1, 300)),
    ),
    max_size=3,
)


class TestCompressionProperties:
    @settings(
        max_examples=examples(150), deadline=None, suppress_health_check=[HealthCheck.too_slow]
    )
    @given(state=agent_runs(), compressors=compressor_lists, budget=st.integers(200, 4000))
    def test_compression_keeps_every_chunk_once_splits_nothing_and_builds_within_budget(
        self,
        state: MemoryState,
        compressors: list[object],
        budget: int,
        gpt4o: TiktokenTokenizer,
    ) -> None:
        new, report = compress(state, compressors, tokenizer=gpt4o)  # type: ignore[arg-type]
        assert_lawful(state, new, set(report.dropped_ids))
        assert report.compressed_count == len(new)
        assert {c.chunk_id for c in report.changes} == set(report.dropped_ids) | set(
            report.replaced_ids
        )
        assert_builds_within(new, gpt4o, budget)


class TestIdempotence:
    @pytest.mark.parametrize(
        "compressor",
        [MaxChars(50), TrimToolOutputs(keep_recent=0, max_chars=50)],
        ids=["MaxChars", "TrimToolOutputs"],
    )
    def test_compressing_again_changes_nothing(self, run: MemoryState, compressor: object) -> None:
        once, first = compress(run, [compressor])  # type: ignore[list-item]
        assert first.changed
        twice, second = compress(once, [compressor])  # type: ignore[list-item]
        assert twice is once
        assert not second.changed
