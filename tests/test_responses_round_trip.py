"""OpenAI Responses items survive ``load_responses_items`` -> build -> ``to_responses``: ids,
reasoning summary parts and encrypted content intact, and the openai SDK takes the request.

The documented normalisations (docs/providers-fidelity.md): a message's text is sent as its
chunk's XML, a call's arguments are re-serialised (the same JSON value).
"""

from __future__ import annotations

import json
from typing import Any

from hypothesis import HealthCheck, given, settings

from memctx import MemoryState, chunks, create_builder
from memctx.adapters import to_responses
from memctx.importers import load_responses_items
from memctx.statefile import dumps_state, loads_state
from sdk_clients import Recorder, check_responses_types, openai_client
from strategies import responses_items

RECORDER = Recorder()
CLIENT = openai_client(RECORDER)


def _text(item: dict[str, Any]) -> str:
    content = item["content"]
    return content if isinstance(content, str) else "".join(p["text"] for p in content)


def assert_same_items(before: list[dict[str, Any]], after: list[dict[str, Any]]) -> None:
    """``after`` is ``before`` but for the documented normalisations."""
    assert len(after) == len(before), (before, after)
    for old, new in zip(before, after, strict=True):
        if old.get("type", "message") == "message":
            assert {k: v for k, v in new.items() if k != "content"} == {
                k: v for k, v in old.items() if k != "content"
            }
            assert _text(old) in _text(new)
            if isinstance(old["content"], list):
                assert new["content"][0]["annotations"] == []
        elif old["type"] == "function_call":
            assert {**new, "arguments": None} == {**old, "arguments": None}
            assert json.loads(new["arguments"]) == json.loads(old["arguments"])
        else:
            assert new == old


def sent_by_sdk(items: list[dict[str, Any]]) -> list[dict[str, Any]]:
    CLIENT.responses.create(model="gpt-5", input=items)
    sent: list[dict[str, Any]] = RECORDER.last["input"]
    return sent


class TestResponsesRoundTrip:
    @settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
    @given(items=responses_items())
    def test_items_come_back_as_they_came_and_the_sdk_takes_them(
        self, items: list[dict[str, Any]]
    ) -> None:
        state, report = load_responses_items(items)

        sent = to_responses(create_builder().build(state))

        assert report.unanswered_calls == ()
        assert_same_items(items, sent)
        check_responses_types(sent)
        assert sent_by_sdk(sent) == sent

    @settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
    @given(items=responses_items())
    def test_without_item_ids_no_item_carries_an_id(self, items: list[dict[str, Any]]) -> None:
        state, _ = load_responses_items(items)

        sent = to_responses(create_builder().build(state), item_ids=False)

        assert all("id" not in item for item in sent)
        reasoning = [i for i in sent if i.get("type") == "reasoning"]
        assert all("encrypted_content" in item for item in reasoning)
        assert len(reasoning) == sum(
            i.get("type") == "reasoning" and "encrypted_content" in i for i in items
        )
        assert sent_by_sdk(sent) == sent

    def test_each_summary_part_is_a_thinking_chunk_and_comes_back_in_order(self) -> None:
        reasoning = {
            "type": "reasoning",
            "id": "rs_1",
            "summary": [
                {"type": "summary_text", "text": "**Reading**\n\nFirst the tests."},
                {"type": "summary_text", "text": "**Fixing**\n\nThen the cap."},
            ],
            "encrypted_content": "gAAAA-1",
        }
        call = {
            "type": "function_call",
            "id": "fc_1",
            "call_id": "call_1",
            "name": "sh",
            "arguments": '{"cmd": "ls"}',
        }
        output = {"type": "function_call_output", "call_id": "call_1", "output": "a b"}
        items = [{"role": "user", "content": "Fix it."}, reasoning, call, output]

        state, _ = load_responses_items(items)
        sent = to_responses(create_builder().build(state))

        thoughts = [c for c in state.chunks if c.subtype == "THINKING"]
        assert [c.id for c in thoughts] == ["item1", "item1_part1"]
        assert [c.metadata.signature for c in thoughts] == ["gAAAA-1", "gAAAA-1"]
        assert sent[1:] == [reasoning, call, output]

    def test_an_assistant_message_with_an_id_goes_back_as_an_output_message(self) -> None:
        message = {
            "type": "message",
            "id": "msg_1",
            "role": "assistant",
            "status": "completed",
            "content": [{"type": "output_text", "text": "Done.", "annotations": []}],
        }
        state, _ = load_responses_items([{"role": "user", "content": "Go."}, message])

        sent = to_responses(create_builder().build(state))

        assert state.chunks[1].metadata.item_id == "msg_1"
        assert sent[1]["id"] == "msg_1"
        assert sent[1]["content"][0]["type"] == "output_text"
        check_responses_types(sent)

    def test_reasoning_chunks_made_by_hand_of_one_id_make_one_item(self) -> None:
        state = MemoryState(
            [
                chunks.user("Go.", id="u"),
                chunks.thinking("One.", "enc", reasoning_id="rs_9", id="t1"),
                chunks.thinking("Two.", "enc", reasoning_id="rs_9", id="t2"),
                chunks.thinking("Other.", "enc2", reasoning_id="rs_10", id="t3"),
                chunks.assistant("Done.", id="a"),
            ]
        )

        sent = to_responses(create_builder().build(state))

        assert [i.get("id") for i in sent[1:3]] == ["rs_9", "rs_10"]
        assert [p["text"] for p in sent[1]["summary"]] == ["One.", "Two."]

    def test_a_state_file_keeps_item_ids(self) -> None:
        call = {
            "type": "function_call",
            "id": "fc_1",
            "call_id": "call_1",
            "name": "sh",
            "arguments": "{}",
        }
        output = {"type": "function_call_output", "id": "fco_1", "call_id": "call_1", "output": "x"}
        state, _ = load_responses_items([{"role": "user", "content": "Go."}, call, output])

        again = loads_state(dumps_state(state))

        assert [c.metadata.item_id for c in again.chunks] == [None, "fc_1", "fco_1"]
        assert to_responses(create_builder().build(again))[1:] == [call, output]
