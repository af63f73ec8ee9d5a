"""Images and documents a tool returned (media chunks with the call's ``call_id``): inside the
native result where the provider takes them, after it where it does not, priced by each
provider's formula, and kept by the importers."""

from __future__ import annotations

import base64
import json
from typing import Any

import pytest

from media import EXPECTED_1000_PX
from memctx import (
    AdapterError,
    Chunk,
    InvalidChunkError,
    MemoryState,
    chunks,
    create_builder,
    create_tokenizer,
)
from memctx.adapters import to_anthropic, to_gemini, to_openai, to_responses
from memctx.importers import load_anthropic_messages, load_responses_items
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

GPT4O = create_tokenizer("gpt-4o")


def _b64(raw: bytes) -> str:
    return base64.b64encode(raw).decode()


def screenshot_run(*shots: Chunk, output: str = "saved shot.png") -> MemoryState:
    """A call whose result is followed by ``shots``, then the user's question."""
    return MemoryState(
        [
            chunks.user("Take a screenshot.", id="u"),
            chunks.tool_call("screenshot", {"page": "home"}, call_id="call_1", id="c"),
            chunks.tool_result("screenshot", output, call_id="call_1", id="r"),
            *shots,
            chunks.user("What is on it?", id="u2"),
        ]
    )


def build(state: MemoryState, **options: Any) -> Any:
    return create_builder(GPT4O).build(state, **options)


class TestWhereEachProviderGetsIt:
    def test_anthropic_gets_it_as_a_block_of_the_tool_result(self, png: bytes) -> None:
        recorder = Recorder()
        request = to_anthropic(build(screenshot_run(chunks.image(png, call_id="call_1"))))
        check_anthropic_types(request)

        anthropic_client(recorder).messages.create(model="claude-x", max_tokens=10, **request)

        turn = recorder.last["messages"][2]["content"]
        assert turn[0]["type"] == "tool_result"
        assert turn[0]["content"] == [
            {"type": "text", "text": "saved shot.png"},
            {
                "type": "image",
                "source": {"type": "base64", "media_type": "image/png", "data": _b64(png)},
            },
        ]
        assert [b["type"] for b in turn[1:]] == ["text"]  # the user's question, after it

    def test_responses_gets_it_in_the_function_call_output(self, png: bytes, pdf: bytes) -> None:
        recorder = Recorder()
        shots = (
            chunks.image(png, call_id="call_1"),
            chunks.document(pdf, title="r.pdf", call_id="call_1"),
        )
        items = to_responses(build(screenshot_run(*shots)))
        check_responses_types(items)

        openai_client(recorder).responses.create(model="gpt-5", input=items)

        output = recorder.last["input"][2]
        assert output["type"] == "function_call_output"
        assert [p["type"] for p in output["output"]] == ["input_text", "input_image", "input_file"]
        assert output["output"][1]["image_url"] == f"data:image/png;base64,{_b64(png)}"
        assert output["output"][2]["filename"] == "r.pdf"

    def test_gemini_gets_it_as_a_part_of_the_function_response(self, png: bytes) -> None:
        recorder = Recorder()
        request = to_gemini(build(screenshot_run(chunks.image(png, call_id="call_1"))))
        check_gemini_types(request)

        gemini_client(recorder).models.generate_content(model="gemini-3-pro", **request)

        response = recorder.last["contents"][2]["parts"][0]["functionResponse"]
        assert response["response"] == {"output": "saved shot.png"}
        # As the SDK sends it: proto field names (which the API's JSON takes as well as
        # camelCase), the bytes re-encoded as URL-safe base64.
        (part,) = response["parts"]
        assert part["inline_data"]["mime_type"] == "image/png"
        assert base64.urlsafe_b64decode(part["inline_data"]["data"]) == png

    def test_gemini_gets_one_by_url_right_after_the_function_response(self) -> None:
        shot = chunks.image(url="https://example.com/s.png", call_id="call_1")
        request = to_gemini(build(screenshot_run(shot)))
        check_gemini_types(request)

        parts = request["contents"][2]["parts"]

        assert "parts" not in parts[0]["function_response"]
        assert parts[1] == {
            "file_data": {"file_uri": "https://example.com/s.png", "mime_type": "image/png"}
        }
        assert "What is on it?" in parts[2]["text"]

    def test_gemini_gets_it_after_the_response_for_older_models(self, png: bytes) -> None:
        result = build(screenshot_run(chunks.image(png, call_id="call_1")))

        parts = to_gemini(result, tool_media="after")["contents"][2]["parts"]

        assert "parts" not in parts[0]["function_response"]
        assert parts[1] == {"inline_data": {"mime_type": "image/png", "data": _b64(png)}}

    def test_gemini_refuses_an_unknown_tool_media(self, png: bytes) -> None:
        result = build(screenshot_run(chunks.image(png, call_id="call_1")))

        with pytest.raises(AdapterError, match="tool_media: must be 'response' or 'after'"):
            to_gemini(result, tool_media="inside")  # type: ignore[arg-type]

    def test_openai_chat_gets_it_after_the_tool_message_with_its_placeholder(
        self, png: bytes
    ) -> None:
        recorder = Recorder()
        messages = to_openai(build(screenshot_run(chunks.image(png, call_id="call_1", id="i"))))
        check_openai_types(messages)

        openai_client(recorder).chat.completions.create(model="gpt-4o", messages=messages)

        sent = recorder.last["messages"]
        assert [m["role"] for m in sent] == ["user", "assistant", "tool", "user"]
        assert sent[2] == {"role": "tool", "tool_call_id": "call_1", "content": "saved shot.png"}
        placeholder, image, question = sent[3]["content"]
        assert 'call_id="call_1"' in placeholder["text"]
        assert image == {
            "type": "image_url",
            "image_url": {"url": f"data:image/png;base64,{_b64(png)}"},
        }
        assert "What is on it?" in question["text"]

    def test_langchain_gets_it_as_a_block_of_the_tool_message(self, png: bytes) -> None:
        messages = build(screenshot_run(chunks.image(png, call_id="call_1"))).to_langchain()

        tool = messages[2]
        assert tool.type == "tool"
        assert [b["type"] for b in tool.content] == ["text", "image"]
        assert tool.content[1]["base64"] == _b64(png)

    def test_text_mode_sends_a_placeholder_that_names_the_call(self, png: bytes) -> None:
        result = build(screenshot_run(chunks.image(png, call_id="call_1", id="i")))

        for request in (
            to_openai(result, tools="text"),
            to_anthropic(result, tools="text"),
            to_gemini(result, tools="text"),
            to_responses(result, tools="text"),
        ):
            body = json.dumps(request)
            assert '<image id=\\"i\\"' in body
            assert 'call_id=\\"call_1\\"' in body
            assert _b64(png)[:40] not in body


class TestWhenItStaysInPlace:
    def test_an_image_of_a_call_sent_as_text_stays_a_user_part(self, png: bytes) -> None:
        state = MemoryState(
            [
                chunks.user("Take a screenshot.", id="u"),
                chunks.tool_call("screenshot", {}, call_id="call_1", status="pending", id="c"),
                chunks.image(png, call_id="call_1", id="i"),
            ]
        )

        messages = to_anthropic(build(state))["messages"]

        assert [b["type"] for b in messages[2]["content"]] == ["image"]
        assert isinstance(messages[1]["content"], str)  # the pending call, as text

    def test_an_image_of_another_call_is_not_moved_into_this_result(self, png: bytes) -> None:
        result = build(screenshot_run(chunks.image(png, call_id="call_9")))

        turn = to_anthropic(result)["messages"][2]["content"]

        assert turn[0] == {
            "type": "tool_result",
            "tool_use_id": "call_1",
            "content": "saved shot.png",
        }
        assert [b["type"] for b in turn[1:]] == ["image", "text"]

    def test_a_result_without_text_sends_only_the_image(self, png: bytes) -> None:
        result = build(screenshot_run(chunks.image(png, call_id="call_1"), output=""))

        block = to_anthropic(result)["messages"][2]["content"][0]
        output = to_responses(result)[2]["output"]

        assert [b["type"] for b in block["content"]] == ["image"]
        assert [p["type"] for p in output] == ["input_image"]

    def test_a_call_id_that_is_no_text_is_refused(self, png: bytes) -> None:
        with pytest.raises(InvalidChunkError, match="call_id"):
            chunks.image(png, call_id="")


class TestCosts:
    @pytest.mark.parametrize("provider", ["openai", "anthropic", "gemini"])
    def test_a_tools_1000_px_png_costs_its_providers_formula(
        self, png: bytes, provider: str
    ) -> None:
        shot = chunks.image(png, call_id="call_1", id="i")

        result = build(screenshot_run(shot), provider=provider)
        placeholder = GPT4O.count(create_builder().render(shot)[1] + "\n")

        assert result.chunk_tokens["i"] == EXPECTED_1000_PX[provider] + placeholder

    def test_the_openai_request_count_holds_the_moved_image_and_its_placeholder(
        self, png: bytes
    ) -> None:
        shot = chunks.image(png, call_id="call_1", id="i")
        run = screenshot_run(shot)
        without = MemoryState([c for c in run.chunks if c.id != "i"])

        with_image = build(run, provider="openai")
        plain = build(without, provider="openai")
        placeholder = to_openai(with_image)[3]["content"][0]["text"]

        assert with_image.token_count - plain.token_count == 765 + GPT4O.count(placeholder)


class TestImporters:
    def test_anthropic_tool_result_images_come_back_inside_the_result(self, png: bytes) -> None:
        image = {
            "type": "image",
            "source": {"type": "base64", "media_type": "image/png", "data": _b64(png)},
        }
        result_block = {
            "type": "tool_result",
            "tool_use_id": "toolu_1",
            "content": [{"type": "text", "text": "saved"}, image],
        }
        source = [
            {"role": "user", "content": "Take a screenshot."},
            {
                "role": "assistant",
                "content": [{"type": "tool_use", "id": "toolu_1", "name": "shot", "input": {}}],
            },
            {"role": "user", "content": [result_block]},
        ]

        state, report = load_anthropic_messages(source)
        sent = to_anthropic(build(state))["messages"]

        assert report.unknown_blocks == ()
        assert [c.id for c in state.chunks][-2:] == ["msg2_0", "msg2_0_1"]
        assert state.chunks[-1].metadata.call_id == "toolu_1"
        assert sent[2]["content"] == [result_block]

    def test_responses_output_images_come_back_in_the_output(self, png: bytes) -> None:
        output = {
            "type": "function_call_output",
            "call_id": "call_1",
            "output": [
                {"type": "input_text", "text": "saved"},
                {
                    "type": "input_image",
                    "image_url": f"data:image/png;base64,{_b64(png)}",
                    "detail": "auto",
                },
            ],
        }
        source = [
            {"role": "user", "content": "Take a screenshot."},
            {"type": "function_call", "call_id": "call_1", "name": "shot", "arguments": "{}"},
            output,
        ]

        state, _ = load_responses_items(source)
        sent = to_responses(build(state))

        assert state.chunks[-1].metadata.call_id == "call_1"
        assert sent[2] == output

    def test_langchain_images_come_back_as_image_chunks(self, png: bytes) -> None:
        from memctx.importers import from_langchain

        state = MemoryState(
            [
                chunks.user("Compare with this.", id="u"),
                chunks.image(url="https://example.com/ref.png", id="ref"),
                chunks.tool_call("screenshot", {}, call_id="call_1", id="c"),
                chunks.tool_result("screenshot", "saved", call_id="call_1", id="r"),
                chunks.image(png, call_id="call_1", id="shot"),
            ]
        )

        imported, _ = from_langchain(build(state).to_langchain())

        images = [c for c in imported.chunks if c.action == "image"]
        assert [c.content.get("url") for c in images] == ["https://example.com/ref.png", None]
        assert base64.b64decode(images[1].content["data"]) == png
        assert [c.metadata.call_id for c in images] == [None, "call_1"]
        assert all(_b64(png)[:40] not in c.text for c in imported.chunks if c.action != "image")
