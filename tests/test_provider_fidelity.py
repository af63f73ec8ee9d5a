"""Provider fidelity: reasoning with its signatures, images and documents, native requests by
default, the Responses API, and what each of them costs in a build."""

from __future__ import annotations

import base64
import builtins
import contextlib
import json
import sys
from pathlib import Path
from typing import Any

import attrs
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from media import EXPECTED_1000_PX, make_png
from memctx import (
    BuildOptionError,
    Chunk,
    ChunkType,
    EmptyContextError,
    InvalidChunkError,
    MemoryState,
    MissingExtraError,
    StateFileError,
    chunks,
    create_builder,
    create_tokenizer,
)
from memctx.adapters import to_anthropic, to_gemini, to_openai, to_responses
from memctx.importers import (
    load_anthropic_messages,
    load_openai_transcript,
    load_responses_items,
)
from memctx.statefile import dumps_state, loads_state
from memctx.store import MemoryStore
from strategies import examples

GPT4O = create_tokenizer("gpt-4o")


def build(*items: Chunk, **options: Any) -> Any:
    return create_builder(GPT4O).build(MemoryState(list(items)), **options)


def texts_of(request: Any) -> list[str]:
    """Every text a request holds as message text (not as a data field)."""
    found: list[str] = []

    def walk(value: Any, key: str | None) -> None:
        if isinstance(value, dict):
            for k, v in value.items():
                walk(v, k)
        elif isinstance(value, list):
            for v in value:
                walk(v, key)
        elif isinstance(value, str) and key in ("content", "text", "system", "output"):
            found.append(value)

    walk(request, None)
    return found


class TestImageChunks:
    def test_an_image_holds_base64_and_its_measured_size(self, png: bytes) -> None:
        image = chunks.image(png, id="img")

        assert image.type is ChunkType.AGENT
        assert (image.role, image.action) == ("user", "image")
        assert base64.b64decode(image.content["data"]) == png
        meta = image.metadata
        assert (meta.media_type, meta.width, meta.height, meta.byte_size) == (
            "image/png",
            1000,
            1000,
            len(png),
        )

    def test_an_image_is_a_short_placeholder_in_the_xml(self, png: bytes) -> None:
        _, xml = create_builder().render(chunks.image(png, id="img", detail="low"))

        assert xml == (
            f'<image id="img" role="user" action="image" media_type="image/png" width="1000" '
            f'height="1000" bytes="{len(png)}" detail="low">\n\n</image>'
        )

    def test_an_image_by_url_guesses_its_media_type(self) -> None:
        image = chunks.image(url="https://example.com/a/cat.JPG?x=1", width=800, height=600)

        assert image.content == {"url": "https://example.com/a/cat.JPG?x=1"}
        assert (image.metadata.media_type, image.metadata.width) == ("image/jpeg", 800)

    @pytest.mark.parametrize(
        ("arguments", "field"),
        [
            ({"data": b"GIF89a but not really"}, "data"),
            ({"data": b"%PDF-1.4 a document"}, "data"),
            ({"url": "not a url"}, "url"),
            ({"url": "ftp://example.com/a.png"}, "url"),
            ({"url": "https://example.com/a.bmp"}, "media_type"),
            ({"url": "https://example.com/a"}, "media_type"),
            ({"url": "https://example.com/a.png", "media_type": "image/svg+xml"}, "media_type"),
            ({"url": "https://example.com/a.png", "detail": "ultra"}, "detail"),
            ({"url": "https://example.com/a.png", "width": 10}, "width"),
            ({}, "data"),
        ],
    )
    def test_bad_input_is_one_invalid_chunk_error(
        self, arguments: dict[str, Any], field: str
    ) -> None:
        with pytest.raises(InvalidChunkError) as caught:
            chunks.image(**arguments)

        assert caught.value.field == field

    def test_data_of_another_type_than_said_is_refused(self, png: bytes) -> None:
        with pytest.raises(InvalidChunkError, match="is 'image/jpeg' but the data is 'image/png'"):
            chunks.image(png, media_type="image/jpeg")

    def test_without_pillow_the_error_names_the_extra(
        self, png: bytes, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        real_import = builtins.__import__

        def no_pil(name: str, *args: Any, **kwargs: Any) -> Any:
            if name.startswith("PIL"):
                raise ImportError(name)
            return real_import(name, *args, **kwargs)

        monkeypatch.setattr(builtins, "__import__", no_pil)
        monkeypatch.delitem(sys.modules, "PIL.Image", raising=False)

        with pytest.raises(MissingExtraError, match=r"pip install 'memctx\[images\]'") as caught:
            chunks.image(png)
        assert caught.value.extra == "images"
        chunks.image(url="https://example.com/a.png")  # a URL needs no Pillow


class TestDocumentChunks:
    def test_a_pdf_holds_its_data_and_its_page_count(self, pdf: bytes) -> None:
        document = chunks.document(pdf, title="spec.pdf", id="doc")

        assert base64.b64decode(document.content["data"]) == pdf
        assert (document.metadata.pages, document.metadata.title) == (2, "spec.pdf")

    @pytest.mark.parametrize(
        ("arguments", "field"),
        [
            ({"data": b"plain text"}, "data"),
            ({"data": b"%PDF-1.4", "media_type": "text/html"}, "media_type"),
            ({"url": "https://example.com/doc.pdf", "media_type": "application/zip"}, "media_type"),
            ({"url": "example.com/doc.pdf"}, "url"),
        ],
    )
    def test_bad_input_is_one_invalid_chunk_error(
        self, arguments: dict[str, Any], field: str
    ) -> None:
        with pytest.raises(InvalidChunkError) as caught:
            chunks.document(**arguments)

        assert caught.value.field == field


class TestReasoningChunks:
    def test_thinking_keeps_its_signature_out_of_the_xml(self) -> None:
        thought = chunks.thinking("Check the tests first.", "EqQBCkYIARgCKkA=", id="t")

        _, xml = create_builder().render(thought)

        assert thought.metadata.signature == "EqQBCkYIARgCKkA="
        assert "EqQB" not in xml
        assert "Check the tests first." in xml

    def test_redacted_thinking_shows_no_data(self) -> None:
        _, xml = create_builder().render(chunks.redacted_thinking("opaque-data", id="r"))

        assert (
            xml == '<redacted_thinking id="r" subtype="REDACTED_THINKING">\n\n</redacted_thinking>'
        )

    @pytest.mark.parametrize("field", ["signature", "reasoning_id"])
    def test_a_signature_on_a_chunk_that_is_not_thinking_is_refused(self, field: str) -> None:
        user = chunks.user("hi")

        with pytest.raises(InvalidChunkError, match=f"metadata.{field}: only a thinking chunk"):
            attrs.evolve(user, metadata=attrs.evolve(user.metadata, **{field: "x"}))

    def test_a_state_file_with_a_signed_user_message_is_refused(self) -> None:
        text = dumps_state(MemoryState([chunks.user("hi", id="u")]))
        broken = text.replace('"metadata": {}', '"metadata": {"signature": "forged"}')

        with pytest.raises(StateFileError, match=r"metadata\.signature: only a thinking"):
            loads_state(broken)


def _media_history(png: bytes, pdf: bytes) -> MemoryState:
    return MemoryState(
        [
            chunks.user("What do these show?", id="u"),
            chunks.image(png, id="img"),
            chunks.document(pdf, title="spec.pdf", id="doc"),
            chunks.image(url="https://example.com/cat.png", detail="low", id="url-img"),
            chunks.thinking("Look at the picture.", "SIG-1", id="t1"),
            chunks.redacted_thinking("REDACTED-1", id="r1"),
            chunks.tool_call("describe", {"what": "img"}, call_id="call_1", id="c1"),
            chunks.tool_result("describe", "a red square", call_id="call_1", id="o1"),
            chunks.thinking("Summarise.", "ENC-1", reasoning_id="rs_1", id="t2"),
            chunks.assistant("A red square and a two-page spec.", id="a"),
            chunks.user("Thanks.", id="u2"),
        ]
    )


class TestRoundTripsThroughStorage:
    def test_a_state_file_keeps_media_and_signatures(self, png: bytes, pdf: bytes) -> None:
        state = _media_history(png, pdf)

        again = loads_state(dumps_state(state))

        assert list(again) == list(state)

    def test_the_store_and_its_snapshots_keep_media_and_signatures(
        self, png: bytes, pdf: bytes, tmp_path: Path
    ) -> None:
        state = _media_history(png, pdf)
        store = MemoryStore.open(f"sqlite:///{tmp_path / 'media.db'}")
        store.create_thread("t1")
        store.append("t1", *state)

        stored = store.get_current_state("t1")
        store.import_snapshot(store.export_snapshot("t1"), thread_id="t2")
        copied = store.get_current_state("t2")

        assert list(stored) == list(state)
        assert list(copied) == list(state)


class TestMediaCosts:
    @pytest.mark.parametrize("provider", ["openai", "anthropic", "gemini"])
    def test_a_1000_px_png_costs_its_providers_formula(self, png: bytes, provider: str) -> None:
        user = chunks.user("look", id="u")
        image = chunks.image(png, id="img")

        with_image = build(user, image, provider=provider)
        placeholder = GPT4O.count(create_builder().render(image)[1] + "\n")

        assert with_image.chunk_tokens["img"] == EXPECTED_1000_PX[provider] + placeholder
        assert with_image.chunk_tokens["img"] < 1_500  # not the ~7,000 tokens of its base64

    def test_a_build_without_provider_prices_an_image_as_openai(self, png: bytes) -> None:
        result = build(chunks.user("look", id="u"), chunks.image(png, id="img"))

        assert result.tools_counted == "text"
        assert result.token_count == GPT4O.count_messages(result.messages) + 765
        assert result.token_count_exact

    @pytest.mark.parametrize(
        ("size", "detail", "expected"),
        [
            ((1000, 1000), None, 765),
            ((1000, 1000), "low", 85),
            ((2048, 4096), "high", 1105),  # OpenAI's own worked example
            ((512, 512), None, 255),
            ((4096, 8192), None, 1105),
        ],
    )
    def test_openai_tiles(self, size: tuple[int, int], detail: str | None, expected: int) -> None:
        from memctx._render.media import openai_image_tokens

        assert openai_image_tokens(*size, detail) == expected

    @pytest.mark.parametrize(
        ("size", "expected"),
        [((1000, 1000), 1334), ((200, 200), 54), ((3000, 3000), 1590), ((1568, 500), 1046)],
    )
    def test_anthropic_area(self, size: tuple[int, int], expected: int) -> None:
        from memctx._render.media import anthropic_image_tokens

        assert anthropic_image_tokens(*size) == expected

    @pytest.mark.parametrize(
        ("size", "expected"), [((384, 384), 258), ((1000, 1000), 1032), ((800, 300), 516)]
    )
    def test_gemini_tiles(self, size: tuple[int, int], expected: int) -> None:
        from memctx._render.media import gemini_image_tokens

        assert gemini_image_tokens(*size) == expected

    def test_an_image_that_does_not_fit_is_left_out_whole(self, png: bytes) -> None:
        result = build(chunks.image(png, id="img"), chunks.user("hi", id="u"), max_tokens=300)

        assert result.excluded_for("over_budget") == ("img",)
        assert result.token_count <= 300

    def test_documents_make_the_count_inexact(self, pdf: bytes) -> None:
        result = build(chunks.user("read", id="u"), chunks.document(pdf, id="doc"))

        assert result.chunk_tokens["doc"] > 2 * 1_500
        assert not result.token_count_exact


class TestNativeCounts:
    def test_an_openai_build_counts_the_native_request(self) -> None:
        result = build(
            chunks.user("go", id="u"),
            chunks.tool_call("sh", {"cmd": "ls"}, call_id="c1", id="c"),
            chunks.tool_result("sh", "a b", call_id="c1", id="r"),
            provider="openai",
        )
        text = build(*result.included_chunks, provider="openai", tools="text")

        assert (result.tools_counted, text.tools_counted) == ("native", "text")
        assert not result.token_count_exact  # OpenAI publishes no layout of tool calls
        assert text.token_count_exact
        assert text.token_count == GPT4O.count_messages(text.to_openai(tools="text"))
        assert result.token_count < text.token_count  # no XML around the call and result

    def test_the_calls_of_an_assistant_turn_with_text_are_counted(self) -> None:
        arguments = {"cmd": "cat " + "src/module.py " * 40}
        result = build(
            chunks.user("go", id="u"),
            chunks.assistant("Reading the files first.", id="a"),
            chunks.tool_call("sh", arguments, call_id="c1", id="c"),
            chunks.tool_result("sh", "a b", call_id="c1", id="r"),
            provider="openai",
        )
        sent = result.to_openai()

        without = build(
            chunks.user("go", id="u"),
            chunks.assistant("Reading the files first.", id="a"),
            provider="openai",
        )
        call = sent[1]["tool_calls"][0]["function"]

        assert isinstance(sent[1]["content"], str)
        assert sent[1]["tool_calls"]
        # The call's name and arguments are in the count, with the tool message after it.
        assert result.token_count >= without.token_count + GPT4O.count(
            call["name"] + call["arguments"]
        ) + GPT4O.count("a b")

    def test_a_native_request_without_calls_is_counted_exactly(self, png: bytes) -> None:
        result = build(chunks.user("look", id="u"), chunks.image(png, id="i"), provider="openai")
        sent = result.to_openai()

        assert result.token_count_exact
        text = GPT4O.count_messages([{"role": "user", "content": sent[0]["content"][0]["text"]}])
        assert result.token_count == text + 765

    def test_a_native_count_over_the_budget_drops_the_oldest(self) -> None:
        items = [chunks.user("task", id="u", pinned=True)]
        for n in range(30):
            items.append(chunks.tool_call("sh", {"cmd": f"ls {n}"}, call_id=f"c{n}", id=f"c{n}"))
            items.append(chunks.tool_result("sh", "out " * 20, call_id=f"c{n}", id=f"r{n}"))

        result = build(*items, provider="openai", max_tokens=400)

        assert result.token_count <= 400
        assert result.excluded_for("over_budget")

    @pytest.mark.parametrize("provider", ["anthropic", "gemini", None])
    def test_native_is_counted_only_for_openai(self, provider: str | None) -> None:
        with pytest.raises(BuildOptionError, match="'native' is counted only"):
            build(chunks.user("hi"), provider=provider, tools="native")

    def test_a_call_without_arguments_is_sent_with_an_empty_object(self) -> None:
        result = build(
            chunks.user("go", id="u"),
            chunks.tool_call("now", None, call_id="c1", id="c"),
            chunks.tool_result("now", "12:00", call_id="c1", id="r"),
        )

        assert result.to_openai()[1]["tool_calls"][0]["function"]["arguments"] == "{}"
        assert to_anthropic(result)["messages"][1]["content"][0]["input"] == {}
        assert to_gemini(result)["contents"][1]["parts"][0]["function_call"]["args"] == {}
        assert to_responses(result)[1]["arguments"] == "{}"


class TestWhatEachAdapterSends:
    def test_anthropic_gets_its_thinking_back_before_the_tool_use(
        self, png: bytes, pdf: bytes
    ) -> None:
        result = create_builder().build(_media_history(png, pdf))

        messages = to_anthropic(result)["messages"]

        assert [b["type"] for b in messages[0]["content"]] == [
            "text",
            "image",
            "document",
            "image",
        ]
        assert messages[0]["content"][3]["source"] == {
            "type": "url",
            "url": "https://example.com/cat.png",
        }
        assert messages[1]["content"] == [
            {"type": "thinking", "thinking": "Look at the picture.", "signature": "SIG-1"},
            {"type": "redacted_thinking", "data": "REDACTED-1"},
            {"type": "tool_use", "id": "call_1", "name": "describe", "input": {"what": "img"}},
        ]
        # Reasoning OpenAI signed is no Anthropic block: it goes as its text.
        assert isinstance(messages[3]["content"], str)
        assert "Summarise." in messages[3]["content"]

    def test_responses_gets_its_reasoning_items_back(self, png: bytes, pdf: bytes) -> None:
        result = create_builder().build(_media_history(png, pdf))

        items = to_responses(result)

        kinds = [item.get("type", item.get("role")) for item in items]
        assert kinds == [
            "user",
            "assistant",  # Anthropic's reasoning, as text
            "function_call",
            "function_call_output",
            "reasoning",
            "assistant",
            "user",
        ]
        assert items[4] == {
            "type": "reasoning",
            "id": "rs_1",
            "summary": [{"type": "summary_text", "text": "Summarise."}],
            "encrypted_content": "ENC-1",
        }
        assert [p["type"] for p in items[0]["content"]] == [
            "input_text",
            "input_image",
            "input_file",
            "input_image",
        ]

    def test_text_mode_sends_placeholders_and_no_block(self, png: bytes, pdf: bytes) -> None:
        result = create_builder().build(_media_history(png, pdf))

        for request in (
            to_openai(result, tools="text"),
            to_anthropic(result, tools="text"),
            to_gemini(result, tools="text"),
            to_responses(result, tools="text"),
        ):
            body = json.dumps(request)
            assert '<image id=\\"img\\"' in body
            assert base64.b64encode(png).decode()[:40] not in body
            assert "SIG-1" not in body


_KINDS = st.sampled_from(["user", "image", "url-image", "thinking", "call", "assistant"])


@st.composite
def media_states(draw: st.DrawFn) -> MemoryState:
    made: list[Chunk] = []
    for n, kind in enumerate(draw(st.lists(_KINDS, min_size=1, max_size=12))):
        if kind == "user":
            made.append(chunks.user(draw(st.text(max_size=30)), id=f"u{n}"))
        elif kind == "image":
            made.append(chunks.image(_SMALL_PNGS[n % len(_SMALL_PNGS)], id=f"i{n}"))
        elif kind == "url-image":
            made.append(chunks.image(url=f"https://example.com/{n}.png", id=f"w{n}"))
        elif kind == "thinking":
            made.append(chunks.thinking(draw(st.text(max_size=20)), f"sig{n}", id=f"t{n}"))
        elif kind == "call":
            made.append(chunks.tool_call("sh", {"n": n}, call_id=f"c{n}", id=f"c{n}"))
            made.append(chunks.tool_result("sh", "ok", call_id=f"c{n}", id=f"r{n}"))
        else:
            made.append(chunks.assistant(draw(st.text(max_size=30)), id=f"a{n}"))
    return MemoryState(made)


_SMALL_PNGS = [make_png(3, 5), make_png(64, 64), make_png(500, 20)]
_DATA = [base64.b64encode(p).decode() for p in _SMALL_PNGS]


class TestNoBase64InText:
    @settings(
        max_examples=examples(60), deadline=None, suppress_health_check=[HealthCheck.too_slow]
    )
    @given(state=media_states(), tools=st.sampled_from(["text", "native"]))
    def test_no_message_text_of_any_request_holds_image_data(
        self, state: MemoryState, tools: str
    ) -> None:
        result = create_builder().build(state)
        requests: list[Any] = [m.content for m in result.messages]
        for adapter in (to_openai, to_anthropic, to_gemini, to_responses):
            with contextlib.suppress(EmptyContextError):  # a state of only reasoning
                requests.append(adapter(result, tools=tools))

        for text in texts_of(requests) + [m.content for m in result.messages]:
            assert not any(data[:24] in text for data in _DATA)


def _b64(raw: bytes) -> str:
    return base64.b64encode(raw).decode()


class TestTranscriptRoundTrips:
    def test_anthropic_thinking_signatures_redactions_and_media_come_back(
        self, png: bytes, pdf: bytes
    ) -> None:
        source = {
            "messages": [
                {
                    "role": "user",
                    "content": [
                        {"type": "text", "text": "What is this?"},
                        {"type": "image", "source": _anthropic_source("image/png", png)},
                        {
                            "type": "document",
                            "source": _anthropic_source("application/pdf", pdf),
                            "title": "spec",
                        },
                    ],
                },
                {
                    "role": "assistant",
                    "content": [
                        {"type": "thinking", "thinking": "Hmm.", "signature": "SIG"},
                        {"type": "redacted_thinking", "data": "OPAQUE"},
                        {"type": "tool_use", "id": "toolu_1", "name": "sh", "input": {"a": 1}},
                    ],
                },
                {
                    "role": "user",
                    "content": [{"type": "tool_result", "tool_use_id": "toolu_1", "content": "x"}],
                },
            ]
        }
        state, report = load_anthropic_messages(source)

        sent = to_anthropic(create_builder().build(state))["messages"]

        assert report.unknown_blocks == ()
        assert sent[0]["content"][1:] == source["messages"][0]["content"][1:]
        assert sent[1]["content"] == source["messages"][1]["content"]
        assert sent[2]["content"] == source["messages"][2]["content"]

    def test_openai_chat_images_calls_and_null_arguments_come_back(self, png: bytes) -> None:
        image_url = f"data:image/png;base64,{_b64(png)}"
        source = [
            {
                "role": "user",
                "content": [
                    {"type": "text", "text": "Look."},
                    {"type": "image_url", "image_url": {"url": image_url, "detail": "high"}},
                ],
            },
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {
                        "id": "call_9",
                        "type": "function",
                        "function": {"name": "now", "arguments": "null"},
                    }
                ],
            },
            {"role": "tool", "tool_call_id": "call_9", "content": "12:00"},
        ]
        state, _ = load_openai_transcript(source)

        sent = to_openai(create_builder().build(state))

        assert sent[0]["content"][1] == source[0]["content"][1]
        assert sent[1]["tool_calls"][0]["id"] == "call_9"
        assert sent[1]["tool_calls"][0]["function"]["arguments"] == "{}"
        assert sent[2] == source[2]

    def test_responses_reasoning_items_calls_and_media_come_back(
        self, png: bytes, pdf: bytes
    ) -> None:
        source = [
            {
                "role": "user",
                "content": [
                    {"type": "input_text", "text": "Read these."},
                    {
                        "type": "input_image",
                        "image_url": f"data:image/png;base64,{_b64(png)}",
                        "detail": "auto",
                    },
                    {
                        "type": "input_file",
                        "file_data": f"data:application/pdf;base64,{_b64(pdf)}",
                        "filename": "spec.pdf",
                    },
                ],
            },
            {
                "type": "reasoning",
                "id": "rs_abc",
                "summary": [{"type": "summary_text", "text": "Plan the read."}],
                "encrypted_content": "gAAAA-ENCRYPTED",
            },
            {"type": "function_call", "call_id": "call_1", "name": "read", "arguments": "{}"},
            {"type": "function_call_output", "call_id": "call_1", "output": "done"},
        ]
        state, report = load_responses_items(source)

        sent = to_responses(create_builder().build(state))

        assert report.unanswered_calls == ()
        assert sent[0]["content"][1:] == source[0]["content"][1:]
        assert sent[1:] == source[1:]


def _anthropic_source(media_type: str, raw: bytes) -> dict[str, str]:
    return {"type": "base64", "media_type": media_type, "data": _b64(raw)}
