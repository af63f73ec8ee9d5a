"""parse_mentions: which agents a message names, and the clean text."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from memctx import ChatError
from memctx.chat import AgentLookup, ChatAgent, Mentions, parse_mentions
from strategies import chat_agents, chat_texts


def mentions(text: str, lookup: AgentLookup) -> tuple[tuple[str, ...], str]:
    found = parse_mentions(text, lookup)
    return found.agent_ids, found.clean_text


class TestWhatIsAMention:
    def test_names_nicknames_and_aliases_in_any_case_each_agent_once_in_order(
        self, cat_lookup: AgentLookup
    ) -> None:
        found = parse_mentions("@牛奶 @Coffee 帮我看下，@牛奶 再补充", cat_lookup)

        assert found == Mentions(("silver", "abyssinian"), "帮我看下，再补充")

    def test_an_alias_as_in_the_design(self) -> None:
        agents = [ChatAgent("coder", "Coder Cat", aliases=("cc", "程序猫"))]

        assert parse_mentions("@cc please fix it", agents) == Mentions(("coder",), "please fix it")

    def test_a_cjk_name_needs_no_space_before_or_after(self, cat_lookup: AgentLookup) -> None:
        assert mentions("请@牛奶看下这个", cat_lookup) == (("silver",), "请看下这个")

    def test_a_latin_name_may_follow_cjk_text_directly(self, cat_lookup: AgentLookup) -> None:
        assert mentions("请@Milk看下", cat_lookup) == (("silver",), "请看下")

    def test_a_name_with_a_space_is_matched_whole(self, team: list[ChatAgent]) -> None:
        assert mentions("@coder cat fix it", AgentLookup(team)) == (("alice",), "fix it")

    def test_the_longest_name_wins(self) -> None:
        lookup = AgentLookup([ChatAgent("a", "Coder"), ChatAgent("b", "Coder Cat")])

        assert mentions("@Coder Cat go", lookup) == (("b",), "go")
        assert mentions("@Coder Cats go", lookup) == (("a",), "Cats go")

    def test_mentions_written_back_to_back_are_all_found(self, cat_lookup: AgentLookup) -> None:
        assert mentions("@Milk@Coffee@Billy go", cat_lookup) == (
            ("silver", "abyssinian", "garfield"),
            "go",
        )

    @pytest.mark.parametrize(
        "text",
        [
            "write to bob@milk.com",
            "write to milk@Coffee.org",
            "ping me at someone@Billy",
            "x@牛奶",
        ],
    )
    def test_an_e_mail_address_is_not_a_mention(self, cat_lookup: AgentLookup, text: str) -> None:
        assert mentions(text, cat_lookup) == ((), text)

    @pytest.mark.parametrize(
        "text", ["@nobody hello", "@ Milk", "@Milky way", "@Milk_2 hi", "@Milk.com", "@Milk-bot"]
    )
    def test_an_unknown_word_after_at_is_not_a_mention_and_stays(
        self, cat_lookup: AgentLookup, text: str
    ) -> None:
        assert mentions(text, cat_lookup) == ((), text)

    def test_punctuation_may_follow_a_mention(self, cat_lookup: AgentLookup) -> None:
        assert mentions("thanks @Milk! and @Billy.", cat_lookup) == (
            ("silver", "garfield"),
            "thanks! and.",
        )

    def test_unknown_mentions_stay_beside_known_ones(self, cat_lookup: AgentLookup) -> None:
        assert mentions("hi @nobody @Milk, ok", cat_lookup) == (("silver",), "hi @nobody, ok")

    def test_takes_a_sequence_of_agents_too(self, cats: list[ChatAgent]) -> None:
        assert parse_mentions("@Billy", cats).agent_ids == ("garfield",)

    def test_refuses_what_is_not_text(self, cat_lookup: AgentLookup) -> None:
        with pytest.raises(ChatError, match="text: must be a string"):
            parse_mentions(None, cat_lookup)  # type: ignore[arg-type]


class TestCleanText:
    @pytest.mark.parametrize(
        ("text", "clean"),
        [
            ("@Billy  帮我写个测试", "帮我写个测试"),
            ("fix this @Milk", "fix this"),
            ("please @Milk fix this", "please fix this"),
            ("please  @Milk \t @Coffee  fix", "please fix"),
            ("one\n@Milk\ntwo", "one\ntwo"),
            ("one\r\n@Milk @Coffee\r\ntwo", "one\r\ntwo"),
            ("@Milk\n  indented code\n", "indented code"),
            ("code:\n    x  =  1\n@Milk", "code:\n    x  =  1"),
        ],
    )
    def test_whitespace_around_mentions_is_tidied_and_the_rest_kept(
        self, cat_lookup: AgentLookup, text: str, clean: str
    ) -> None:
        assert parse_mentions(text, cat_lookup).clean_text == clean

    def test_text_of_only_mentions_is_empty(self, cat_lookup: AgentLookup) -> None:
        assert mentions("  @Milk @Coffee  ", cat_lookup) == (("silver", "abyssinian"), "")

    def test_a_mention_uncovered_by_removing_another_is_a_mention_too(
        self, cat_lookup: AgentLookup
    ) -> None:
        assert mentions("@@Milk Billy", cat_lookup) == (("silver", "garfield"), "")


class TestProperties:
    @given(st.data())
    def test_never_returns_an_id_that_is_not_an_agent_nor_twice(self, data: st.DataObject) -> None:
        agents = data.draw(chat_agents())
        found = parse_mentions(data.draw(chat_texts(agents)), agents)

        assert set(found.agent_ids) <= {agent.id for agent in agents}
        assert len(set(found.agent_ids)) == len(found.agent_ids)

    @given(st.data())
    def test_the_clean_text_holds_no_mention(self, data: st.DataObject) -> None:
        agents = data.draw(chat_agents())
        clean = parse_mentions(data.draw(chat_texts(agents)), agents).clean_text

        assert parse_mentions(clean, agents) == Mentions((), clean)

    @given(st.data())
    def test_a_name_written_after_at_between_spaces_is_always_found(
        self, data: st.DataObject
    ) -> None:
        agents = data.draw(chat_agents())
        agent = data.draw(st.sampled_from(agents))
        name = data.draw(st.sampled_from(agent.names))
        before = data.draw(chat_texts(agents))
        after = data.draw(chat_texts(agents))

        found = parse_mentions(f"{before} @{name} {after}", agents)

        assert agent.id in found.agent_ids

    @given(st.data())
    def test_text_without_at_sign_is_only_stripped(self, data: st.DataObject) -> None:
        agents = data.draw(chat_agents())
        text = data.draw(chat_texts(agents)).replace("@", "")

        assert parse_mentions(text, agents) == Mentions((), text.strip())


def test_a_name_whose_case_folding_is_longer_is_found_as_written() -> None:
    """``ß`` folds to ``ss``: the text is matched over the name's own length."""
    agents = [ChatAgent("de", "Straße", aliases=("ß",))]

    assert parse_mentions("@ß hi @STRASSE @straße", agents) == Mentions(("de",), "hi")
