"""Snapshots of the bundled example: its rendering, and builds under several budgets.

Reviewers read these files to see exactly what the example agent would send.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from memctx import MemoryState, create_builder, create_tokenizer, load_state

EXAMPLE = Path(__file__).parent.parent / "examples" / "coding_agent.json"


@pytest.fixture(scope="module")
def example() -> MemoryState:
    return load_state(EXAMPLE)


def test_example_renders(example: MemoryState, context_snapshot: Any) -> None:
    builder = create_builder()
    rendered = "\n".join(
        f"<!-- {chunk.id}: role {builder.render(chunk)[0]} -->\n{builder.render(chunk)[1]}"
        for chunk in example
    )
    assert context_snapshot == rendered


@pytest.mark.parametrize("model", ["gpt-4o", "gpt-4", "estimate"])
@pytest.mark.parametrize("budget", [450, 800, None], ids=["450", "800", "unlimited"])
def test_example_builds(
    example: MemoryState, context_snapshot: Any, model: str, budget: int | None
) -> None:
    result = create_builder().build(
        example,
        max_tokens=budget,
        tokenizer=create_tokenizer(model),
        system_prompt="You are an expert TypeScript developer.",
    )
    assert context_snapshot == result
