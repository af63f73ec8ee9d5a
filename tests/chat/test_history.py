"""ChatMessage, prompt_history (the window) and workflow_task_prompt."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from memctx import ChatError
from memctx.chat import (
    DEFAULT_WINDOW,
    FOLLOW_UPS_HEADING,
    ChatMessage,
    prompt_history,
    workflow_task_prompt,
)


def users(*texts: str) -> list[ChatMessage]:
    return [ChatMessage("user", text) for text in texts]


class TestChatMessage:
    def test_dicts_with_the_same_keys_are_accepted(self) -> None:
        history = [
            {"role": "user", "content": "hi"},
            {"role": "assistant", "content": "yo", "agent_id": "coder", "id": "m2"},
        ]

        assert prompt_history(history) == (
            ChatMessage("user", "hi"),
            ChatMessage("assistant", "yo", "coder", id="m2"),
        )

    def test_to_dict_round_trips(self) -> None:
        message = ChatMessage("assistant", "done", "coder", id="msg-3")

        assert prompt_history([message.to_dict()]) == (message,)

    @pytest.mark.parametrize(
        ("item", "error"),
        [
            ({"role": "system", "content": "x"}, r"history\[0\]\.role: must be 'user' or 'assist"),
            ({"role": "user"}, r"history\[0\]: missing 'content'"),
            ({"role": "user", "content": "x", "name": "n"}, r"history\[0\]: unknown key\(s\) 'na"),
            ({"role": "user", "content": 3}, r"history\[0\]\.content: must be a string"),
            ({"role": "user", "content": "x", "agent_id": ""}, r"agent_id: must be a non-empty"),
            ("user: hi", r"history\[0\]: expected a ChatMessage or a dict, got str"),
        ],
    )
    def test_a_malformed_message_is_refused_with_its_position(
        self, item: object, error: str
    ) -> None:
        with pytest.raises(ChatError, match=error):
            prompt_history([item])  # type: ignore[list-item]

    def test_a_history_given_as_one_string_is_refused(self) -> None:
        with pytest.raises(ChatError, match="expected a sequence of messages, got str"):
            prompt_history("hello")  # type: ignore[arg-type]


class TestPromptHistory:
    def test_keeps_the_last_twenty_by_default(self) -> None:
        history = users(*(f"msg-{n}" for n in range(1, DEFAULT_WINDOW + 4)))

        window = prompt_history(history)

        assert DEFAULT_WINDOW == 20
        assert [m.content for m in window] == [f"msg-{n}" for n in range(4, 24)]

    def test_a_shorter_history_is_kept_whole(self) -> None:
        assert prompt_history(users("a", "b"), window=5) == tuple(users("a", "b"))

    def test_a_window_of_zero_keeps_nothing(self) -> None:
        assert prompt_history(users("a", "b"), window=0) == ()

    @pytest.mark.parametrize("window", [-1, 2.5, "20", True])
    def test_a_window_that_is_not_a_count_is_refused(self, window: object) -> None:
        with pytest.raises(ChatError, match="window: must be an integer >= 0"):
            prompt_history(users("a"), window=window)  # type: ignore[arg-type]

    @given(st.lists(st.sampled_from(["a", "b", "c"]), max_size=30), st.integers(0, 30))
    def test_is_the_tail_of_the_history_of_at_most_window_messages(
        self, texts: list[str], window: int
    ) -> None:
        history = users(*texts)

        kept = prompt_history(history, window)

        assert len(kept) == min(window, len(history))
        assert list(kept) == history[len(history) - len(kept) :]


@pytest.mark.parametrize("given", [None, 5])
def test_a_history_that_is_not_a_sequence_is_a_chat_error(given: object) -> None:
    with pytest.raises(ChatError, match="history: expected a sequence of messages"):
        prompt_history(given)  # type: ignore[arg-type]


class TestWorkflowTaskPrompt:
    def test_the_first_user_message_is_the_task_and_later_ones_follow_ups_in_order(self) -> None:
        history = [
            ChatMessage("user", "主任务"),
            ChatMessage("assistant", "猫回复", "coder"),
            ChatMessage("user", "补充A"),
            ChatMessage("user", " 补充B \n"),
        ]

        assert workflow_task_prompt(history) == (
            f"主任务\n\n{FOLLOW_UPS_HEADING}\n1. 补充A\n2. 补充B"
        )

    def test_one_user_message_is_the_task_alone(self) -> None:
        assert workflow_task_prompt(users("  Build a CLI.  ")) == "Build a CLI."

    def test_no_user_message_gives_an_empty_task(self) -> None:
        assert workflow_task_prompt([ChatMessage("assistant", "hi", "coder")]) == ""

    def test_blank_user_messages_are_skipped(self) -> None:
        assert workflow_task_prompt(users(" ", "task", "\n")) == "task"

    def test_agents_messages_are_never_part_of_it(self) -> None:
        history = [*users("task"), ChatMessage("assistant", "SECRET", "coder"), *users("more")]

        assert "SECRET" not in workflow_task_prompt(history)
