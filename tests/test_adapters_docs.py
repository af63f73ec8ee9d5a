"""The docs' provider examples run as printed, each SDK over a mock transport.

``test_docs`` runs every page's other blocks; the ones that call an API are
marked ``<!-- not run -->`` there. Here the SDK clients they construct get a
mock HTTP transport (and a test key), so each page runs with those blocks too,
exactly as printed, and every request is checked against the provider's rules.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anthropic
import openai
import pytest
from google import genai
from google.genai import types as genai_types

from doc_pages import ROOT, Block, blocks
from provider_rules import anthropic_violations, gemini_violations, openai_violations
from sdk_clients import Recorder

PROVIDERS = ROOT / "docs" / "providers.md"
CACHING = ROOT / "docs" / "strategies-and-caching.md"


def python_blocks(page: Path) -> list[Block]:
    """Every Python block of ``page``, those marked ``not run`` included."""
    return [block for block in blocks(page) if block.lang == "python"]


def run_all(page: Path) -> dict[str, Any]:
    namespace: dict[str, Any] = {"__name__": "__main__"}
    for block in python_blocks(page):
        exec(compile(block.body, block.where, "exec"), namespace)
    return namespace


@pytest.fixture
def recorder(monkeypatch: pytest.MonkeyPatch, fresh_directory: Path) -> Recorder:
    """Every OpenAI, Anthropic and Gemini client made in the test talks to a mock transport
    (and the pages run in an empty directory, as in ``test_docs``)."""
    recorder = Recorder()

    class MockedOpenAI(openai.OpenAI):
        def __init__(self, **kwargs: Any) -> None:
            super().__init__(api_key="test", http_client=recorder.http_client(), **kwargs)

    class MockedAnthropic(anthropic.Anthropic):
        def __init__(self, **kwargs: Any) -> None:
            super().__init__(api_key="test", http_client=recorder.http_client(), **kwargs)

    class MockedGemini(genai.Client):
        def __init__(self, **kwargs: Any) -> None:
            options = genai_types.HttpOptions(httpx_client=recorder.http_client())
            super().__init__(api_key="test", http_options=options, **kwargs)

    monkeypatch.setattr(openai, "OpenAI", MockedOpenAI)
    monkeypatch.setattr(anthropic, "Anthropic", MockedAnthropic)
    monkeypatch.setattr(genai, "Client", MockedGemini)
    return recorder


class TestThePagesCallTheSdks:
    def test_one_call_per_provider_and_one_cached_call_are_marked_not_run(self) -> None:
        skipped = [
            block.body
            for page in (PROVIDERS, CACHING)
            for block in python_blocks(page)
            if block.marker == "not run"
        ]

        assert len(skipped) == 4
        assert ["OpenAI(" in skipped[0], "Anthropic(" in skipped[1], "genai.Client(" in skipped[2]]
        assert "cache=True" in skipped[3]

    def test_each_provider_example_runs_as_printed_and_sends_a_valid_request(
        self, recorder: Recorder
    ) -> None:
        namespace = run_all(PROVIDERS)

        (
            (openai_url, openai_body),
            (anthropic_url, anthropic_body),
            (gemini_url, gemini_body),
        ) = recorder.bodies
        assert openai_url.endswith("/chat/completions")
        assert openai_violations(openai_body) == []
        assert anthropic_url.endswith("/v1/messages")
        assert anthropic_violations(anthropic_body) == []
        assert ":generateContent" in gemini_url
        assert gemini_violations(gemini_body) == []
        # The examples use native tool calls: the failed run_tests call is sent as one.
        assert openai_body["messages"][2]["tool_calls"][0]["function"]["name"] == "run_tests"
        assert anthropic_body["messages"][2]["content"][0]["is_error"] is True
        assert gemini_body["contents"][2]["parts"][0]["functionResponse"]["response"] == {
            "error": "1 failed: expected 30000, got 51200"
        }
        assert namespace["reply"].text == "ok"

    def test_the_cached_example_marks_the_system_prompt(self, recorder: Recorder) -> None:
        run_all(CACHING)

        ((cached_url, cached_body),) = recorder.bodies
        assert cached_url.endswith("/v1/messages")
        assert anthropic_violations(cached_body) == []
        assert cached_body["system"][0]["cache_control"] == {"type": "ephemeral"}
