"""build_chat_context: one call for the round; the input never twice; the per-agent prompt."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from memctx import ChatError, ContextBuilder, create_tokenizer
from memctx.chat import (
    ChatAgent,
    ChatMessage,
    ModeState,
    build_chat_context,
    prompt_history,
    workflow_task_prompt,
)


def history_of(count: int) -> list[ChatMessage]:
    return [
        ChatMessage("user", f"u{n}", id=f"msg-{n}")
        if n % 2
        else ChatMessage("assistant", f"a{n}", "silver", id=f"msg-{n}")
        for n in range(1, count + 1)
    ]


class TestBuildChatContext:
    def test_gives_targets_input_history_and_task_in_one_call(self, cats: list[ChatAgent]) -> None:
        history = history_of(23)

        context = build_chat_context("@billy  帮我写个测试", history, cats, "free_chat")

        assert context.targets.agent_ids == ("garfield",)
        assert context.prompt_user_text == "帮我写个测试"
        assert context.prompt_history == tuple(history[-20:])
        assert context.workflow_task_prompt == workflow_task_prompt(
            [*history, ChatMessage("user", "@billy  帮我写个测试")]
        )
        assert context.mentions.agent_ids == ("garfield",)

    def test_the_input_saved_first_is_not_repeated_in_the_history(
        self, cats: list[ChatAgent]
    ) -> None:
        history = [*history_of(4), ChatMessage("user", "@Milk fix it", id="msg-5")]

        context = build_chat_context(history[-1], history, cats, "free_chat")

        assert context.prompt_history == tuple(history[:4])
        assert context.prompt_user_text == "fix it"

    def test_the_input_as_text_is_recognised_as_the_last_user_message(
        self, cats: list[ChatAgent]
    ) -> None:
        history = [*history_of(2), ChatMessage("user", "again")]

        context = build_chat_context("again", history, cats, "free_chat")

        assert context.prompt_history == tuple(history[:2])

    def test_an_input_not_saved_yet_leaves_the_history_whole(self, cats: list[ChatAgent]) -> None:
        history = history_of(3)

        context = build_chat_context("new question", history, cats, "free_chat")

        assert context.prompt_history == tuple(history)

    def test_an_earlier_message_with_the_same_text_but_another_id_is_kept(
        self, cats: list[ChatAgent]
    ) -> None:
        """The user said "yes" twice; only the current one is the input."""
        history = [ChatMessage("user", "yes", id="msg-1"), ChatMessage("user", "yes", id="msg-2")]

        context = build_chat_context(history[1], history, cats, "free_chat")

        assert context.prompt_history == (history[0],)

    def test_the_task_counts_the_input_once(self, team: list[ChatAgent]) -> None:
        history = [ChatMessage("user", "Build a CLI", id="msg-1")]

        context = build_chat_context(history[0], history, team, "workflow", {"coder": "alice"})

        assert context.workflow_task_prompt == "Build a CLI"
        assert context.prompt_history == ()

    def test_the_window_is_taken_after_the_input_is_left_out(self, cats: list[ChatAgent]) -> None:
        history = [*history_of(5), ChatMessage("user", "now", id="now")]

        context = build_chat_context(history[-1], history, cats, "quiz", window=2)

        assert context.prompt_history == tuple(history[3:5])

    def test_input_of_only_mentions_is_kept_as_written(self, cats: list[ChatAgent]) -> None:
        context = build_chat_context(" @Milk ", [], cats, "free_chat")

        assert (context.targets.agent_ids, context.prompt_user_text) == (("silver",), "@Milk")

    def test_a_round_without_input_is_a_workflow_step(
        self, team: list[ChatAgent], team_roles: dict[str, str]
    ) -> None:
        history = [ChatMessage("user", "Build it"), ChatMessage("assistant", "built", "alice")]

        context = build_chat_context(
            None, history, team, "workflow", team_roles, ModeState("reviewer")
        )

        assert context.targets.agent_ids == ("bob",)
        assert context.targets.mode_state == ModeState("tester")
        assert context.prompt_user_text == ""
        assert context.prompt_history == tuple(history)
        assert context.workflow_task_prompt == "Build it"

    def test_an_input_that_is_an_agents_message_is_refused(self, cats: list[ChatAgent]) -> None:
        with pytest.raises(ChatError, match="current input must be a user message"):
            build_chat_context(ChatMessage("assistant", "x", "silver"), [], cats, "free_chat")

    def test_parallel_targets_share_one_pre_round_history(self, cats: list[ChatAgent]) -> None:
        history = history_of(3)
        context = build_chat_context("hello all", history, cats, "free_chat")

        states = [context.state_for(agent_id) for agent_id in context.targets.agent_ids]

        assert len(states) == 3
        histories = [[c.content for c in s if c.id.startswith("history-")] for s in states]
        assert histories[0][0] == "From: user\nu1"
        assert histories[1] == histories[2]  # the same messages for those who did not speak

    @given(
        st.lists(st.sampled_from(["yes", "no", "@Milk yes"]), max_size=25),
        st.integers(min_value=0, max_value=25),
    )
    def test_the_history_never_holds_the_input_saved_first(
        self, texts: list[str], window: int
    ) -> None:
        cats = [ChatAgent("silver", aliases=("Milk",))]
        history = [ChatMessage("user", t, id=f"msg-{n}") for n, t in enumerate(texts, start=1)]
        current = ChatMessage("user", "yes", id="current")
        saved = [*history, current]

        context = build_chat_context(current, saved, cats, "free_chat", window=window)

        assert current not in context.prompt_history
        assert context.prompt_history == prompt_history(history, window)


class TestStateFor:
    def test_the_reviewer_sees_persona_colleagues_task_history_and_input(
        self,
        team: list[ChatAgent],
        team_roles: dict[str, str],
        context_snapshot: Any,
        builder: ContextBuilder,
    ) -> None:
        history = [
            ChatMessage("user", "@cc build a word counter", id="msg-1"),
            ChatMessage("assistant", "Here is wc.py.", "alice", id="msg-2"),
            ChatMessage("user", "It must count lines too.", id="msg-3"),
        ]
        context = build_chat_context(
            history[-1], history, team, "workflow", team_roles, ModeState("reviewer")
        )

        result = builder.build(
            context.state_for("bob"), max_tokens=2000, tokenizer=create_tokenizer("gpt-4o")
        )

        assert context_snapshot == result

    def test_own_messages_are_assistant_turns_others_user_turns_that_say_who_wrote_them(
        self, cats: list[ChatAgent]
    ) -> None:
        history = [
            ChatMessage("user", "hi", id="m1"),
            ChatMessage("assistant", "meow", "silver", id="m2"),
            ChatMessage("assistant", "purr", "garfield", id="m3"),
        ]
        context = build_chat_context("and now?", history, cats, "free_chat")

        state = context.state_for("silver")

        assert [(c.id, c.role, c.content) for c in state][1:] == [
            ("history-1", "user", "From: user\nhi"),
            ("history-2", "assistant", "meow"),
            ("history-3", "user", "From: 加菲猫 (@garfield)\npurr"),
            ("input", "user", "From: user\nand now?"),
        ]
        assert state.get("input").metadata.pinned

    def test_an_unknown_agent_has_no_prompt(self, cats: list[ChatAgent]) -> None:
        context = build_chat_context("hi", [], cats, "free_chat")

        with pytest.raises(ChatError, match="unknown agent 'dog'"):
            context.state_for("dog")
