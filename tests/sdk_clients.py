"""The official SDK clients over a mock HTTP transport: each builds its real request,
nothing is sent.

openai, anthropic and google-genai build their requests with ``httpx2`` (the
successor of httpx these SDK versions ship on); each client gets an
``httpx2.Client`` whose ``MockTransport`` records the request and answers
with a minimal valid response. google-genai takes it through
``HttpOptions(httpx_client=...)``.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from typing import Any

import anthropic
import anthropic.types
import httpx2
import openai
from google import genai
from google.genai import types as genai_types
from openai.types.chat import ChatCompletionMessageParam
from openai.types.responses import ResponseInputParam
from pydantic import ConfigDict, TypeAdapter

_OPENAI_REPLY = {
    "id": "chatcmpl-1",
    "object": "chat.completion",
    "created": 0,
    "model": "gpt-4o",
    "choices": [
        {"index": 0, "message": {"role": "assistant", "content": "ok"}, "finish_reason": "stop"}
    ],
}
_ANTHROPIC_REPLY = {
    "id": "msg_1",
    "type": "message",
    "role": "assistant",
    "model": "claude-sonnet-5",
    "content": [{"type": "text", "text": "ok"}],
    "stop_reason": "end_turn",
    "usage": {"input_tokens": 1, "output_tokens": 1},
}
_RESPONSES_REPLY = {
    "id": "resp_1",
    "object": "response",
    "created_at": 0,
    "model": "gpt-4o",
    "status": "completed",
    "output": [
        {
            "type": "message",
            "id": "msg_1",
            "role": "assistant",
            "status": "completed",
            "content": [{"type": "output_text", "text": "ok", "annotations": []}],
        }
    ],
    "parallel_tool_calls": True,
    "tool_choice": "auto",
    "tools": [],
}
_GEMINI_REPLY = {"candidates": [{"content": {"role": "model", "parts": [{"text": "ok"}]}}]}


class Recorder:
    """Answers every request and keeps the JSON bodies the clients built."""

    def __init__(self) -> None:
        self.bodies: list[tuple[str, dict[str, Any]]] = []

    def __call__(self, request: httpx2.Request) -> httpx2.Response:
        url = str(request.url)
        self.bodies.append((url, json.loads(request.content)))
        if "chat/completions" in url:
            return httpx2.Response(200, json=_OPENAI_REPLY)
        if url.endswith("/responses"):
            return httpx2.Response(200, json=_RESPONSES_REPLY)
        if url.endswith("/v1/messages"):
            return httpx2.Response(200, json=_ANTHROPIC_REPLY)
        return httpx2.Response(200, json=_GEMINI_REPLY)

    def http_client(self) -> httpx2.Client:
        return httpx2.Client(transport=httpx2.MockTransport(self))

    @property
    def last(self) -> dict[str, Any]:
        return self.bodies[-1][1]


def openai_client(recorder: Recorder) -> openai.OpenAI:
    return openai.OpenAI(api_key="test", http_client=recorder.http_client(), max_retries=0)


def anthropic_client(recorder: Recorder) -> anthropic.Anthropic:
    return anthropic.Anthropic(api_key="test", http_client=recorder.http_client(), max_retries=0)


def gemini_client(recorder: Recorder) -> genai.Client:
    options = genai_types.HttpOptions(httpx_client=recorder.http_client())
    return genai.Client(api_key="test", http_options=options)


_STRICT = ConfigDict(extra="forbid")
OPENAI_MESSAGES: TypeAdapter[Any] = TypeAdapter(list[ChatCompletionMessageParam], config=_STRICT)
RESPONSES_INPUT: TypeAdapter[Any] = TypeAdapter(ResponseInputParam, config=_STRICT)
ANTHROPIC_MESSAGES: TypeAdapter[Any] = TypeAdapter(
    list[anthropic.types.MessageParam], config=_STRICT
)
ANTHROPIC_TOOLS: TypeAdapter[Any] = TypeAdapter(list[anthropic.types.ToolParam], config=_STRICT)
ANTHROPIC_SYSTEM: TypeAdapter[Any] = TypeAdapter(
    list[anthropic.types.TextBlockParam], config=_STRICT
)


def consumed(value: Any) -> Any:
    """Walk a validated value, consuming the lazy iterators pydantic makes of ``Iterable`` fields
    (that is where their items are validated)."""
    if isinstance(value, str | bytes | int | float | bool) or value is None:
        return value
    if isinstance(value, Mapping):
        return {k: consumed(v) for k, v in value.items()}
    if hasattr(value, "model_dump"):
        return value
    if isinstance(value, Iterable):
        return [consumed(v) for v in value]
    return value


def check_openai_types(messages: Any) -> None:
    consumed(OPENAI_MESSAGES.validate_python(messages))


def check_responses_types(items: Any) -> None:
    consumed(RESPONSES_INPUT.validate_python(items))


def check_anthropic_types(request: Mapping[str, Any]) -> None:
    consumed(ANTHROPIC_MESSAGES.validate_python(request["messages"]))
    if "tools" in request:
        consumed(ANTHROPIC_TOOLS.validate_python(request["tools"]))
    if "system" in request and not isinstance(request["system"], str):
        consumed(ANTHROPIC_SYSTEM.validate_python(request["system"]))


def check_gemini_types(request: Mapping[str, Any]) -> None:
    assert set(request) == {"contents", "config"}
    for content in request["contents"]:
        genai_types.Content.model_validate(content)
    genai_types.GenerateContentConfig.model_validate(request["config"])
