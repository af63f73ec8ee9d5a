"""ChatAgent and AgentLookup: names, nicknames and aliases, case-insensitive, any script."""

from __future__ import annotations

import pytest

from memctx import ChatError, MemctxError, UnknownAgentError
from memctx.chat import AgentLookup, ChatAgent


class TestChatAgent:
    def test_display_name_defaults_to_the_id(self) -> None:
        assert ChatAgent("coder").display_name == "coder"

    def test_names_are_id_display_name_and_aliases_without_repeats(self) -> None:
        agent = ChatAgent("coder", "Coder Cat", aliases=("cc", "coder", "程序猫"))

        assert agent.names == ("coder", "Coder Cat", "cc", "程序猫")

    def test_surrounding_whitespace_of_names_is_dropped(self) -> None:
        agent = ChatAgent("coder", "  Coder Cat ", aliases=(" cc\u3000",))

        assert (agent.display_name, agent.aliases) == ("Coder Cat", ("cc",))

    @pytest.mark.parametrize("bad_id", ["", "two words", " coder", "a@b", "line\nbreak"])
    def test_an_id_must_be_one_word_without_at_sign(self, bad_id: str) -> None:
        with pytest.raises(ChatError, match="id"):
            ChatAgent(bad_id)

    @pytest.mark.parametrize("alias", ["", "   ", "c@t", "two\nlines"])
    def test_an_alias_must_be_a_non_empty_name_without_at_sign_or_line_break(
        self, alias: str
    ) -> None:
        with pytest.raises(ChatError, match=r"aliases\[0\]"):
            ChatAgent("coder", aliases=(alias,))

    def test_aliases_given_as_one_string_are_refused(self) -> None:
        """A string is a sequence of characters; taking each one as an alias would be a bug."""
        with pytest.raises(ChatError, match="aliases"):
            ChatAgent("coder", aliases="cc")  # type: ignore[arg-type]

    def test_round_trips_through_a_dict(self) -> None:
        agent = ChatAgent("coder", "Coder Cat", aliases=("cc",), persona="Writes code.")

        assert ChatAgent.from_dict(agent.to_dict()) == agent

    def test_from_dict_refuses_unknown_fields_and_a_missing_id(self) -> None:
        with pytest.raises(ChatError, match="'role'"):
            ChatAgent.from_dict({"id": "coder", "role": "x"})
        with pytest.raises(ChatError, match="'id' is required"):
            ChatAgent.from_dict({"display_name": "Coder"})

    def test_is_immutable(self) -> None:
        agent = ChatAgent("coder")

        with pytest.raises(AttributeError):
            agent.id = "other"  # type: ignore[misc]


class TestAgentLookup:
    def test_finds_an_agent_by_id_display_name_nickname_and_alias(
        self, cat_lookup: AgentLookup
    ) -> None:
        found = [cat_lookup[name].id for name in ("silver", "银渐层", "牛奶", "Milk")]

        assert found == ["silver"] * 4

    @pytest.mark.parametrize("name", ["coffee", "COFFEE", "CoFfEe", "Coffee"])
    def test_is_case_insensitive(self, cat_lookup: AgentLookup, name: str) -> None:
        assert cat_lookup[name].id == "abyssinian"

    def test_folds_case_beyond_ascii(self) -> None:
        lookup = AgentLookup([ChatAgent("greek", aliases=("ΣΟΦΙΑ",)), ChatAgent("de", "Straße")])

        assert (lookup["σοφια"].id, lookup["STRASSE"].id) == ("greek", "de")

    def test_an_unknown_name_is_not_found(self, cat_lookup: AgentLookup) -> None:
        assert cat_lookup.get("dog") is None
        assert "dog" not in cat_lookup

    def test_agent_by_id_raises_unknown_agent_error_listing_the_agents(
        self, cat_lookup: AgentLookup
    ) -> None:
        with pytest.raises(UnknownAgentError) as caught:
            cat_lookup.agent("dog")

        assert isinstance(caught.value, MemctxError)
        assert isinstance(caught.value, LookupError)
        assert caught.value.known == ("silver", "abyssinian", "garfield")
        assert str(caught.value) == (
            "unknown agent 'dog'; the agents are silver, abyssinian, garfield"
        )

    def test_keeps_the_agents_order(self, cats: list[ChatAgent]) -> None:
        lookup = AgentLookup(reversed(cats))

        assert lookup.ids == ("garfield", "abyssinian", "silver")

    def test_two_agents_with_one_id_are_refused(self) -> None:
        with pytest.raises(ChatError, match="two agents have the id 'coder'"):
            AgentLookup([ChatAgent("coder"), ChatAgent("coder", "Other")])

    def test_a_name_shared_by_two_agents_is_refused_whatever_its_case(self) -> None:
        with pytest.raises(ChatError, match="'CC' is used by 'coder' and 'checker'"):
            AgentLookup([ChatAgent("coder", aliases=("cc",)), ChatAgent("checker", "CC")])

    def test_refuses_what_is_not_an_agent(self) -> None:
        with pytest.raises(ChatError, match="expected ChatAgent, got dict"):
            AgentLookup([{"id": "coder"}])  # type: ignore[list-item]
