"""examples/chat_workflow.py runs, and its session goes coder, reviewer, tester, coder."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from types import ModuleType

import pytest

from memctx.store import MemoryStore

EXAMPLE = Path(__file__).parent.parent.parent / "examples" / "chat_workflow.py"


@pytest.fixture(scope="module")
def example() -> ModuleType:
    spec = importlib.util.spec_from_file_location("chat_workflow", EXAMPLE)
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_rounds_walk_the_chain_and_start_again_on_a_follow_up(example: ModuleType) -> None:
    with MemoryStore.open("sqlite://") as store:
        rounds = example.run(store)
        history = store.thread_metadata("wc-task")

    assert [r.agent_ids for r in rounds] == [("alice",), ("bob",), ("carol",), ("alice",)]
    assert [r.context.targets.node for r in rounds] == ["coder", "reviewer", "tester", "coder"]
    assert history["mode_state"] == {"current_node": "reviewer", "cycles": 1}


def test_the_coder_sees_the_follow_up_once_and_the_whole_task(example: ModuleType) -> None:
    with MemoryStore.open("sqlite://") as store:
        last = example.run(store)[-1]

    history = [m.content for m in last.context.prompt_history]
    assert "Count lines too, like wc -l." not in history
    assert last.context.prompt_user_text == "Count lines too, like wc -l."
    assert last.context.workflow_task_prompt.endswith("1. Count lines too, like wc -l.")


def test_main_prints_the_rounds_and_a_prompt(
    example: ModuleType, capsys: pytest.CaptureFixture[str]
) -> None:
    example.main()

    out = capsys.readouterr().out
    assert out.startswith(
        "round 1: coder -> alice\nround 2: reviewer -> bob\nround 3: tester -> carol\n"
        "round 4: coder -> alice\n"
    )
    assert "You are Coder Cat (@alice)." in out
