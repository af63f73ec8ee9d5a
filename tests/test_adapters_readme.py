"""The README's provider examples run as printed, each SDK over a mock transport.

``test_readme`` runs the README's other blocks; these three are marked
``<!-- not run -->`` there because they call an API. Here the SDK clients
they construct get a mock HTTP transport (and a test key), so each example
runs exactly as printed and its request is checked against the rules.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import anthropic
import openai
import pytest
from google import genai
from google.genai import types as genai_types

from provider_rules import anthropic_violations, gemini_violations, openai_violations
from sdk_clients import Recorder

README = Path(__file__).parent.parent / "README.md"
SECTION = re.compile(r"^## Provider requests\n(.*?)^## ", re.DOTALL | re.MULTILINE)
BLOCK = re.compile(r"```python\n(.*?)```", re.DOTALL)


def provider_blocks() -> list[str]:
    section = SECTION.search(README.read_text(encoding="utf-8"))
    assert section is not None
    return BLOCK.findall(section.group(1))


@pytest.fixture
def recorder(monkeypatch: pytest.MonkeyPatch) -> Recorder:
    """Every OpenAI, Anthropic and Gemini client made in the test talks to a mock transport."""
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


def test_the_readme_has_the_history_and_one_example_per_provider() -> None:
    blocks = provider_blocks()

    assert len(blocks) == 6
    assert ["OpenAI(" in blocks[2], "Anthropic(" in blocks[3], "genai.Client(" in blocks[5]] == [
        True,
        True,
        True,
    ]
    assert "closing_turn=" in blocks[1]  # the turns given to the build
    assert "cache=True" in blocks[4]  # prompt caching


def test_each_provider_example_runs_as_printed_and_sends_a_valid_request(
    recorder: Recorder,
) -> None:
    namespace: dict[str, Any] = {"__name__": "readme"}
    for code in provider_blocks():
        exec(compile(code, "README.md", "exec"), namespace)

    (
        (openai_url, openai_body),
        (anthropic_url, anthropic_body),
        (cached_url, cached_body),
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
    # The turn given to the build is the one sent.
    request = namespace["request"]
    assert request["messages"][-1]["content"] == "Go on from where the record ends."
    assert anthropic_violations(request) == []
    # The cached request marks the system prompt.
    assert cached_url.endswith("/v1/messages")
    assert anthropic_violations(cached_body) == []
    assert cached_body["system"][0]["cache_control"] == {"type": "ephemeral"}
