"""ContextPolicy's recall: the tool for the model's provider and its handler, on a store.

The handler tests run on SQLite and PostgreSQL, through MemoryStore and AsyncMemoryStore
(the store suite's ``store`` fixture); ``arecall`` on a real AsyncMemoryStore.
"""

from __future__ import annotations

import asyncio

import pytest

from memctx import PolicyError, StoreArgumentError, chunks, create_builder
from memctx.compaction import (
    CompactionPolicy,
    ExtractiveSummarizer,
    LLMSummarizer,
    is_compaction_summary,
)
from memctx.policy import ContextPolicy
from memctx.store import AsyncMemoryStore, MemoryStore, recall_tool

ERROR_OUTPUT = (
    "tests/test_jsonrep.py::test_nested FAILED\n"
    "E   KeyError: 'children'\n"
    "src/jsonrep.py:42: in render_node"
)


def recalling(**options: object) -> ContextPolicy:
    settings: dict[str, object] = {
        "max_tokens": 3000,
        "compaction": CompactionPolicy(trigger=0.8, keep_recent=0.2),
        "recall": True,
    }
    settings.update(options)
    return ContextPolicy("claude-sonnet-4-6", **settings)  # type: ignore[arg-type]


def a_run(store: MemoryStore, thread: str = "run") -> str:
    """A task, a failing test, and eight files read."""
    store.create_thread(thread)
    store.append(
        thread,
        chunks.user("Make tests/test_jsonrep.py pass.", id="task"),
        chunks.tool_call("bash", {"command": "pytest -x"}, call_id="c-test", id="test"),
        chunks.tool_result("bash", ERROR_OUTPUT, call_id="c-test", id="error"),
    )
    for n in range(8):
        store.append(
            thread,
            chunks.tool_call("read_file", {"path": f"src/m{n}.py"}, call_id=f"r{n}", id=f"read{n}"),
            chunks.tool_result("read_file", f"# src/m{n}.py\n" + "pass\n" * 30, call_id=f"r{n}"),
        )
    return thread


class TestTheTool:
    def test_it_takes_the_shape_of_the_models_provider(self) -> None:
        anthropic = ContextPolicy("claude-sonnet-4-6", recall=True).recall_tool()
        openai = ContextPolicy("gpt-4o", recall=True).recall_tool()
        gemini = ContextPolicy("gemini-2.5-flash", recall=True).recall_tool()

        assert anthropic["name"] == "recall"
        assert anthropic["input_schema"]["required"] == ["query"]
        assert openai["type"] == "function"
        assert openai["function"]["name"] == "recall"
        assert gemini["name"] == "recall"
        assert gemini["parameters"]["type"] == "OBJECT"

    def test_another_shape_can_be_asked_for(self) -> None:
        tool = ContextPolicy("gpt-4o", recall=True).recall_tool("responses")

        assert tool["type"] == "function"
        assert tool["name"] == "recall"
        assert "function" not in tool

    def test_an_unknown_provider_is_a_policy_error(self) -> None:
        with pytest.raises(PolicyError, match="unknown provider") as caught:
            ContextPolicy("gpt-4o", recall=True).recall_tool("bedrock")  # type: ignore[arg-type]

        assert caught.value.option == "provider"

    def test_every_policy_hands_out_the_tool(self) -> None:
        assert ContextPolicy("gpt-4o").recall_tool() == recall_tool("openai")
        assert ContextPolicy("claude-sonnet-4-6").recall_tool()["name"] == "recall"

    @pytest.mark.parametrize("cap", [49, 0, -1, True, 2000.0, "2000", None])
    def test_the_token_cap_is_an_int_of_at_least_50(self, cap: object) -> None:
        with pytest.raises(PolicyError, match="at least 50") as caught:
            ContextPolicy("gpt-4o", recall=True, recall_max_tokens=cap)  # type: ignore[arg-type]

        assert caught.value.option == "recall_max_tokens"


class TestTheSummary:
    def test_memctx_summarizers_given_say_details_can_be_recalled(self) -> None:
        extractive = recalling(summarizer=ExtractiveSummarizer()).summarizer
        llm = recalling(summarizer=LLMSummarizer(lambda messages: "summary")).summarizer

        assert isinstance(extractive, ExtractiveSummarizer)
        assert extractive.recall_hint is True
        assert isinstance(llm, LLMSummarizer)
        assert llm.recall_hint is True

    def test_without_recall_a_given_summarizer_is_kept_as_it_is(self) -> None:
        given = ExtractiveSummarizer()

        assert recalling(summarizer=given, recall=False).summarizer is given


class TestTheHandler:
    def test_it_answers_with_the_matching_chunk(self, store: MemoryStore) -> None:
        thread = a_run(store)

        output = recalling().recall(store, thread, {"query": "KeyError: 'children'"})

        assert ERROR_OUTPUT in output
        assert "src/m0.py" not in output

    def test_the_arguments_may_be_json_text(self, store: MemoryStore) -> None:
        thread = a_run(store)
        policy = recalling()

        as_text = policy.recall(store, thread, '{"query": "jsonrep", "types": ["ENVIRONMENT"]}')

        assert as_text == policy.recall(
            store, thread, {"query": "jsonrep", "types": ["ENVIRONMENT"]}
        )
        assert ERROR_OUTPUT in as_text

    def test_the_answer_fits_the_cap_counted_by_the_policys_tokenizer(
        self, store: MemoryStore
    ) -> None:
        store.create_thread("t")
        store.append("t", chunks.tool_result("bash", "FAILED " + "detail " * 2000, id="big"))
        policy = recalling(recall_max_tokens=60)

        output = policy.recall(store, "t", {"query": "failed"})

        assert policy.tokenizer.count(output) <= 60
        assert "recall cap" in output

    def test_the_hits_are_rendered_by_the_policys_builder(self, store: MemoryStore) -> None:
        store.create_thread("t")
        store.append("t", chunks.tool_result("bash", "TypeError in <module>", id="err"))
        escaping = recalling(builder=create_builder(content="escape"))

        output = escaping.recall(store, "t", {"query": "TypeError"})

        assert "TypeError in &lt;module&gt;" in output
        assert "CDATA" not in output
        assert "<![CDATA[TypeError in <module>" in recalling().recall(
            store, "t", {"query": "TypeError"}
        )

    def test_nothing_found_is_said_in_one_line(self, store: MemoryStore) -> None:
        thread = a_run(store)

        output = recalling().recall(store, thread, {"query": "segfault"})

        assert output == "No earlier entry matches 'segfault'."

    def test_visible_false_recalls_only_what_the_view_hides(self, store: MemoryStore) -> None:
        thread = a_run(store)
        store.truncate(thread, keep_last=2)
        store.append(thread, chunks.assistant("KeyError: 'children' again", id="again"))

        hidden = recalling().recall(store, thread, {"query": "KeyError children"}, visible=False)

        assert ERROR_OUTPUT in hidden
        assert "again" not in hidden

    @pytest.mark.parametrize(
        "arguments", [{}, {"query": ""}, {"query": "x", "limit": 99}, "not json", {"q": "x"}]
    )
    def test_bad_arguments_raise_a_store_argument_error(
        self, store: MemoryStore, arguments: object
    ) -> None:
        thread = a_run(store)

        with pytest.raises(StoreArgumentError):
            recalling().recall(store, thread, arguments)  # type: ignore[arg-type]

    def test_a_policy_without_the_summary_hint_answers_too(self, store: MemoryStore) -> None:
        thread = a_run(store)

        output = ContextPolicy("gpt-4o").recall(store, thread, {"query": "KeyError: 'children'"})

        assert ERROR_OUTPUT in output


class TestInAnAgentLoop:
    def test_compaction_drops_an_error_and_a_recall_finds_it(self, store: MemoryStore) -> None:
        policy = recalling()
        thread = "loop"
        store.create_thread(thread)
        store.append(
            thread,
            chunks.system("You fix bugs.", id="sys"),
            chunks.user("Make tests/test_jsonrep.py pass.", id="task"),
            chunks.tool_call("bash", {"command": "pytest -x"}, call_id="c-test", id="test"),
            chunks.tool_result("bash", ERROR_OUTPUT, call_id="c-test", id="error"),
        )
        compacted = False
        for n in range(30):  # the agent reads files; the policy runs before each model call
            store.append(
                thread,
                chunks.tool_call("read_file", {"path": f"src/m{n}.py"}, call_id=f"r{n}"),
                chunks.tool_result("read_file", f"# src/m{n}.py\n" + "x = 1\n" * 60, f"r{n}"),
            )
            step = store.step(thread, policy)
            compacted = compacted or any(r.kind == "compacted" for r in step.reports)
            if compacted:
                break
        assert compacted
        visible = store.get_current_state(thread)
        assert "error" not in visible.ids
        summary = next(c for c in visible.chunks if is_compaction_summary(c))
        assert "`recall` tool" in summary.text
        tools = [policy.recall_tool()]
        assert tools[0]["name"] == "recall"

        # The model calls recall with the error it remembers from the summary.
        call_input = {"query": "KeyError: 'children'"}
        output = policy.recall(store, thread, call_input)

        assert ERROR_OUTPUT in output
        assert "src/jsonrep.py:42: in render_node" in output
        store.append(
            thread,
            chunks.tool_call("recall", call_input, call_id="c-recall", id="recall"),
            chunks.tool_result("recall", output, call_id="c-recall", id="recalled"),
        )
        assert "recalled" in store.get_current_state(thread).ids


class TestAsync:
    def test_arecall_answers_on_an_async_store(self, store_url: str) -> None:
        async def run() -> str:
            store = await AsyncMemoryStore.open(store_url)
            try:
                await store.create_thread("t")
                await store.append(
                    "t",
                    chunks.tool_call("bash", {"command": "pytest"}, call_id="c1", id="call"),
                    chunks.tool_result("bash", ERROR_OUTPUT, call_id="c1", id="error"),
                )
                return await recalling().arecall(store, "t", {"query": "KeyError children"})
            finally:
                await store.close()

        assert ERROR_OUTPUT in asyncio.run(run())
