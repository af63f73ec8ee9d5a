"""build_for_agent: one agent's view of the conversation as a memctx build."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from lxml import etree

from memctx import (
    BudgetExceededError,
    ContextBuildResult,
    Tokenizer,
    chunks,
    create_builder,
    create_tokenizer,
)
from memctx.team import (
    TEAM_TASK_CHUNK_ID,
    Speaker,
    TeamConversation,
    TeamMessageRenderer,
    strip_markers,
)
from memctx.xml import parse_element, sanitize
from strategies import examples, names, texts


@pytest.fixture
def review(
    team: TeamConversation, lena: Speaker, coder: Speaker, reviewer: Speaker
) -> TeamConversation:
    """A short review round: Lena asks, Coder fixes, Reviewer answers, Lena thanks."""
    team.set_team_task("Cap the retry delay at 30 s and get it reviewed.")
    team.add_message(
        "Coder, please cap the delay. [NEXT:coder]", speaker=lena, addressees=["coder"]
    )
    team.add_message(
        "[FROM:coder] Capped with Math.min. [NEXT:reviewer]", speaker=coder, addressees=["reviewer"]
    )
    team.add_message("LGTM. [NEXT:lena]", speaker=reviewer, addressees=["lena"])
    team.add_message("Thanks, both!", speaker=lena)
    return team


def roles(result: ContextBuildResult) -> list[tuple[str, tuple[str, ...]]]:
    return [(m.role, m.chunk_ids) for m in result.messages]


class TestBuildForAgent:
    def test_the_agents_own_messages_are_assistant_the_others_user(
        self, review: TeamConversation
    ) -> None:
        result = review.build_for_agent("coder")

        assert roles(result) == [
            ("system", (TEAM_TASK_CHUNK_ID,)),
            ("user", ("msg-1",)),
            ("assistant", ("msg-2",)),
            ("user", ("msg-3", "msg-4")),
        ]

    def test_each_agent_sees_itself_as_the_assistant(self, review: TeamConversation) -> None:
        result = review.build_for_agent("reviewer")

        assert roles(result)[1:] == [
            ("user", ("msg-1", "msg-2")),
            ("assistant", ("msg-3",)),
            ("user", ("msg-4",)),
        ]

    def test_who_spoke_and_to_whom_are_attributes(self, review: TeamConversation) -> None:
        result = review.build_for_agent("coder")
        first = result.messages[1].content.strip()

        tag, attributes, content = parse_element(first)

        assert tag == "user_message"
        assert attributes == {
            "id": "msg-1",
            "role": "user",
            "from": "Lena",
            "from_type": "human",
            "to": "coder",
        }
        assert content == "Coder, please cap the delay."

    def test_the_team_task_is_system_context(self, review: TeamConversation) -> None:
        system = review.build_for_agent("coder").messages[0].content

        assert parse_element(system.strip()) == (
            "system_context",
            {"id": TEAM_TASK_CHUNK_ID, "priority": "1000"},
            "Cap the retry delay at 30 s and get it reviewed.",
        )

    def test_without_a_team_task_there_is_no_system_message(
        self, team: TeamConversation, lena: Speaker
    ) -> None:
        team.add_message("hi", speaker=lena)

        assert roles(team.build_for_agent("coder")) == [("user", ("msg-1",))]

    def test_markers_are_stripped(self, review: TeamConversation) -> None:
        text = review.build_for_agent("lena").to_text()

        assert "[NEXT" not in text
        assert "[FROM" not in text

    def test_an_ais_repeat_is_deduplicated(
        self, team: TeamConversation, lena: Speaker, coder: Speaker
    ) -> None:
        team.add_message("please fix", speaker=lena)
        team.add_message("Fixed. [NEXT:reviewer]", speaker=coder)
        team.add_message("Fixed. [NEXT:tester]", speaker=coder)

        result = team.build_for_agent("reviewer")

        assert result.included_chunk_ids == ("msg-1", "msg-3")

    def test_a_humans_repeat_is_kept(self, team: TeamConversation, lena: Speaker) -> None:
        team.add_message("status?", speaker=lena)
        team.add_message("status?", speaker=lena)

        assert team.build_for_agent("coder").included_chunk_ids == ("msg-1", "msg-2")

    def test_the_budget_keeps_the_newest_messages_and_the_task(
        self, review: TeamConversation, gpt4o: Tokenizer
    ) -> None:
        whole = review.build_for_agent("coder", tokenizer=gpt4o)

        result = review.build_for_agent("coder", max_tokens=whole.token_count - 1, tokenizer=gpt4o)

        assert result.included_chunk_ids == (TEAM_TASK_CHUNK_ID, "msg-2", "msg-3", "msg-4")
        assert result.excluded_for("over_budget") == ("msg-1",)
        assert result.token_count <= whole.token_count - 1

    def test_the_count_is_exact(self, review: TeamConversation, gpt4o: Tokenizer) -> None:
        result = review.build_for_agent("coder", max_tokens=8000, tokenizer=gpt4o)

        assert result.token_count_exact
        assert result.token_count == gpt4o.count_messages(result.messages)

    def test_build_options_pass_through(self, review: TeamConversation) -> None:
        result = review.build_for_agent(
            "coder", max_tokens=8000, system_prompt="You are Coder.", strategy="in_order"
        )

        assert result.messages[0].content.startswith("You are Coder.")
        assert result.strategy == "in_order"

    def test_a_budget_too_small_for_the_task_and_current_message_raises(
        self, review: TeamConversation
    ) -> None:
        with pytest.raises(BudgetExceededError):
            review.build_for_agent("coder", max_tokens=5)

    def test_an_empty_conversation_builds_no_messages(self, team: TeamConversation) -> None:
        assert team.build_for_agent("coder").messages == ()

    def test_rebuilding_reuses_each_messages_chunk(
        self, review: TeamConversation, lena: Speaker
    ) -> None:
        first = review.build_for_agent("coder")
        review.add_message("one more", speaker=lena)

        second = review.build_for_agent("coder")

        assert second.included_chunk_ids == (*first.included_chunk_ids, "msg-5")

    def test_a_snapshot_of_the_coders_view(
        self, review: TeamConversation, context_snapshot: Any
    ) -> None:
        result = review.build_for_agent(
            "coder", max_tokens=400, tokenizer=create_tokenizer("gpt-4o")
        )

        assert context_snapshot == result


class TestTeamMessageRenderer:
    @settings(max_examples=examples(60))
    @given(st.lists(st.tuples(names, names, texts), min_size=1, max_size=4))
    def test_no_message_can_forge_an_element_or_its_attribution(
        self, items: list[tuple[str, str, str]]
    ) -> None:
        team = TeamConversation()
        for role_name, addressee, content in items:
            speaker = Speaker("x", role_name, "human")
            team.add_message(content, speaker=speaker, addressees=[addressee])

        result = team.build_for_agent("nobody")

        xml = "".join(m.content for m in result.messages)
        root = etree.fromstring(f"<root>{xml}</root>".encode())
        assert [(e.get("from"), e.get("to"), (e.text or "")[1:-1]) for e in root] == [
            (sanitize(name), sanitize(to), sanitize(strip_markers(content)))
            for name, to, content in items
        ]

    def test_claims_only_team_message_chunks(self) -> None:
        renderer = TeamMessageRenderer()
        attribution = {"team_message": {"from": "a", "from_type": "ai", "to": "all"}}

        assert not renderer.can_render(chunks.user("plain"))
        assert not renderer.can_render(chunks.system("x", custom=attribution))
        assert renderer.can_render(chunks.user("x", custom=attribution))

    def test_renders_the_agents_own_message_as_assistant_response(self) -> None:
        attribution = {"team_message": {"from": "Coder", "from_type": "ai", "to": "lena"}}
        chunk = chunks.assistant("done", id="msg-2", custom=attribution)

        assert create_builder(renderers=[TeamMessageRenderer()]).render(chunk) == (
            "assistant",
            '<assistant_response id="msg-2" role="assistant" from="Coder" from_type="ai" '
            'to="lena">\ndone\n</assistant_response>',
        )


class TestRebuilds:
    def test_building_again_unchanged_returns_the_same_result(
        self, review: TeamConversation, gpt4o: Tokenizer
    ) -> None:
        first = review.build_for_agent("coder", max_tokens=500, tokenizer=gpt4o)

        again = review.build_for_agent("coder", max_tokens=500, tokenizer=gpt4o)

        assert again == first
        assert again.messages is first.messages  # nothing built anew

    def test_a_grown_conversation_builds_as_a_fresh_team_would(
        self, review: TeamConversation, lena: Speaker, coder: Speaker, gpt4o: Tokenizer
    ) -> None:
        review.build_for_agent("coder", max_tokens=300, tokenizer=gpt4o)
        review.add_message("One more thing. [NEXT:coder]", speaker=lena)
        review.add_message("On it.", speaker=coder)
        review.add_message("On it.", speaker=coder)  # a repeat: the one before goes
        fresh = TeamConversation()
        fresh.import_snapshot(review.export_snapshot())

        for budget in (150, 300, None):
            built = review.build_for_agent("coder", max_tokens=budget, tokenizer=gpt4o)
            expected = fresh.build_for_agent("coder", max_tokens=budget, tokenizer=gpt4o)
            assert built.messages == expected.messages
            assert built.included_chunk_ids == expected.included_chunk_ids
            assert built.token_count == expected.token_count

    def test_a_new_team_task_rebuilds_the_view(
        self, review: TeamConversation, gpt4o: Tokenizer
    ) -> None:
        review.build_for_agent("coder", tokenizer=gpt4o)
        review.set_team_task("A new task.")

        result = review.build_for_agent("coder", tokenizer=gpt4o)

        assert "A new task." in result.messages[0].content
