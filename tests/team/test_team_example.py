"""examples/team_review.py: a person, a coder and a reviewer routed by [NEXT:…] markers."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from memctx.snapshot import MessagesSnapshotExtension
from memctx.team import TeamConversation

EXAMPLE = Path(__file__).parent.parent.parent / "examples" / "team_review.py"


@pytest.fixture
def example() -> ModuleType:
    """The example, loaded afresh (its scripted agents are used up by one run)."""
    spec = importlib.util.spec_from_file_location("team_review", EXAMPLE)
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_review_is_routed_by_next_markers_and_ends_with_the_person(
    example: ModuleType,
) -> None:
    team = TeamConversation(window_size=4)
    shown: list[str] = []

    turns = example.run_review(team, shown.append)

    assert turns == ["coder", "reviewer", "coder", "reviewer"]
    assert [m.speaker.role_id for m in team.messages] == ["lena", *turns]
    assert [m.addressees for m in team.messages] == [
        ("coder",),
        ("reviewer",),
        ("coder",),
        ("reviewer",),
        ("lena",),
    ]
    assert team.team_task == example.TASK


def test_each_agent_gets_its_own_layout_without_routing_markers(example: ModuleType) -> None:
    shown: list[str] = []

    example.run_review(TeamConversation(window_size=4), shown.append)

    prompts = [text for text in shown if not text.startswith(("=====", "--append"))]
    assert len(prompts) == 4
    # The instructions teach the agents the markers; no message shows one.
    messages = [p.replace(example.REVIEWER.system_instruction, "") for p in prompts]
    assert all("[NEXT:" not in p and "[FROM:" not in p for p in messages)
    assert prompts[0].startswith("<team_task>")  # Claude Code: XML sections
    assert prompts[1].startswith("# Instructions")  # Codex: Markdown, instructions first
    assert "--append-system-prompt: You write the code." in shown[1]


def test_the_example_prints_what_the_agents_receive(
    example: ModuleType, capsys: pytest.CaptureFixture[str], snapshot: Any
) -> None:
    example.main()

    assert snapshot.use_extension(MessagesSnapshotExtension) == capsys.readouterr().out


def test_the_example_runs_as_a_script() -> None:
    done = subprocess.run(
        [sys.executable, str(EXAMPLE)], capture_output=True, text=True, check=False, timeout=120
    )

    assert done.returncode == 0, done.stderr
    assert "turns: coder → reviewer → coder → reviewer; back to Lena" in done.stdout
