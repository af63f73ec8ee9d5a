"""Shared fixtures for the memctx test suite."""

from __future__ import annotations

import datetime as dt
import os
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import settings

from chromium import Chromium, find_chromium
from media import make_pdf, make_png
from memctx import ContextBuilder, MemoryState, chunks, create_builder, create_tokenizer
from memctx._render.tokens import EstimatingTokenizer, TiktokenTokenizer

FIXED_TIME = dt.datetime(2026, 1, 2, 3, 4, 5, tzinfo=dt.UTC)

# Hypothesis's profile: its own ("default", or "ci" when $CI is set: the same examples every
# run), or one named by $HYPOTHESIS_PROFILE (or --hypothesis-profile). "slow" is the active one
# with ten times the examples: each property's own number, strategies.examples(n), times ten.
settings.register_profile("slow", settings.default, max_examples=1000, deadline=None)
if os.environ.get("HYPOTHESIS_PROFILE"):
    settings.load_profile(os.environ["HYPOTHESIS_PROFILE"])


@pytest.fixture(scope="session")
def gpt4o() -> TiktokenTokenizer:
    """The exact o200k_base tokenizer (built once per test session)."""
    tokenizer = create_tokenizer("gpt-4o")
    assert isinstance(tokenizer, TiktokenTokenizer)
    return tokenizer


@pytest.fixture(scope="session")
def gpt4() -> TiktokenTokenizer:
    """The exact cl100k_base tokenizer."""
    tokenizer = create_tokenizer("gpt-4")
    assert isinstance(tokenizer, TiktokenTokenizer)
    return tokenizer


@pytest.fixture
def estimator() -> EstimatingTokenizer:
    return EstimatingTokenizer()


@pytest.fixture
def builder() -> ContextBuilder:
    """A builder with the installed renderer plugins and no custom renderer."""
    return create_builder()


@pytest.fixture
def coding_state() -> MemoryState:
    """A small, realistic agent history with fixed ids and times."""
    t = {"created_at": FIXED_TIME}
    return MemoryState(
        [
            chunks.system("You are a careful coding agent.", id="sys", **t),
            chunks.user("Fix the failing test in main.ts.", id="task", **t),
            chunks.thinking("I should read the file first.", id="think1", **t),
            chunks.tool_call("read_file", {"path": "/src/main.ts"}, call_id="c1", id="call1", **t),
            chunks.tool_result("read_file", "export const x = 1;\n", call_id="c1", id="res1", **t),
            chunks.spawn_subagent("r1", "researcher", "Find the spec for x", id="spawn", **t),
            chunks.subagent_result("r1", "x must be 2", id="sub_res", **t),
            chunks.tool_call(
                "write_file",
                {"path": "/src/main.ts", "text": "x = 2"},
                call_id="c2",
                id="call2",
                **t,
            ),
            chunks.tool_result("write_file", "ok", call_id="c2", id="res2", **t),
            chunks.assistant("Fixed: x is now 2.", id="answer", **t),
        ],
        thread_id="t-coding",
    )


@pytest.fixture
def fresh_directory(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """An empty working directory whose default store is a file in it (for the docs' examples)."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("MEMCTX_DATABASE_URL", f"sqlite:///{tmp_path / 'memory.db'}")
    return tmp_path


@pytest.fixture(scope="session")
def chromium() -> Iterator[Chromium]:
    """One headless Chromium for the session's browser tests.

    Skipped when Chromium is not installed, except under ``CI``, where that fails.
    """
    executable = find_chromium()
    if executable is None:
        if os.environ.get("CI"):
            pytest.fail("chromium is not installed; CI must run the browser tests")
        pytest.skip("chromium is not installed (apt-get install chromium)")
    browser = Chromium(executable)
    yield browser
    browser.close()


@pytest.fixture(scope="session")
def png() -> bytes:
    """A 1000 x 1000 PNG."""
    return make_png()


@pytest.fixture(scope="session")
def pdf() -> bytes:
    """A two-page PDF."""
    return make_pdf()
