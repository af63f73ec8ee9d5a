"""Native tool mode and calls made without arguments (``null``): never a crash."""

from __future__ import annotations

import json
from typing import Any

import pytest

from memctx import Chunk, ContextBuildResult, MemoryState, chunks, create_builder
from memctx.adapters import to_anthropic, to_gemini, to_openai
from memctx.importers import load_openai_transcript

ADAPTERS = {"openai": to_openai, "anthropic": to_anthropic, "gemini": to_gemini}


def build(*items: Chunk) -> ContextBuildResult:
    return create_builder().build(MemoryState(list(items)), max_tokens=2_000)


def text_of(request: Any) -> str:
    return json.dumps(request, ensure_ascii=False)


class TestNullArguments:
    @pytest.mark.parametrize("provider", sorted(ADAPTERS))
    def test_a_call_without_arguments_is_sent_natively_with_an_empty_object(
        self, provider: str
    ) -> None:
        result = build(
            chunks.user("go", id="u"),
            chunks.tool_call("status", None, call_id="c1", id="call"),
            chunks.tool_result("status", "all green", call_id="c1", id="res"),
        )
        request = ADAPTERS[provider](result, tools="native")
        shown = text_of(request)
        assert "all green" in shown
        assert 'call_id=\\"c1\\"' not in shown  # not the XML form
        if provider == "openai":
            assert request[1]["tool_calls"][0]["function"]["arguments"] == "{}"
        elif provider == "anthropic":
            assert {"type": "tool_use", "id": "c1", "name": "status", "input": {}} in [
                block
                for m in request["messages"]
                for block in m["content"]
                if isinstance(m["content"], list)
            ]
        else:
            assert '"function_call": {"id": "c1", "name": "status", "args": {}}' in shown

    def test_an_imported_openai_call_with_null_arguments_adapts_to_every_provider(self) -> None:
        state, *_ = load_openai_transcript(
            [
                {"role": "user", "content": "go"},
                {
                    "role": "assistant",
                    "content": None,
                    "tool_calls": [
                        {
                            "id": "c1",
                            "type": "function",
                            "function": {"name": "status", "arguments": "null"},
                        }
                    ],
                },
                {"role": "tool", "tool_call_id": "c1", "content": "all green"},
            ]
        )
        result = create_builder().build(state, max_tokens=2_000)
        for adapt in ADAPTERS.values():
            assert "all green" in text_of(adapt(result, tools="native"))

    def test_a_call_with_an_empty_object_is_still_sent_natively(self) -> None:
        result = build(
            chunks.user("go", id="u"),
            chunks.tool_call("status", {}, call_id="c1", id="call"),
            chunks.tool_result("status", "all green", call_id="c1", id="res"),
        )
        messages = to_openai(result, tools="native")
        assert messages[1]["tool_calls"][0]["function"]["arguments"] == "{}"
