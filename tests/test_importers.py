"""Importing OpenAI chat transcripts, including three real agent runs."""

from __future__ import annotations

import itertools
import json
from pathlib import Path
from typing import Any

import pytest

from memctx import ChunkType, TranscriptError, create_builder, create_tokenizer
from memctx.importers import (
    from_langchain,
    import_openai_messages,
    load_anthropic_messages,
    load_openai_transcript,
)
from memctx.statefile import dumps_state, loads_state
from memctx.xml import parse_element

TRAJECTORIES = sorted((Path(__file__).parent.parent / "examples" / "trajectories").glob("*.json"))


def test_the_three_real_runs_are_bundled() -> None:
    assert len(TRAJECTORIES) == 3


@pytest.fixture(params=TRAJECTORIES, ids=lambda p: p.name.split(".")[0])
def trajectory(request: pytest.FixtureRequest) -> dict[str, Any]:
    data: dict[str, Any] = json.loads(Path(request.param).read_text(encoding="utf-8"))
    return data


class TestRealTrajectories:
    def test_every_message_becomes_chunks_and_nothing_is_dropped(
        self, trajectory: dict[str, Any]
    ) -> None:
        messages = trajectory["messages"]
        state, report = load_openai_transcript(trajectory)
        calls = sum(len(m.get("tool_calls") or []) for m in messages)
        tools = sum(m["role"] == "tool" for m in messages)
        assert len(state.of_type(ChunkType.WORKFLOW)) == calls
        assert len(state.of_type(ChunkType.ENVIRONMENT)) == tools
        # The final non-OpenAI "exit" message is kept and reported, not dropped.
        assert report.unknown_roles == ((len(messages) - 1, "exit"),)
        assert state[-1].type is ChunkType.CUSTOM
        assert state[-1].subtype == "openai_exit"
        # The submit call gets no reply in these runs: it is imported as pending.
        assert len(report.unanswered_calls) == 1
        (pending,) = [c for c in state if c.metadata.status == "pending"]
        assert pending.metadata.call_id == report.unanswered_calls[0]
        assert {c.metadata.status for c in state.of_type(ChunkType.WORKFLOW)} == {
            "completed",
            "pending",
        }

    def test_the_task_is_pinned_so_budgeted_builds_open_on_it(
        self, trajectory: dict[str, Any]
    ) -> None:
        state, _ = load_openai_transcript(trajectory)
        task = next(c for c in state if c.role == "user")

        assert task.pinned
        for budget in (2_000, 8_000):
            result = create_builder().build(
                state, max_tokens=budget, tokenizer=create_tokenizer("gpt-4o")
            )
            assert [m.role for m in result.messages][:2] == ["system", "user"]
            assert result.messages[1].chunk_ids[0] == task.id

    def test_import_round_trips_through_the_state_format(self, trajectory: dict[str, Any]) -> None:
        state, _ = load_openai_transcript(trajectory)
        assert loads_state(dumps_state(state)) == state

    @pytest.mark.parametrize("budget", [2_000, 8_000, 32_000])
    @pytest.mark.parametrize("model", ["gpt-4o", "gpt-4"])
    def test_builds_valid_messages_within_the_budget(
        self, trajectory: dict[str, Any], budget: int, model: str
    ) -> None:
        state, _ = load_openai_transcript(trajectory)
        tokenizer = create_tokenizer(model)
        result = create_builder().build(state, max_tokens=budget, tokenizer=tokenizer)
        assert result.token_count == tokenizer.count_messages(result.messages)
        assert result.token_count <= budget
        roles = [m.role for m in result.messages]
        assert roles[0] == "system"
        assert all(a != b for a, b in itertools.pairwise(roles))
        included = set(result.included_chunk_ids)
        for chunk in state.of_type(ChunkType.ENVIRONMENT):
            if chunk.id in included:
                call = next(c for c in state if c.metadata.call_id == chunk.metadata.call_id)
                assert call.id in included
        for message in result.to_openai(tools="text"):
            assert set(message) == {"role", "content"}
            assert message["role"] in ("system", "user", "assistant")


class TestTranscriptShapes:
    def test_tool_call_arguments_are_parsed_json_and_results_know_their_tool(self) -> None:
        state, report = import_openai_messages(
            [
                {"role": "user", "content": "list files"},
                {
                    "role": "assistant",
                    "content": None,
                    "tool_calls": [
                        {
                            "id": "c1",
                            "type": "function",
                            "function": {"name": "ls", "arguments": '{"dir": "/"}'},
                        }
                    ],
                },
                {"role": "tool", "tool_call_id": "c1", "content": "etc usr"},
            ]
        )
        call, result = state[1], state[2]
        assert call.content == {"dir": "/"}
        assert call.metadata.call_id == result.metadata.call_id == "c1"
        assert result.metadata.tool == "ls"
        assert report.unanswered_calls == ()

    def test_arguments_that_are_not_json_are_kept_as_text(self) -> None:
        state, _ = import_openai_messages(
            [
                {
                    "role": "assistant",
                    "tool_calls": [{"id": "c", "function": {"name": "f", "arguments": "{broken"}}],
                }
            ]
        )
        assert state[0].content == "{broken"

    def test_content_parts_are_joined(self) -> None:
        state, _ = import_openai_messages(
            [
                {
                    "role": "user",
                    "content": [{"type": "text", "text": "a"}, {"type": "text", "text": "b"}],
                }
            ]
        )
        assert state[0].content == "a\nb"

    def test_ids_are_stable_across_imports(self) -> None:
        messages = [{"role": "user", "content": "x"}, {"role": "assistant", "content": "y"}]
        assert import_openai_messages(messages)[0].ids == ("msg0", "msg1")

    def test_unknown_role_is_an_error_in_strict_mode(self) -> None:
        with pytest.raises(TranscriptError, match=r"messages\[0\].*'exit'"):
            import_openai_messages([{"role": "exit", "content": "x"}], unknown_roles="error")

    @pytest.mark.parametrize(
        ("messages", "match"),
        [
            ([{"content": "x"}], r"messages\[0\]: missing string 'role'"),
            (["hello"], r"messages\[0\]: must be an object"),
            ([{"role": "tool", "content": "x"}], "tool_call_id"),
            ([{"role": "assistant", "tool_calls": [{"id": "c"}]}], "function.name"),
            ([{"role": "assistant", "tool_calls": "x"}], "tool_calls"),
            ([{"role": "user", "content": 5}], "content must be"),
        ],
    )
    def test_malformed_messages_name_the_index(self, messages: list[Any], match: str) -> None:
        with pytest.raises(TranscriptError, match=match):
            import_openai_messages(messages)

    def test_object_without_messages_is_rejected(self) -> None:
        with pytest.raises(TranscriptError, match="'messages'"):
            load_openai_transcript({"info": {}})


CALL_AND_ANSWER: list[dict[str, Any]] = [
    {"role": "system", "content": "Be brief."},
    {"role": "user", "content": "list files"},
    {
        "role": "assistant",
        "content": "Listing.",
        "tool_calls": [
            {"id": "c1", "type": "function", "function": {"name": "ls", "arguments": "{}"}},
            {"id": "c2", "type": "function", "function": {"name": "rm", "arguments": "{}"}},
        ],
    },
    {"role": "tool", "tool_call_id": "c1", "content": "a b"},
]


class TestOpenAIImport:
    def test_on_progress_hears_each_message_converted(self) -> None:
        messages = [{"role": "user", "content": f"q{i}"} for i in range(500)]
        seen: list[tuple[int, int]] = []

        state, _ = load_openai_transcript(
            {"messages": messages}, on_progress=lambda done, total: seen.append((done, total))
        )

        assert len(state) == 500
        assert seen[0] == (0, 500)
        assert seen[-1] == (500, 500)
        assert [done for done, _ in seen] == list(range(0, 501, 5))

    def test_an_unanswered_call_is_pending_and_reported(self) -> None:
        state, report = import_openai_messages(CALL_AND_ANSWER)

        statuses = {c.metadata.call_id: c.metadata.status for c in state.of_type("WORKFLOW")}
        assert statuses == {"c1": "completed", "c2": "pending"}
        assert report.unanswered_calls == ("c2",)

    def test_the_first_user_message_is_pinned_unless_asked_not_to(self) -> None:
        pinned, _ = import_openai_messages(CALL_AND_ANSWER)
        unpinned, _ = import_openai_messages(CALL_AND_ANSWER, pin_task=False)

        assert [c.id for c in pinned if c.pinned] == ["msg1"]
        assert not any(c.pinned for c in unpinned)

    def test_the_cli_names_the_unanswered_call_ids(self, tmp_path: Path) -> None:
        from click.testing import CliRunner

        from memctx.cli import main

        transcript = tmp_path / "t.json"
        transcript.write_text(json.dumps(CALL_AND_ANSWER), encoding="utf-8")

        result = CliRunner().invoke(
            main, ["import-openai", str(transcript), "-o", str(tmp_path / "s.json")]
        )

        assert result.exit_code == 0
        assert "1 tool call(s) have no result (pending): c2" in result.stderr

    def test_import_build_export_gives_the_same_conversation(self) -> None:
        """Text comes back inside XML elements (parse them to compare); the pending call is
        sent as text, since a native call never goes without its result."""
        state, _ = import_openai_messages([*CALL_AND_ANSWER[:3], CALL_AND_ANSWER[3]])
        answered = [*CALL_AND_ANSWER[:2], {**CALL_AND_ANSWER[2], "tool_calls": [
            CALL_AND_ANSWER[2]["tool_calls"][0]]}, CALL_AND_ANSWER[3]]  # fmt: skip
        state, _ = import_openai_messages(answered)

        exported = create_builder().build(state).to_openai(tools="native")

        assert [m["role"] for m in exported] == ["system", "user", "assistant", "tool"]
        assert parse_element(exported[0]["content"].rstrip())[2] == "Be brief."
        assert parse_element(exported[1]["content"].rstrip())[2] == "list files"
        assert parse_element(exported[2]["content"].rstrip())[2] == "Listing."
        assert exported[2]["tool_calls"] == answered[2]["tool_calls"]
        assert exported[3] == answered[3]


ANTHROPIC_REQUEST: dict[str, Any] = {
    "system": [{"type": "text", "text": "Be brief."}],
    "messages": [
        {"role": "user", "content": "Fix the bug."},
        {
            "role": "assistant",
            "content": [
                {"type": "thinking", "thinking": "Read first.", "signature": "s"},
                {"type": "text", "text": "Reading."},
                {"type": "tool_use", "id": "tu_1", "name": "read", "input": {"p": "a.py"}},
                {"type": "tool_use", "id": "tu_2", "name": "grep", "input": {"q": "x"}},
            ],
        },
        {
            "role": "user",
            "content": [
                {"type": "tool_result", "tool_use_id": "tu_1", "content": "x = 1"},
                {
                    "type": "tool_result",
                    "tool_use_id": "tu_2",
                    "content": [{"type": "text", "text": "denied"}],
                    "is_error": True,
                },
                {"type": "image", "source": {"type": "file", "file_id": "file_011"}},
            ],
        },
        {"role": "assistant", "content": [{"type": "tool_use", "id": "tu_3", "name": "ls",
                                           "input": {}}]},
    ],
}  # fmt: skip


class TestAnthropicImport:
    def test_every_block_becomes_its_chunk(self) -> None:
        state, report = load_anthropic_messages(ANTHROPIC_REQUEST)

        kinds = [(c.id, c.action or c.subtype or c.role) for c in state]
        assert kinds == [
            ("system", None),
            ("msg0", "user"),
            ("msg1_0", "THINKING"),
            ("msg1_1", "assistant"),
            ("msg1_2", "tool_call"),
            ("msg1_3", "tool_call"),
            ("msg2_0", "tool_result"),
            ("msg2_1", "tool_result"),
            ("msg2_2", "anthropic_image"),
            ("msg3_0", "tool_call"),
        ]
        assert state.get("system").text == "Be brief."
        assert state.get("msg2_1").metadata.error is True
        assert state.get("msg2_1").metadata.tool == "grep"
        assert state.get("msg2_1").text == "denied"
        assert state.get("msg1_2").content == {"p": "a.py"}
        assert report.unknown_blocks == ((2, "image"),)
        assert report.unanswered_calls == ("tu_3",)
        assert state.get("msg3_0").metadata.status == "pending"
        assert state.get("msg0").pinned

    def test_a_list_of_messages_works_too(self) -> None:
        state, _ = load_anthropic_messages([{"role": "user", "content": "hi"}])

        assert state.ids == ("msg0",)

    def test_import_build_export_gives_the_same_calls_and_results(self) -> None:
        state, _ = load_anthropic_messages(ANTHROPIC_REQUEST)

        exported = create_builder().build(state).to_anthropic(tools="native")

        call_turn = exported["messages"][1]["content"]
        assert call_turn[0] == ANTHROPIC_REQUEST["messages"][1]["content"][0]  # signed thinking
        assert call_turn[1]["type"] == "text"  # the text, as XML
        assert call_turn[2:] == ANTHROPIC_REQUEST["messages"][1]["content"][2:]
        results = exported["messages"][2]["content"]
        assert results[0] == {"type": "tool_result", "tool_use_id": "tu_1", "content": "x = 1"}
        assert results[1] == {
            "type": "tool_result",
            "tool_use_id": "tu_2",
            "content": "denied",
            "is_error": True,
        }
        # The pending call cannot be native (no result): it is sent as XML text.
        assert isinstance(exported["messages"][-2]["content"], str)

    @pytest.mark.parametrize(
        ("data", "match"),
        [
            ({"system": "x"}, "'messages'"),
            ([{"role": "user", "content": 3}], r"messages\[0\]: content must be"),
            ([{"role": "user", "content": [{"text": "no type"}]}], "'type'"),
            ([{"role": "assistant", "content": [{"type": "tool_use", "id": "x"}]}], "'name'"),
            ([{"role": "user", "content": [{"type": "tool_result"}]}], "tool_use_id"),
            ([{"role": "bot", "content": "x"}], "unknown role 'bot'"),
        ],
    )
    def test_malformed_input_names_the_message(self, data: Any, match: str) -> None:
        with pytest.raises(TranscriptError, match=match):
            load_anthropic_messages(data, unknown_roles="error")


class TestLangChainImport:
    def test_messages_become_chunks_and_unanswered_calls_pending(self) -> None:
        from langchain_core.messages import AIMessage, HumanMessage, SystemMessage, ToolMessage

        messages = [
            SystemMessage("Be brief."),
            HumanMessage("list files"),
            AIMessage(
                "",
                tool_calls=[
                    {"name": "ls", "args": {}, "id": "c1"},
                    {"name": "rm", "args": {"p": "a"}, "id": "c2"},
                ],
            ),
            ToolMessage("denied", tool_call_id="c1", status="error"),
        ]

        state, report = from_langchain(messages)

        assert [c.id for c in state] == ["msg0", "msg1", "msg2_call0", "msg2_call1", "msg3"]
        assert state.get("msg3").metadata.error is True
        assert state.get("msg3").metadata.tool == "ls"
        assert state.get("msg2_call1").metadata.status == "pending"
        assert report.unanswered_calls == ("c2",)
        assert state.get("msg1").pinned

    def test_round_trip_through_to_langchain_keeps_calls_and_results(self) -> None:
        from langchain_core.messages import AIMessage, HumanMessage, ToolMessage

        messages = [
            HumanMessage("go"),
            AIMessage("", tool_calls=[{"name": "ls", "args": {"d": "/"}, "id": "c1"}]),
            ToolMessage("a b", tool_call_id="c1", name="ls"),
        ]
        state, _ = from_langchain(messages)

        back = create_builder().build(state).to_langchain(tools="native")

        assert back[1].tool_calls == [
            {"name": "ls", "args": {"d": "/"}, "id": "c1", "type": "tool_call"}
        ]
        assert (back[2].content, back[2].tool_call_id) == ("a b", "c1")
        assert parse_element(back[0].content.rstrip())[2] == "go"

    def test_something_else_than_messages_is_refused(self) -> None:
        with pytest.raises(TranscriptError, match=r"messages\[0\]: must be a LangChain message"):
            from_langchain([{"role": "user", "content": "x"}])
