"""Fixtures of the replay tests: the bundled model profiles."""

from __future__ import annotations

import pytest

from memctx.policy import ModelProfile, model_profile


@pytest.fixture(scope="session")
def sonnet() -> ModelProfile:
    """claude-sonnet-4-6: 1,024-token minimum, 4 marks, 20-block lookback, $3 / M input."""
    return model_profile("claude-sonnet-4-6")


@pytest.fixture(scope="session")
def gpt4o_profile() -> ModelProfile:
    """gpt-4o: automatic from 1,024 tokens in 128-token steps, cached input at 0.5x, $2.5 / M."""
    return model_profile("gpt-4o")


@pytest.fixture(scope="session")
def gemini_pro() -> ModelProfile:
    """gemini-2.5-pro: implicit from 4,096 tokens, cached input at 0.25x, $1.25 / M."""
    return model_profile("gemini-2.5-pro")
