"""recall_tool and recall: the model's way back to what left its context.

The tool definitions go through the official SDKs (over a mock transport) and
their strict request types; the handler runs on both backends and both store
classes (the ``store`` fixture).
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import httpx2
import openai.types.chat
import openai.types.responses
import pytest
from google.genai import types as genai_types
from pydantic import ConfigDict, TypeAdapter

from memctx import StoreArgumentError, chunks, create_tokenizer
from memctx.store import AsyncMemoryStore, MemoryStore, arecall, recall, recall_tool
from sdk_clients import (
    ANTHROPIC_TOOLS,
    Recorder,
    anthropic_client,
    consumed,
    gemini_client,
    openai_client,
)

_STRICT = ConfigDict(extra="forbid")
OPENAI_TOOLS: TypeAdapter[Any] = TypeAdapter(
    list[openai.types.chat.ChatCompletionFunctionToolParam], config=_STRICT
)
RESPONSES_TOOLS: TypeAdapter[Any] = TypeAdapter(
    list[openai.types.responses.FunctionToolParam], config=_STRICT
)
_RESPONSES_REPLY = {
    "id": "resp_1",
    "object": "response",
    "created_at": 0,
    "model": "gpt-4o",
    "status": "completed",
    "output": [],
    "parallel_tool_calls": True,
    "tool_choice": "auto",
    "tools": [],
}


class ResponsesRecorder(Recorder):
    """The SDK recorder, also answering the Responses API."""

    def __call__(self, request: httpx2.Request) -> httpx2.Response:
        if str(request.url).endswith("/responses"):
            self.bodies.append((str(request.url), json.loads(request.content)))
            return httpx2.Response(200, json=_RESPONSES_REPLY)
        return super().__call__(request)


@pytest.fixture
def recorder() -> ResponsesRecorder:
    return ResponsesRecorder()


class TestRecallTool:
    def test_openai_chat_takes_it(self, recorder: ResponsesRecorder) -> None:
        tool = recall_tool("openai")
        consumed(OPENAI_TOOLS.validate_python([tool]))

        openai_client(recorder).chat.completions.create(
            model="gpt-4o", messages=[{"role": "user", "content": "hi"}], tools=[tool]
        )

        assert recorder.last["tools"] == [tool]
        assert tool["function"]["name"] == "recall"

    def test_openai_responses_takes_it(self, recorder: ResponsesRecorder) -> None:
        tool = recall_tool("responses")
        consumed(RESPONSES_TOOLS.validate_python([tool]))

        openai_client(recorder).responses.create(model="gpt-4o", input="hi", tools=[tool])

        assert recorder.last["tools"] == [tool]

    def test_anthropic_takes_it(self, recorder: ResponsesRecorder) -> None:
        tool = recall_tool("anthropic")
        consumed(ANTHROPIC_TOOLS.validate_python([tool]))

        anthropic_client(recorder).messages.create(
            model="claude-sonnet-5",
            max_tokens=100,
            messages=[{"role": "user", "content": "hi"}],
            tools=[tool],
        )

        assert recorder.last["tools"] == [tool]

    def test_gemini_takes_it(self, recorder: ResponsesRecorder) -> None:
        declaration = genai_types.FunctionDeclaration.model_validate(recall_tool("gemini"))
        config = genai_types.GenerateContentConfig(
            tools=[genai_types.Tool(function_declarations=[declaration])]
        )

        gemini_client(recorder).models.generate_content(
            model="gemini-2.5-flash", contents="hi", config=config
        )

        (sent,) = recorder.last["tools"][0]["functionDeclarations"]
        assert sent["name"] == "recall"
        assert sent["parameters"]["required"] == ["query"]
        assert sent["parameters"]["properties"]["types"]["items"]["enum"][0] == "SYSTEM"

    def test_the_name_can_be_chosen(self) -> None:
        assert recall_tool("anthropic", name="search_history")["name"] == "search_history"

    @pytest.mark.parametrize(
        ("provider", "name", "message"),
        [
            ("mistral", "recall", "unknown provider 'mistral'"),
            ("openai", "", "a tool name is 1 to 64"),
            ("openai", "recall now", "a tool name is 1 to 64"),
            ("openai", "r" * 65, "a tool name is 1 to 64"),
        ],
    )
    def test_what_it_refuses(self, provider: str, name: str, message: str) -> None:
        with pytest.raises(StoreArgumentError, match=message):
            recall_tool(provider, name=name)  # type: ignore[arg-type]


@pytest.fixture
def run(store: MemoryStore) -> str:
    """A run whose failing test output was compacted away."""
    store.create_thread("run")
    store.append(
        "run",
        chunks.user("Make the parser tests pass.", id="task"),
        chunks.tool_call("bash", {"command": "pytest tests/test_parse.py"}, "c1", id="call"),
        chunks.tool_result(
            "bash",
            "FAILED tests/test_parse.py::test_nested - KeyError: 'children'",
            "c1",
            id="fail",
        ),
        chunks.assistant("The nested case fails on a missing key.", id="note"),
        chunks.tool_result("bash", "KeyError elsewhere: 'parent'", "c2", id="other"),
    )
    return "run"


class TestRecall:
    def test_the_hits_come_back_as_the_builder_renders_them_best_first(
        self, store: MemoryStore, run: str
    ) -> None:
        output = recall(store, run, {"query": "KeyError: 'children'"})

        hits = store.search(run, "KeyError: 'children'")
        assert output == "\n".join(store.builder.render(hit.chunk)[1] for hit in hits)
        assert output.startswith('<tool_result id="fail"')

    def test_json_text_arguments_are_the_same_as_a_mapping(
        self, store: MemoryStore, run: str
    ) -> None:
        arguments = {"query": "KeyError", "limit": 1, "types": ["ENVIRONMENT"]}

        assert recall(store, run, json.dumps(arguments)) == recall(store, run, arguments)

    def test_limit_and_types_are_obeyed(self, store: MemoryStore, run: str) -> None:
        output = recall(store, run, {"query": "missing key", "limit": 1, "types": ["AGENT"]})

        assert output == store.builder.render(store.get_all_chunks(run)[3])[1]

    def test_only_whole_chunks_fit_the_cap_and_the_rest_are_counted(
        self, store: MemoryStore
    ) -> None:
        store.create_thread("t")
        store.append(
            "t", *[chunks.user(f"timeout {n} " + "x " * 100, id=f"u{n}") for n in range(4)]
        )
        tokenizer = create_tokenizer("estimate")
        one = tokenizer.count(store.builder.render(store.get_all_chunks("t")[0])[1])

        output = recall(store, "t", {"query": "timeout"}, max_tokens=2 * one + 5)

        assert output.count("<user") == 2
        cap = 2 * one + 5
        assert output.endswith(
            f"[2 more matching entries left out: over the {cap}-token recall cap]"
        )

    def test_a_first_hit_bigger_than_the_cap_is_cut_with_a_marker(self, store: MemoryStore) -> None:
        store.create_thread("t")
        store.append("t", chunks.tool_result("bash", "overflow " * 5000, "c", id="big"))
        tokenizer = create_tokenizer("gpt-4o")

        output = recall(store, "t", {"query": "overflow"}, max_tokens=300, tokenizer=tokenizer)

        assert output.startswith("<tool_result")
        assert output.endswith("[cut: this entry is longer than the 300-token recall cap]")
        assert 250 < tokenizer.count(output) <= 300

    def test_nothing_found_is_one_short_line(self, store: MemoryStore, run: str) -> None:
        assert recall(store, run, {"query": "segfault"}) == "No earlier entry matches 'segfault'."

    def test_visible_false_recalls_only_what_the_view_hides(
        self, store: MemoryStore, run: str
    ) -> None:
        store.truncate(run, keep_last=1)

        output = recall(store, run, {"query": "KeyError"}, visible=False)

        assert "children" in output
        assert "parent" not in output

    @pytest.mark.parametrize(
        ("arguments", "message"),
        [
            ("{not json", "recall arguments are not JSON"),
            ("[1, 2]", "must be a JSON object"),
            ({}, "recall needs a query"),
            ({"query": "  "}, "recall needs a query"),
            ({"query": 3}, "recall needs a query"),
            ({"query": "x", "limit": 0}, "limit must be an integer from 1 to 20"),
            ({"query": "x", "limit": 21}, "limit must be an integer from 1 to 20"),
            ({"query": "x", "limit": "2"}, "limit must be an integer from 1 to 20"),
            ({"query": "x", "types": "AGENT"}, "types must be a list of kinds"),
            ({"query": "x", "types": ["TOOLS"]}, "unknown chunk type"),
            ({"query": "x", "kinds": ["AGENT"]}, "unknown argument kinds"),
        ],
    )
    def test_bad_arguments_are_a_store_argument_error(
        self, store: MemoryStore, run: str, arguments: Any, message: str
    ) -> None:
        with pytest.raises(StoreArgumentError, match=message):
            recall(store, run, arguments)

    @pytest.mark.parametrize("max_tokens", [0, 49, True, "2000"])
    def test_a_cap_too_small_to_hold_anything_is_refused(
        self, store: MemoryStore, run: str, max_tokens: Any
    ) -> None:
        with pytest.raises(StoreArgumentError, match="max_tokens"):
            recall(store, run, {"query": "x"}, max_tokens=max_tokens)


def test_arecall_answers_as_recall_does(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'recall.db'}"
    with MemoryStore.open(url) as store:
        store.create_thread("t")
        store.append("t", chunks.tool_result("bash", "disk quota exceeded", "c", id="q"))
        expected = recall(store, "t", '{"query": "quota"}')

    async def main() -> str:
        store = await AsyncMemoryStore.open(url)
        try:
            return await arecall(store, "t", '{"query": "quota"}')
        finally:
            await store.close()

    assert asyncio.run(main()) == expected
