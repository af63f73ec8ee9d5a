"""LLMSummarizer: the covered chunks, rendered by memctx, within the summary model's budget."""

from __future__ import annotations

import asyncio

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from memctx import Chunk, CompactionError, MemoryState, chunks
from memctx._render.tokens import TiktokenTokenizer
from memctx.compaction import LLMSummarizer, compact
from strategies import examples

Messages = list[dict[str, str]]


class FakeModel:
    """Stands in for a chat model: records each request, answers with a numbered summary."""

    def __init__(self, tokenizer: TiktokenTokenizer, max_tokens: int) -> None:
        self.tokenizer = tokenizer
        self.max_tokens = max_tokens
        self.requests: list[Messages] = []

    def __call__(self, messages: Messages) -> str:
        assert self.tokenizer.count_messages(messages) <= self.max_tokens
        self.requests.append(messages)
        return f"summary {len(self.requests)}"


def steps(n: int, words: int = 50) -> list[Chunk]:
    made: list[Chunk] = []
    for i in range(n):
        made.append(
            chunks.tool_call("bash", {"command": f"step {i}"}, call_id=f"c{i}", id=f"call{i}")
        )
        made.append(chunks.tool_result("bash", "word " * words, call_id=f"c{i}", id=f"res{i}"))
    return made


class TestOneRequest:
    def test_the_chunks_are_sent_as_memctx_xml_after_the_prompt(
        self, gpt4o: TiktokenTokenizer
    ) -> None:
        model = FakeModel(gpt4o, 4000)
        summarizer = LLMSummarizer(model, max_tokens=4000, tokenizer=gpt4o)
        assert summarizer(steps(2), None) == "summary 1"
        (request,) = model.requests
        assert request[0] == {"role": "system", "content": LLMSummarizer.DEFAULT_PROMPT}
        user = request[1]["content"]
        assert user.startswith('<conversation>\n=== assistant ===\n<tool_call id="call0"')
        assert '<tool_result id="res1"' in user
        assert user.endswith("</conversation>\n\nWrite the new summary.")

    def test_the_previous_summary_is_sent_before_the_conversation(
        self, gpt4o: TiktokenTokenizer
    ) -> None:
        model = FakeModel(gpt4o, 4000)
        LLMSummarizer(model, prompt="Summarise.", max_tokens=4000, tokenizer=gpt4o)(
            steps(1), "earlier work"
        )
        (request,) = model.requests
        assert request[0]["content"] == "Summarise."
        assert request[1]["content"].startswith(
            "<previous_summary>\nearlier work\n</previous_summary>\n\n<conversation>"
        )


class TestSplitting:
    def test_chunks_that_do_not_fit_go_in_several_requests_each_folding_the_last_answer(
        self, gpt4o: TiktokenTokenizer
    ) -> None:
        model = FakeModel(gpt4o, 1200)
        summarizer = LLMSummarizer(model, max_tokens=1200, tokenizer=gpt4o)
        covered = steps(30)
        assert summarizer(covered, None) == f"summary {len(model.requests)}"
        assert len(model.requests) >= 3
        for number, request in enumerate(model.requests[1:], start=1):
            assert (
                f"<previous_summary>\nsummary {number}\n</previous_summary>"
                in request[1]["content"]
            )
        # Every chunk was sent once, in order.
        sent = [
            chunk.id
            for request in model.requests
            for chunk in covered
            if f'id="{chunk.id}"' in request[1]["content"]
        ]
        assert sent == [chunk.id for chunk in covered]

    def test_a_chunk_too_long_for_any_request_is_cut_visibly(
        self, gpt4o: TiktokenTokenizer
    ) -> None:
        model = FakeModel(gpt4o, 800)
        huge = chunks.tool_result("bash", "word " * 5000, id="huge")
        LLMSummarizer(model, max_tokens=800, tokenizer=gpt4o)([huge], None)
        (request,) = model.requests
        assert "[memctx: cut " in request[1]["content"]

    def test_a_previous_summary_that_fills_the_budget_is_refused(
        self, gpt4o: TiktokenTokenizer
    ) -> None:
        summarizer = LLMSummarizer(FakeModel(gpt4o, 600), max_tokens=600, tokenizer=gpt4o)
        with pytest.raises(CompactionError, match="previous summary alone do not fit"):
            summarizer(steps(1), "word " * 2000)


class TestErrors:
    def test_an_empty_answer_is_refused(self) -> None:
        with pytest.raises(CompactionError, match="non-empty text"):
            LLMSummarizer(lambda messages: "")(steps(1), None)

    def test_settings_are_checked(self) -> None:
        with pytest.raises(CompactionError, match="complete must be a callable"):
            LLMSummarizer("gpt")  # type: ignore[arg-type]
        with pytest.raises(CompactionError, match="at least 64"):
            LLMSummarizer(lambda m: "x", max_tokens=10)


def test_it_compacts_a_state(gpt4o: TiktokenTokenizer) -> None:
    model = FakeModel(gpt4o, 2000)
    state = MemoryState([chunks.user("Go.", id="task"), *steps(20)])
    new, report = compact(
        state,
        LLMSummarizer(model, max_tokens=2000, tokenizer=gpt4o),
        keep_recent_tokens=300,
        tokenizer=gpt4o,
    )
    summary = new.get(report.summary_id)  # type: ignore[arg-type]
    assert summary.text == f"summary {len(model.requests)}"
    assert '<user_message id="task"' in model.requests[0][1]["content"]


class TestProperties:
    @settings(
        max_examples=examples(40), deadline=None, suppress_health_check=[HealthCheck.too_slow]
    )
    @given(
        sizes=st.lists(st.integers(0, 3000), min_size=1, max_size=25),
        budget=st.integers(700, 3000),  # the default prompt is ~350 tokens
        previous=st.one_of(st.none(), st.integers(0, 60).map(lambda n: "done " * n)),
    )
    def test_every_request_fits_and_every_chunk_is_sent_once_in_order(
        self, sizes: list[int], budget: int, previous: str | None, gpt4o: TiktokenTokenizer
    ) -> None:
        covered = [
            chunks.tool_result("bash", "word " * size, id=f"r{i}") for i, size in enumerate(sizes)
        ]
        model = FakeModel(gpt4o, budget)  # asserts the budget on every request
        LLMSummarizer(model, max_tokens=budget, tokenizer=gpt4o)(covered, previous)
        sent = [
            chunk.id
            for request in model.requests
            for chunk in covered
            if f'id="{chunk.id}"' in request[1]["content"]
            or f'id="{chunk.id}.cut-' in request[1]["content"]
        ]
        assert sent == [chunk.id for chunk in covered]


class TestAsync:
    def test_an_async_complete_is_awaited_by_asummarize(self, gpt4o: TiktokenTokenizer) -> None:
        async def complete(messages: list[dict[str, str]]) -> str:
            await asyncio.sleep(0)
            return "## Commands\n- `pytest` -> exit 0"

        summarizer = LLMSummarizer(complete, max_tokens=4000, tokenizer=gpt4o)
        assert asyncio.run(summarizer.asummarize(steps(3), None)).startswith("## Commands")

    def test_an_async_complete_called_sync_says_to_await(self, gpt4o: TiktokenTokenizer) -> None:
        async def complete(messages: list[dict[str, str]]) -> str:
            return "x"

        with pytest.raises(CompactionError, match="asummarize"):
            LLMSummarizer(complete, max_tokens=4000, tokenizer=gpt4o)(steps(1), None)

    def test_the_recall_hint_is_added_once(self, gpt4o: TiktokenTokenizer) -> None:
        summarizer = LLMSummarizer(lambda m: "summary", recall_hint=True, tokenizer=gpt4o)
        first = summarizer(steps(1), None)
        second = summarizer(steps(1), first)
        assert first.endswith("`recall` tool.")
        assert second.count("`recall` tool") == 1

    def test_the_prompt_asks_to_update_the_previous_summary(self) -> None:
        assert "UPDATE that summary" in LLMSummarizer.DEFAULT_PROMPT
        assert "exit code" in LLMSummarizer.DEFAULT_PROMPT
