"""Importing OpenAI chat transcripts, including three real agent runs."""

from __future__ import annotations

import itertools
import json
from pathlib import Path
from typing import Any

import pytest

from memctx import ChunkType, TranscriptError, create_builder, create_tokenizer
from memctx.importers import import_openai_messages, load_openai_transcript
from memctx.statefile import dumps_state, loads_state

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
        # The submit call gets no reply in these runs.
        assert len(report.unanswered_calls) == 1

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
        for message in result.to_openai():
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
