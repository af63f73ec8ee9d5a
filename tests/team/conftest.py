"""Fixtures of the team-conversation tests: a team and its members."""

from __future__ import annotations

import pytest

from memctx.team import Speaker, TeamConversation

LENA = Speaker("lena", "Lena", "human")
CODER = Speaker("coder", "Coder", "ai")
REVIEWER = Speaker("reviewer", "Reviewer", "ai")


@pytest.fixture
def team() -> TeamConversation:
    """An empty in-memory team conversation with the default settings."""
    return TeamConversation()


@pytest.fixture
def lena() -> Speaker:
    """The human of the team."""
    return LENA


@pytest.fixture
def coder() -> Speaker:
    """An AI agent that writes code."""
    return CODER


@pytest.fixture
def reviewer() -> Speaker:
    """An AI agent that reviews it."""
    return REVIEWER
