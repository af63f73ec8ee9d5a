"""What each library entry point refuses, and with which error.

One class per entry point: the chunk constructors, ``Chunk`` itself, state files,
rendering, build options, the OpenAI importer. The store's entry points are in
``tests/store/test_store_bad_inputs.py`` (both backends), the command line's in
``tests/store/test_store_cli_bad_files.py``.

The limits (``memctx._validators``) are written out as numbers here on purpose: a
test states what a user may rely on, not what the code happens to define.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import attrs
import pytest

from memctx import (
    AdapterError,
    ArgumentError,
    BuildOptionError,
    BuildOptions,
    ChatError,
    Chunk,
    ChunkType,
    CompactionError,
    CompressionError,
    ContextBuilder,
    InvalidChunkError,
    MemctxError,
    MemoryState,
    StateFileAccessError,
    StateFileError,
    StateIndexError,
    TeamMessageError,
    TranscriptError,
    XmlError,
    chunks,
    create_builder,
    load_state,
    save_state,
)
from memctx.adapters import to_openai
from memctx.chat import parse_mentions
from memctx.compaction import CompactionPolicy, ExtractiveSummarizer, compact
from memctx.compress import TrimToolOutputs, compress
from memctx.importers import load_anthropic_messages, load_openai_transcript
from memctx.snapshot import format_chunk
from memctx.statefile import loads_state, parse_json
from memctx.team import Speaker, TeamConversation
from memctx.xml import parse_element, render_element

DEPTH_LIMIT = 100
"""Arrays and objects nest at most this deep in any JSON value memctx accepts."""

INT_DIGITS = 4300
"""An integer in a JSON value has at most this many digits."""

PRIORITY_MIN, PRIORITY_MAX = -(2**31), 2**31 - 1
"""A priority is a signed 32-bit integer, what PostgreSQL's ``integer`` holds."""

MEGABYTE_ID = "i" * 1_000_000


def nested(depth: int, leaf: Any = 1) -> Any:
    """``leaf`` inside ``depth`` arrays and objects (alternating)."""
    value = leaf
    for level in range(depth):
        value = [value] if level % 2 else {"k": value}
    return value


def nested_text(depth: int) -> str:
    """JSON text of ``depth`` nested arrays (built as text: no Python value that deep)."""
    return "[" * depth + "1" + "]" * depth


def state_text(**chunk: Any) -> str:
    """A one-chunk state file; ``chunk`` overrides the fields of a plain user message."""
    fields = {"id": "c1", "type": "AGENT", "role": "user", "content": "hi", **chunk}
    return json.dumps({"version": 1, "thread_id": "t1", "chunks": [fields]})


def one_line(error: BaseException) -> str:
    text = str(error)
    assert "\n" not in text
    assert len(text) < 300, text
    return text


class TestChunkConstructors:
    def test_content_nested_to_the_limit_is_kept(self) -> None:
        chunk = chunks.tool_call("t", nested(DEPTH_LIMIT))

        assert json.loads(chunk.text) == nested(DEPTH_LIMIT)

    @pytest.mark.parametrize("depth", [DEPTH_LIMIT + 1, 500, 5000])
    def test_content_nested_deeper_is_refused_for_the_whole_value(self, depth: int) -> None:
        with pytest.raises(InvalidChunkError, match="nest more than 100 deep") as caught:
            chunks.tool_call("t", nested(depth))

        assert caught.value.field == "content"
        one_line(caught.value)

    @pytest.mark.parametrize("depth", [DEPTH_LIMIT + 1, 2000])
    def test_custom_metadata_nested_deeper_is_refused(self, depth: int) -> None:
        with pytest.raises(InvalidChunkError, match="nest more than 100 deep") as caught:
            chunks.user("hi", custom={"deep": nested(depth)})

        assert caught.value.field == "metadata.custom"

    def test_frozen_content_of_another_chunk_counts_its_own_depth(self) -> None:
        inner = chunks.tool_call("t", nested(DEPTH_LIMIT - 1)).content

        chunks.tool_call("t", [inner])
        with pytest.raises(InvalidChunkError, match="nest more than 100 deep"):
            chunks.tool_call("t", [[inner]])

    def test_an_int_of_4300_digits_is_kept_exactly(self) -> None:
        big = int("9" * INT_DIGITS)

        assert chunks.tool_result("t", {"n": big}).content["n"] == big

    @pytest.mark.parametrize("digits", [INT_DIGITS + 1, 100_000])
    def test_an_int_of_more_digits_is_refused(self, digits: int) -> None:
        with pytest.raises(InvalidChunkError, match="more than 4300 digits") as caught:
            chunks.tool_result("t", {"n": 10 ** (digits - 1)})

        assert caught.value.field == "content.n"

    @pytest.mark.parametrize("priority", [PRIORITY_MIN, 0, PRIORITY_MAX])
    def test_a_32_bit_priority_is_accepted(self, priority: int) -> None:
        assert chunks.user("x", priority=priority).priority == priority

    @pytest.mark.parametrize(
        "priority",
        [PRIORITY_MIN - 1, PRIORITY_MAX + 1, 2**63, -(2**63) - 1, 10**5000],
        ids=["min-1", "max+1", "2**63", "-2**63-1", "10**5000"],
    )
    def test_a_priority_outside_32_bits_is_refused(self, priority: int) -> None:
        with pytest.raises(InvalidChunkError, match="from -2147483648 to 2147483647") as caught:
            chunks.user("x", priority=priority)

        assert caught.value.field == "priority"
        one_line(caught.value)

    def test_an_id_of_256_characters_is_accepted(self) -> None:
        assert chunks.user("x", id="é" * 256).id == "é" * 256

    @pytest.mark.parametrize("chunk_id", ["i" * 257, MEGABYTE_ID], ids=["257", "1MB"])
    def test_a_longer_id_is_refused_without_printing_it(self, chunk_id: str) -> None:
        with pytest.raises(InvalidChunkError, match="at most 256 characters") as caught:
            chunks.user("x", id=chunk_id)

        assert caught.value.field == "id"
        one_line(caught.value)

    @pytest.mark.parametrize("chunk_id", ["", "   ", 7])
    def test_an_empty_or_non_string_id_is_refused(self, chunk_id: object) -> None:
        with pytest.raises(InvalidChunkError, match=r"^id: "):
            chunks.user("x", id=chunk_id)  # type: ignore[arg-type]

    def test_a_custom_kind_of_more_than_255_characters_is_refused(self) -> None:
        chunks.custom("k" * 255, "x")
        with pytest.raises(InvalidChunkError, match=r"^kind: must have at most 255"):
            chunks.custom("k" * 256, "x")

    @pytest.mark.parametrize(
        ("make", "field", "message"),
        [
            (lambda: chunks.user(5), "text", "must be a string, got int"),
            (lambda: chunks.tool_call("", {}), "tool", "must not be empty"),
            (lambda: chunks.tool_result("t", "x", success=1), "success", "must be a bool"),
            (lambda: chunks.progress_summary("s", original_count=-1), "metadata.original_count",
             "must be a non-negative int"),
            (lambda: chunks.tool_call("t", {}, call_id=""), "metadata.call_id",
             "must not be empty"),
        ],
    )  # fmt: skip
    def test_wrong_types_name_their_field(self, make: Any, field: str, message: str) -> None:
        with pytest.raises(InvalidChunkError, match=message) as caught:
            make()

        assert caught.value.field == field


class TestChunk:
    """``Chunk(...)`` and ``attrs.evolve`` check the same limits as the constructors."""

    def test_evolve_to_a_deeper_content_is_refused(self) -> None:
        chunk = chunks.tool_call("t", nested(DEPTH_LIMIT))

        with pytest.raises(InvalidChunkError, match="nest more than 100 deep"):
            attrs.evolve(chunk, content=[chunk.content])

    @pytest.mark.parametrize(
        ("field", "value"),
        [
            ("priority", 2**31),
            ("id", MEGABYTE_ID),
            ("action", "a" * 256),
            ("subtype", "s" * 256),
            ("content", 10**4300),
            ("content", nested(DEPTH_LIMIT + 1)),
        ],
        ids=["priority", "id", "action", "subtype", "content-int", "content-depth"],
    )
    def test_a_value_beyond_a_limit_is_refused(self, field: str, value: object) -> None:
        fields: dict[str, Any] = {"type": ChunkType.CUSTOM, "content": "x", field: value}

        with pytest.raises(InvalidChunkError) as caught:
            Chunk(**fields)

        assert caught.value.field == field
        one_line(caught.value)


class TestStateFiles:
    """``load_state``/``loads_state``/``parse_json``: every bad document is a ``StateFileError``."""

    @pytest.mark.parametrize("depth", [DEPTH_LIMIT + 1, 800, 100_000])
    def test_deeply_nested_content_is_a_state_file_error(self, depth: int) -> None:
        text = state_text(content="@").replace('"@"', nested_text(depth))

        with pytest.raises(StateFileError, match="nest more than 100 deep") as caught:
            loads_state(text)

        one_line(caught.value)

    def test_a_whole_document_nested_too_deep_to_parse_is_a_state_file_error(self) -> None:
        with pytest.raises(StateFileError, match="nest more than 100 deep"):
            parse_json(nested_text(100_000))

    def test_an_int_too_long_to_read_is_a_state_file_error(self, tmp_path: Path) -> None:
        path = tmp_path / "state.json"
        path.write_text(state_text(content="@").replace('"@"', "9" * (INT_DIGITS + 1)))

        with pytest.raises(StateFileError, match="more than 4300 digits"):
            load_state(path)

    def test_an_int_of_4300_digits_saves_and_loads_exactly(self, tmp_path: Path) -> None:
        state = MemoryState([chunks.tool_result("t", int("7" * INT_DIGITS), id="r")])

        save_state(state, tmp_path / "s.json")

        assert load_state(tmp_path / "s.json") == state

    @pytest.mark.parametrize(
        ("fields", "field", "message"),
        [
            ({"priority": 2**31}, "priority", "from -2147483648 to 2147483647"),
            ({"priority": 2**63}, "priority", "from -2147483648 to 2147483647"),
            ({"id": MEGABYTE_ID}, "id", "at most 256 characters"),
            ({"subtype": "s" * 256}, "subtype", "at most 255 characters"),
        ],
        ids=["priority-2**31", "priority-2**63", "id-1MB", "subtype-256"],
    )
    def test_a_chunk_beyond_a_limit_is_a_located_state_file_error(
        self, fields: dict[str, Any], field: str, message: str
    ) -> None:
        with pytest.raises(StateFileError, match=message) as caught:
            loads_state(state_text(**fields))

        assert (caught.value.index, caught.value.field) == (0, field)
        one_line(caught.value)

    def test_bytes_that_are_not_utf8_are_a_state_file_error(self) -> None:
        with pytest.raises(StateFileError, match="not valid UTF-8"):
            loads_state(b'{"version": 1, "chunks": [], "thread_id": "\xff"}')

    @pytest.mark.parametrize("thread_id", ["", 5, ["t"]])
    def test_a_bad_thread_id_is_a_state_file_error(self, thread_id: object) -> None:
        text = json.dumps({"version": 1, "thread_id": thread_id, "chunks": []})

        with pytest.raises(StateFileError, match=r"^thread_id: "):
            loads_state(text)


class TestRendering:
    """Whatever a chunk accepts renders; nothing a chunk refuses can reach a renderer."""

    def test_content_at_the_depth_limit_renders_and_parses_back(self) -> None:
        chunk = chunks.tool_call("t", nested(DEPTH_LIMIT), id="c")

        role, xml = create_builder().render(chunk)

        assert role == "assistant"
        assert json.dumps(nested(DEPTH_LIMIT), ensure_ascii=False) in xml

    def test_a_4300_digit_int_renders_and_builds(self) -> None:
        state = MemoryState([chunks.tool_result("t", {"n": int("9" * INT_DIGITS)}, id="r")])

        result = create_builder().build(state)

        assert "9" * INT_DIGITS in result.messages[-1].content

    def test_a_snapshot_file_of_a_chunk_at_the_limits_is_written(self) -> None:
        chunk = chunks.tool_call("t", nested(DEPTH_LIMIT), id="i" * 256, priority=PRIORITY_MAX)

        assert format_chunk(chunk).startswith("<!-- role: assistant -->\n<tool_call ")


class TestBuildOptions:
    @pytest.mark.parametrize("forbidden", ["\x00", "\ud800", "\x1b", "\ufffe"])
    def test_characters_xml_forbids_in_the_system_prompt_become_replacement_characters(
        self, forbidden: str
    ) -> None:
        state = MemoryState([chunks.user("hi", id="u")])

        result = create_builder().build(state, system_prompt=f"Be{forbidden}brief.")

        system = result.messages[0]
        assert (system.role, system.content) == ("system", "Be\ufffdbrief.\n")
        for message in result.to_openai():
            message["content"].encode("utf-8")

    def test_the_options_hold_the_cleaned_prompt(self) -> None:
        assert BuildOptions(system_prompt="a\x00b").system_prompt == "a\ufffdb"

    def test_a_system_prompt_that_is_not_text_is_refused(self) -> None:
        with pytest.raises(BuildOptionError, match="system_prompt"):
            BuildOptions(system_prompt=b"bytes")  # type: ignore[arg-type]

    @pytest.mark.parametrize("tokenizer", ["gpt-4o", 42, object()])
    def test_a_builder_made_with_something_that_is_not_a_tokenizer_is_refused_at_once(
        self, tokenizer: object
    ) -> None:
        with pytest.raises(BuildOptionError, match=r"tokenizer: .*create_tokenizer\(model\)"):
            create_builder(tokenizer)  # type: ignore[arg-type]
        with pytest.raises(BuildOptionError, match="tokenizer"):
            ContextBuilder(tokenizer)  # type: ignore[arg-type]


class TestStatesAndStateFiles:
    @pytest.mark.parametrize("given", [None, 5, "chunks", chunks.user("one")])
    def test_a_state_of_something_that_is_not_chunks_is_refused(self, given: object) -> None:
        with pytest.raises(InvalidChunkError, match="chunks: must be Chunks"):
            MemoryState(given)  # type: ignore[arg-type]

    @pytest.mark.parametrize("given", [None, 5, ["{}"]])
    def test_loading_something_that_is_not_json_text_is_a_state_file_error(
        self, given: object
    ) -> None:
        with pytest.raises(StateFileError, match="expected JSON text"):
            loads_state(given)  # type: ignore[arg-type]

    def test_saving_something_that_is_not_a_state_writes_nothing(self, tmp_path: Path) -> None:
        with pytest.raises(StateFileError, match="expected a MemoryState"):
            save_state([chunks.user("x")], tmp_path / "s.json")  # type: ignore[arg-type]
        assert list(tmp_path.iterdir()) == []


class TestOpenAIImporter:
    def test_a_content_part_nested_too_deep_is_a_transcript_error(self) -> None:
        message = {"role": "user", "content": [{"type": "image", "data": nested(2000)}]}

        with pytest.raises(TranscriptError, match="nest more than 100 deep") as caught:
            load_openai_transcript([message])

        assert caught.value.index == 0

    def test_arguments_beyond_the_limits_are_kept_as_the_text_they_are(self) -> None:
        too_deep, too_long = nested_text(5000), "9" * (INT_DIGITS + 1)
        calls = [
            {"id": f"call{n}", "function": {"name": "f", "arguments": text}}
            for n, text in enumerate([too_deep, too_long])
        ]

        state, _ = load_openai_transcript([{"role": "assistant", "tool_calls": calls}])

        assert [chunk.content for chunk in state] == [too_deep, too_long]

    @pytest.mark.parametrize("name", [5, ["f"], nested(3000)], ids=["int", "list", "deep"])
    def test_a_name_that_is_not_text_is_a_transcript_error(self, name: object) -> None:
        with pytest.raises(TranscriptError, match="'name' must be a string") as caught:
            load_openai_transcript([{"role": "function", "name": name, "content": "x"}])

        one_line(caught.value)

    def test_a_text_part_that_is_not_text_is_a_transcript_error(self) -> None:
        message = {"role": "user", "content": [{"type": "text", "text": nested(3000)}]}

        with pytest.raises(TranscriptError, match=r"content\[0\]\.text must be a string"):
            load_openai_transcript([message])


def _two_turns() -> MemoryState:
    return MemoryState(
        [
            chunks.user("one " * 50, id="u1"),
            chunks.assistant("two " * 50, id="a1"),
            chunks.user("three", id="u2"),
        ]
    )


def _result() -> Any:
    return create_builder().build(_two_turns(), max_tokens=1000)


BAD_CALLS: dict[str, tuple[Any, type[MemctxError], str]] = {
    # finding 7: errors that used to leave the MemctxError tree
    "anthropic block with a 4301-digit int": (
        lambda: load_anthropic_messages(
            [{"role": "user", "content": [{"type": "image", "n": 10**4400}]}]
        ),
        TranscriptError,
        "more than 4300 digits",
    ),
    "team snapshot nested too deep to parse": (
        lambda: TeamConversation().import_snapshot("[" * 100_000 + "]" * 100_000),
        StateFileError,
        "nest more than 100 deep",
    ),
    "load_state of an int": (lambda: load_state(5), ArgumentError, "path"),
    "state indexed by a string": (lambda: _two_turns()["u1"], ArgumentError, "state.get"),
    "state indexed out of range": (lambda: _two_turns()[9], StateIndexError, "out of range"),
    "state.get of a list": (lambda: _two_turns().get([]), ArgumentError, "chunk_id"),
    "compact(now='x')": (
        lambda: compact(_two_turns(), ExtractiveSummarizer(), keep_recent_tokens=0, now="x"),
        CompactionError,
        "timezone-aware datetime",
    ),
    "policy.apply(now='x') with nothing due": (
        lambda: CompactionPolicy(trigger=10**6, keep_recent=1).apply(
            _two_turns(), ExtractiveSummarizer(), now="x"
        ),
        CompactionError,
        "timezone-aware datetime",
    ),
    "add_message(addressees=5)": (
        lambda: TeamConversation().add_message("hi", speaker=Speaker("u"), addressees=5),
        TeamMessageError,
        "sequence of names",
    ),
    "render_element('bad tag')": (lambda: render_element("bad tag", [], "x"), XmlError, "bad tag"),
    "parse_element('<a>')": (lambda: parse_element("<a>"), XmlError, "well-formed"),
    "parse_element(5)": (lambda: parse_element(5), XmlError, "got int"),
    "importer on_progress=5": (
        lambda: load_openai_transcript([], on_progress=5),
        ArgumentError,
        "on_progress",
    ),
    # finding 8: values that used to be accepted silently
    "unknown_roles='foo'": (
        lambda: load_openai_transcript([], unknown_roles="foo"),
        ArgumentError,
        "'keep' or 'error'",
    ),
    "openai pin_task='yes'": (
        lambda: load_openai_transcript([], pin_task="yes"),
        ArgumentError,
        "pin_task",
    ),
    "anthropic pin_task=1": (
        lambda: load_anthropic_messages([], pin_task=1),
        ArgumentError,
        "pin_task",
    ),
    "Speaker('')": (lambda: Speaker(""), TeamMessageError, "roleId is required"),
    "a team hook that is not a function": (
        lambda: TeamConversation(on_message_added="print"),
        TeamMessageError,
        "on_message_added",
    ),
    "TrimToolOutputs(tools=5)": (
        lambda: TrimToolOutputs(tools=5),
        CompressionError,
        "list of names",
    ),
    "parse_mentions with agents of the wrong type": (
        lambda: parse_mentions("hi @a", 5),
        ChatError,
        "list of ChatAgent",
    ),
    "compress(compressors=5)": (lambda: compress(_two_turns(), 5), CompressionError, "list"),
    "tools='both' in an adapter": (
        lambda: to_openai(_result(), tools="both"),
        AdapterError,
        "tools",
    ),
}


class TestEveryEntryPoint:
    """Each refusal is the entry point's documented MemctxError, in one short line."""

    @pytest.mark.parametrize("case", sorted(BAD_CALLS))
    def test_a_bad_call_is_refused_with_its_documented_error(self, case: str) -> None:
        call, error, message = BAD_CALLS[case]

        with pytest.raises(error, match=re.escape(message)) as caught:
            call()

        assert isinstance(caught.value, MemctxError)
        one_line(caught.value)

    def test_an_argument_error_is_a_type_error_and_a_value_error(self) -> None:
        with pytest.raises(TypeError):
            _two_turns()["u1"]
        with pytest.raises(ValueError, match="unknown_roles"):
            load_openai_transcript([], unknown_roles="foo")

    def test_a_file_that_cannot_be_written_is_a_state_file_error_and_an_os_error(
        self, tmp_path: Path
    ) -> None:
        with pytest.raises(StateFileAccessError) as caught:
            save_state(_two_turns(), tmp_path / "missing" / "state.json")

        assert isinstance(caught.value, OSError)
        assert isinstance(caught.value, StateFileError)
        assert list(tmp_path.iterdir()) == []


class TestStateFileEncodings:
    """A state file is UTF-8: anything else is refused, never decoded by guesswork."""

    @pytest.mark.parametrize(
        ("raw", "message"),
        [
            (
                '{"version": 1, "chunks": [], "thread_id": "\xed\xa0\x80"}'.encode("latin-1"),
                "UTF-8",
            ),
            (json.dumps({"version": 1, "chunks": []}).encode("utf-32"), "UTF-32"),
            (json.dumps({"version": 1, "chunks": []}).encode("utf-16"), "UTF-16"),
            (json.dumps({"version": 1, "chunks": []}).encode("utf-32-le"), "UTF-32"),
        ],
        ids=["encoded surrogate", "utf-32 with bom", "utf-16", "utf-32 without bom"],
    )
    def test_bytes_that_are_not_strict_utf8_are_refused(self, raw: bytes, message: str) -> None:
        with pytest.raises(StateFileError, match=message):
            loads_state(raw)

    def test_a_utf8_byte_order_mark_is_skipped(self) -> None:
        raw = b"\xef\xbb\xbf" + json.dumps({"version": 1, "chunks": []}).encode()

        assert loads_state(raw) == MemoryState([])
