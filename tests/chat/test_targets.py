"""select_targets: who answers a round in each mode, and the workflow chain."""

from __future__ import annotations

import pytest

from memctx import ChatError, UnknownAgentError
from memctx.chat import (
    FREE_MODES,
    MODES,
    WORKFLOW_CHAIN,
    AgentLookup,
    ChatAgent,
    Mentions,
    ModeState,
    Targets,
    parse_mentions,
    select_targets,
)


class TestModes:
    def test_are_the_three_free_modes_and_the_workflow(self) -> None:
        assert FREE_MODES == ("free_chat", "werewolf", "quiz")
        assert MODES == ("free_chat", "werewolf", "quiz", "workflow")
        assert WORKFLOW_CHAIN == ("coder", "reviewer", "tester")

    def test_an_unknown_mode_is_refused_listing_the_modes(self, cats: list[ChatAgent]) -> None:
        with pytest.raises(ChatError, match="unknown mode 'chat'; the modes are free_chat, "):
            select_targets("chat", None, cats)


@pytest.mark.parametrize("mode", FREE_MODES)
class TestFreeModes:
    def test_the_mentioned_agents_answer_in_the_order_mentioned(
        self, mode: str, cat_lookup: AgentLookup
    ) -> None:
        mentions = parse_mentions("@Billy and @牛奶, look", cat_lookup)

        targets = select_targets(mode, mentions, cat_lookup)

        assert targets == Targets(("garfield", "silver"), None)

    def test_without_a_mention_every_agent_answers(
        self, mode: str, cats: list[ChatAgent], cat_lookup: AgentLookup
    ) -> None:
        targets = select_targets(mode, parse_mentions("hello all", cat_lookup), cats)

        assert targets.agent_ids == ("silver", "abyssinian", "garfield")

    def test_the_mode_state_is_handed_back_unchanged(
        self, mode: str, cats: list[ChatAgent]
    ) -> None:
        state = ModeState("reviewer", 2)

        assert select_targets(mode, None, cats, mode_state=state).mode_state == state

    def test_mentions_may_be_given_as_ids(self, mode: str, cats: list[ChatAgent]) -> None:
        assert select_targets(mode, ["garfield"], cats).agent_ids == ("garfield",)

    def test_a_mentioned_id_that_is_no_agent_is_refused(
        self, mode: str, cats: list[ChatAgent]
    ) -> None:
        with pytest.raises(UnknownAgentError, match="mentions: unknown agent 'dog'"):
            select_targets(mode, Mentions(("dog",), ""), cats)

    def test_a_chat_without_agents_is_refused(self, mode: str) -> None:
        with pytest.raises(ChatError, match="at least one agent"):
            select_targets(mode, None, [])


class TestWorkflow:
    def test_starts_with_the_coder_and_returns_the_state_of_the_reviewer(
        self, team: list[ChatAgent], team_roles: dict[str, str]
    ) -> None:
        targets = select_targets("workflow", None, team, role_map=team_roles)

        assert targets == Targets(("alice",), ModeState("reviewer", 0), node="coder")

    def test_mentions_are_ignored(self, team: list[ChatAgent], team_roles: dict[str, str]) -> None:
        mentions = parse_mentions("@Test Cat @rc do it", AgentLookup(team))

        targets = select_targets(
            "workflow", mentions, team, team_roles, mode_state=ModeState("coder")
        )

        assert targets.agent_ids == ("alice",)

    @pytest.mark.parametrize(
        ("node", "agent", "after"),
        [
            ("coder", "alice", ModeState("reviewer", 4)),
            ("reviewer", "bob", ModeState("tester", 4)),
            ("tester", "carol", ModeState("coder", 5)),
        ],
    )
    def test_walks_the_chain_and_starts_again_after_the_tester(
        self,
        team: list[ChatAgent],
        team_roles: dict[str, str],
        node: str,
        agent: str,
        after: ModeState,
    ) -> None:
        targets = select_targets("workflow", None, team, team_roles, ModeState(node, 4))

        assert (targets.agent_ids, targets.mode_state, targets.node) == ((agent,), after, node)

    def test_three_rounds_saving_the_state_each_time_go_coder_reviewer_tester(
        self, team: list[ChatAgent], team_roles: dict[str, str]
    ) -> None:
        state = None
        answered = []
        for _ in range(4):
            targets = select_targets("workflow", None, team, team_roles, state)
            answered.extend(targets.agent_ids)
            state = targets.mode_state

        assert answered == ["alice", "bob", "carol", "alice"]
        assert state == ModeState("reviewer", 1)

    def test_the_mode_state_may_be_the_stored_dict(
        self, team: list[ChatAgent], team_roles: dict[str, str]
    ) -> None:
        targets = select_targets("workflow", None, team, team_roles, {"current_node": "tester"})

        assert targets.agent_ids == ("carol",)
        assert targets.mode_state is not None
        assert targets.mode_state.to_dict() == {"current_node": "coder", "cycles": 1}

    def test_a_node_may_be_played_by_several_agents(self, team: list[ChatAgent]) -> None:
        roles = {"coder": ["alice", "bob"], "reviewer": "bob", "tester": "carol"}

        assert select_targets("workflow", None, team, roles).agent_ids == ("alice", "bob")

    def test_without_a_role_map_the_agent_named_like_the_node_plays_it(self) -> None:
        agents = [ChatAgent("coder"), ChatAgent("reviewer"), ChatAgent("tester")]

        targets = select_targets("workflow", None, agents, mode_state=ModeState("tester"))

        assert targets.agent_ids == ("tester",)

    def test_without_a_role_map_nor_such_an_agent_the_error_says_what_to_do(
        self, team: list[ChatAgent]
    ) -> None:
        with pytest.raises(ChatError, match="no agent plays 'coder': give a role_map"):
            select_targets("workflow", None, team)

    def test_a_role_map_naming_no_agent_for_the_node_is_refused(
        self, team: list[ChatAgent]
    ) -> None:
        with pytest.raises(ChatError, match="role_map: no agent plays 'reviewer'"):
            select_targets("workflow", None, team, {"coder": "alice"}, ModeState("reviewer"))

    def test_a_role_map_naming_an_unknown_agent_is_refused(self, team: list[ChatAgent]) -> None:
        with pytest.raises(UnknownAgentError, match=r"role_map\['coder'\]: unknown agent 'zed'"):
            select_targets("workflow", None, team, {"coder": "zed"})

    def test_a_role_map_naming_an_unknown_node_is_refused(self, team: list[ChatAgent]) -> None:
        with pytest.raises(ChatError, match=r"unknown node.*'designer'"):
            select_targets("workflow", None, team, {"coder": "alice", "designer": "bob"})

    @pytest.mark.parametrize(
        ("state", "message"),
        [
            ({"current_node": "deployer"}, "unknown node 'deployer'"),
            ({"current_node": "coder", "cycles": -1}, "cycles: must be an integer >= 0"),
            ({"node": "coder"}, "unknown key"),
            ("coder", "must be a JSON object"),
        ],
    )
    def test_a_malformed_mode_state_is_refused(
        self, team: list[ChatAgent], team_roles: dict[str, str], state: object, message: str
    ) -> None:
        with pytest.raises(ChatError, match=message):
            select_targets("workflow", None, team, team_roles, state)  # type: ignore[arg-type]
