"""Fixtures of the chat tests: a cat café of three agents, and a coding team of three."""

from __future__ import annotations

import pytest

from memctx.chat import AgentLookup, ChatAgent


@pytest.fixture
def cats() -> list[ChatAgent]:
    """Three agents with Chinese names, nicknames and Latin aliases."""
    return [
        ChatAgent("silver", "银渐层", aliases=("牛奶", "Milk"), persona="Careful and calm."),
        ChatAgent("abyssinian", "阿比西尼亚", aliases=("咖啡", "Coffee"), persona="Quick."),
        ChatAgent("garfield", "加菲猫", aliases=("Billy",), persona="Lazy but precise."),
    ]


@pytest.fixture
def cat_lookup(cats: list[ChatAgent]) -> AgentLookup:
    return AgentLookup(cats)


@pytest.fixture
def team() -> list[ChatAgent]:
    """A coder, a reviewer and a tester (ids differ from the workflow's node names)."""
    return [
        ChatAgent("alice", "Coder Cat", aliases=("cc", "程序猫"), persona="Writes the code."),
        ChatAgent("bob", "Review Cat", aliases=("rc",), persona="Reviews every change."),
        ChatAgent("carol", "Test Cat", aliases=("tc",), persona="Tests what was built."),
    ]


@pytest.fixture
def team_roles() -> dict[str, str]:
    return {"coder": "alice", "reviewer": "bob", "tester": "carol"}
