"""Every request memctx builds is accepted by the official SDKs and meets each provider's rules.

Inputs (``adapter_cases``): the bundled example under four budgets, the three real
runs with and without budgets, the edge cases, and 300 seeded random states under
random budgets; each built for its provider, in both tool modes. Each request must
pass the SDK's parameter types, be built by the SDK's own client (over a mock
transport: nothing is sent) and meet the rules in ``provider_rules``.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Callable
from typing import Any

import attrs
import pytest

from adapter_cases import Case, all_cases, edge_cases, example_cases, media_cases
from memctx import BudgetExceededError, EmptyContextError, create_builder, create_tokenizer
from memctx._render.media import media_tokens
from provider_rules import (
    anthropic_violations,
    gemini_violations,
    openai_violations,
    responses_violations,
)
from sdk_clients import (
    Recorder,
    anthropic_client,
    check_anthropic_types,
    check_gemini_types,
    check_openai_types,
    check_responses_types,
    gemini_client,
    openai_client,
)

TOKENIZER = create_tokenizer("gpt-4o")
BUILDERS = {"cdata": create_builder(content="cdata"), "escape": create_builder(content="escape")}


@attrs.define
class Tally:
    """What happened to the requests of one provider and tool mode."""

    sent: int = 0
    empty: int = 0
    over_budget: int = 0
    native_calls: int = 0
    added_turns: int = 0
    cache_marks: int = 0
    native_blocks: dict[str, int] = attrs.field(factory=dict)
    violations: list[str] = attrs.field(factory=list)


@functools.cache
def cases() -> list[Case]:
    return all_cases()


Sender = Callable[[Any, str, bool, bool], None]


def _openai_sender(recorder: Recorder) -> Sender:
    client = openai_client(recorder)

    def send(result: Any, tools: str, prefill: bool, cache: bool) -> None:
        messages = result.to_openai(tools=tools)
        check_openai_types(messages)
        client.chat.completions.create(model="gpt-4o", messages=messages)

    return send


def _responses_sender(recorder: Recorder) -> Sender:
    client = openai_client(recorder)

    def send(result: Any, tools: str, prefill: bool, cache: bool) -> None:
        items = result.to_responses(tools=tools)
        check_responses_types(items)
        client.responses.create(model="gpt-4o", input=items)

    return send


def _anthropic_sender(recorder: Recorder) -> Sender:
    client = anthropic_client(recorder)

    def send(result: Any, tools: str, prefill: bool, cache: bool) -> None:
        request = result.to_anthropic(tools=tools, prefill=prefill, cache=cache)
        check_anthropic_types(request)
        client.messages.create(model="claude-sonnet-5", max_tokens=1024, **request)

    return send


def _gemini_sender(recorder: Recorder) -> Sender:
    client = gemini_client(recorder)

    def send(result: Any, tools: str, prefill: bool, cache: bool) -> None:
        request = result.to_gemini(tools=tools, prefill=prefill)
        check_gemini_types(request)
        client.models.generate_content(model="gemini-2.5-flash", **request)

    return send


SENDERS: dict[str, Callable[[Recorder], Sender]] = {
    "openai": _openai_sender,
    "responses": _responses_sender,
    "anthropic": _anthropic_sender,
    "gemini": _gemini_sender,
}


def _native_calls(body: dict[str, Any]) -> int:
    count = 0
    for message in body.get("messages", []):
        count += len(message.get("tool_calls") or [])
        if isinstance(message.get("content"), list):
            count += sum(b["type"] == "tool_use" for b in message["content"])
    for content in body.get("contents", []):
        count += sum("functionCall" in part for part in content["parts"])
    count += sum(item.get("type") == "function_call" for item in body.get("input", []))
    return count


_BLOCK_KINDS = frozenset(
    {"image_url", "file", "image", "document", "thinking", "redacted_thinking", "reasoning"}
    | {"input_image", "input_file", "inlineData", "fileData"}
)


def _native_blocks(body: dict[str, Any]) -> list[str]:
    """The kinds of native media and reasoning structures in a request body as sent."""
    found: list[str] = []

    def walk(value: Any) -> None:
        if isinstance(value, dict):
            if value.get("type") in _BLOCK_KINDS:
                found.append(value["type"])
            found.extend(k for k in value if k in ("inlineData", "fileData"))
            for item in value.values():
                walk(item)
        elif isinstance(value, list):
            for item in value:
                walk(item)

    walk(body.get("messages", body.get("input", body.get("contents"))))
    return found


def _violations(provider: str, body: dict[str, Any], prefill: bool) -> list[str]:
    if provider == "openai":
        return openai_violations(body)
    if provider == "anthropic":
        return anthropic_violations(body, prefill=prefill)
    if provider == "responses":
        return responses_violations(body)
    return gemini_violations(body, prefill=prefill)


def text_form(provider: str, result: Any) -> list[dict[str, str]] | None:
    """The request of ``result`` in text mode as chat messages (None: it is refused):
    what ``token_count`` counts, added turns and a prefill's removed white space included."""
    try:
        if provider in ("openai", "responses"):
            return [dict(m) for m in result.to_openai(tools="text")]
        if provider == "anthropic":
            request = result.to_anthropic(tools="text")
            system = (
                [{"role": "system", "content": request["system"]}] if "system" in request else []
            )
            return [*system, *request["messages"]]
        request = result.to_gemini(tools="text")
        instruction = request["config"].get("system_instruction")
        system = [{"role": "system", "content": instruction}] if instruction else []
        return [
            *system,
            *(
                {"role": "assistant" if c["role"] == "model" else "user", "content": p["text"]}
                for c in request["contents"]
                for p in c["parts"]
            ),
        ]
    except EmptyContextError:
        return None


def run(
    provider: str,
    tools: str,
    chosen: list[Case],
    *,
    prefill: bool = False,
    texts: dict[str, str] | None = None,
    cache: bool = False,
) -> Tally:
    """Build, adapt, send through the SDK and check every case; count what happened."""
    tally = Tally()
    recorder = Recorder()
    send = SENDERS[provider](recorder)
    for case in chosen:
        builder = BUILDERS[case.content]
        target = "openai" if provider == "responses" else provider
        # OpenAI builds count the request of the mode sent; the others count the text form.
        turns = {"prefill": prefill, **(texts or {})} if target != "openai" else {"tools": tools}
        try:
            result = builder.build(
                case.state, tokenizer=TOKENIZER, provider=target, **turns, **case.options
            )
        except BudgetExceededError:
            tally.over_budget += 1
            continue
        problems = []
        budget = case.options.get("max_tokens")
        if budget is not None and result.token_count > budget:
            problems.append(f"{result.token_count} tokens over the budget of {budget}")
        native_openai = target == "openai" and tools == "native"
        roles = [m.role for m in result.messages]
        extra = result.added_turns.texts
        sent = text_form(provider, result)
        media = [c for c in result.included_chunks if c.action in ("image", "document")]
        media_cost = sum(media_tokens(c.action, c.metadata, target) for c in media)
        estimated = any(c.action == "document" for c in media)
        if native_openai:
            native = [dict(m) for m in result.to_openai()] if sent is not None else None
            plain = native is not None and all(isinstance(m.get("content"), str) for m in native)
            if plain and all("tool_calls" not in m and m["role"] != "tool" for m in native):
                sent = native  # the cookbook's count holds for a native request without calls
                media_cost = 0  # and it holds no media part (a linked PDF stays its placeholder)
                if not result.token_count_exact:
                    problems.append("a native request without calls counted inexact")
            else:
                sent = None
        elif result.token_count_exact is not (target == "openai" and not estimated):
            problems.append(f"token_count_exact is {result.token_count_exact}")
        if sent is not None and result.token_count != TOKENIZER.count_messages(sent) + media_cost:
            problems.append("token_count is not the count of the request sent")
        try:
            send(result, tools, prefill, cache)
            body = recorder.last
        except EmptyContextError as exc:
            tally.empty += 1
            body_roles = [r for r in roles if r != "system" or target == "openai"]
            if body_roles:
                problems.append(f"refused a request that has turns: {exc}")
        else:
            tally.sent += 1
            tally.native_calls += _native_calls(body)
            for kind in _native_blocks(body):
                tally.native_blocks[kind] = tally.native_blocks.get(kind, 0) + 1
            tally.added_turns += len(extra)
            tally.cache_marks += json.dumps(body).count('"cache_control"')
            if texts and extra and not all(json.dumps(t)[1:-1] in json.dumps(body) for t in extra):
                problems.append(f"the added turns {extra} were not sent")
            problems += _violations(provider, body, prefill)
        tally.violations += [f"{case.name} ({case.content}): {p}" for p in problems]
    return tally


@pytest.mark.parametrize("tools", ["text", "native"])
@pytest.mark.parametrize("provider", ["openai", "responses", "anthropic", "gemini"])
def test_every_request_is_accepted_and_meets_the_provider_rules(provider: str, tools: str) -> None:
    tally = run(provider, tools, cases())

    assert tally.violations == []
    assert tally.sent >= 280
    assert tally.empty >= 4  # the empty, system-only and filtered cases are refused, not sent
    if tools == "native":
        assert tally.native_calls >= 100
    else:
        assert tally.native_calls == 0
    if provider in ("anthropic", "gemini"):
        assert tally.added_turns >= 50
    print(f"{provider} {tools}: {tally.sent} accepted, {tally.native_calls} native calls")


@pytest.mark.parametrize("provider", ["anthropic", "gemini"])
def test_prefill_requests_keep_the_final_assistant_turn_and_meet_the_rules(
    provider: str,
) -> None:
    chosen = [*example_cases(), *edge_cases()]

    tally = run(provider, "text", chosen, prefill=True)

    assert tally.violations == []
    assert tally.sent >= 20


CUSTOM_TURNS = {
    "opening_turn": "What follows is the record of an agent's work so far, oldest first; "
    "read all of it before answering, since later steps correct earlier ones.",
    "closing_turn": "Carry on from where the record ends: take the next step, or say "
    "plainly that the task is finished and why.",
}


@pytest.mark.parametrize("tools", ["text", "native"])
@pytest.mark.parametrize("provider", ["anthropic", "gemini"])
def test_custom_turns_given_to_the_build_are_sent_counted_and_kept_within_the_budget(
    provider: str, tools: str
) -> None:
    """Turns of ~30 tokens: every request that adds one still fits its budget, and
    token_count is the count of the text request the SDK sent."""
    tally = run(provider, tools, cases(), texts=CUSTOM_TURNS)

    assert tally.violations == []
    assert tally.sent >= 280
    assert tally.added_turns >= 50


@pytest.mark.parametrize("tools", ["text", "native"])
def test_requests_with_cache_marks_are_accepted_and_meet_the_rules(tools: str) -> None:
    """to_anthropic(cache=True) on every case: the SDK takes the marked system and blocks,
    and the rules (at most four breakpoints among them) hold."""
    tally = run("anthropic", tools, cases(), cache=True)

    assert tally.violations == []
    assert tally.sent >= 280
    assert tally.cache_marks >= tally.sent  # the system, and messages of longer builds


NATIVE_BLOCKS = {
    "openai": {"image_url", "file"},
    "responses": {"input_image", "input_file", "reasoning"},
    "anthropic": {"image", "document", "thinking", "redacted_thinking"},
    "gemini": {"inlineData", "fileData"},
}


@pytest.mark.parametrize("tools", ["text", "native"])
@pytest.mark.parametrize("provider", ["openai", "responses", "anthropic", "gemini"])
def test_reasoning_and_media_requests_are_accepted_with_native_blocks(
    provider: str, tools: str, png: bytes, pdf: bytes
) -> None:
    """Thinking and redacted thinking with tool use, OpenAI reasoning items, images and PDFs:
    every request accepted by the SDK; in native mode the provider's own blocks are in the
    body it sends, in text mode none is (placeholders only)."""
    chosen = media_cases(png, pdf)

    tally = run(provider, tools, chosen)

    assert tally.violations == []
    assert tally.sent == len(chosen)
    if tools == "native":
        assert set(tally.native_blocks) == NATIVE_BLOCKS[provider]
        assert tally.native_calls >= 20
    else:
        assert tally.native_blocks == {}
