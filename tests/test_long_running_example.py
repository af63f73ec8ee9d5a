"""The long-running example: its compactions and final summary, snapshot-tested."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from memctx import MemoryState, load_state
from memctx.compaction import is_compaction_summary

EXAMPLES = Path(__file__).parent.parent / "examples"


@pytest.fixture(scope="module")
def example() -> ModuleType:
    spec = importlib.util.spec_from_file_location(
        "long_running_agent", EXAMPLES / "long_running_agent.py"
    )
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def replayed(example: ModuleType) -> tuple[MemoryState, list[str]]:
    log: list[str] = []
    return example.replay(log), log


def test_the_bundled_final_state_is_what_the_example_makes(
    replayed: tuple[MemoryState, list[str]],
) -> None:
    assert load_state(EXAMPLES / "long_running_agent.json") == replayed[0]


def test_the_compactions(replayed: tuple[MemoryState, list[str]], context_snapshot: Any) -> None:
    assert context_snapshot == "\n".join(replayed[1])


def test_the_final_summary(replayed: tuple[MemoryState, list[str]], context_snapshot: Any) -> None:
    """The newest summary, and the text of all (each compaction appends one)."""
    summaries = [chunk for chunk in replayed[0] if is_compaction_summary(chunk)]
    assert context_snapshot == summaries[-1]
    assert context_snapshot(name="text") == "\n\n".join(s.text for s in summaries)
