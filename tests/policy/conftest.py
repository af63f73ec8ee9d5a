"""Fixtures of the policy tests."""

from __future__ import annotations

import pytest
from policy_runs import run_of

from memctx import MemoryState


@pytest.fixture
def long_run() -> MemoryState:
    """A task and 30 calls with outputs of ~400 tokens."""
    return run_of(30)
