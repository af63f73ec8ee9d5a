"""What two store builds must agree on to be the same build, for a user."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from memctx import ContextBuildResult
from memctx.store import MemoryStore


def fresh_build(open_store: Callable[[], MemoryStore], thread_id: str, **options: Any) -> Any:
    """What a newly opened store builds (it reads the thread cold)."""
    other = open_store()
    try:
        return other.build(thread_id, **options)
    finally:
        other.close()


def same_build(result: ContextBuildResult, expected: ContextBuildResult) -> None:
    """The parts of a build a user relies on are equal."""
    assert result.messages == expected.messages
    assert result.token_count == expected.token_count
    assert result.token_count_exact == expected.token_count_exact
    assert result.included_chunk_ids == expected.included_chunk_ids
    assert result.excluded_chunk_ids == expected.excluded_chunk_ids
    reasons = {i: e.reason for i, e in result.exclusions.items()}
    assert reasons == {i: e.reason for i, e in expected.exclusions.items()}
    assert result.chunk_tokens == expected.chunk_tokens
    assert result.included_chunks == expected.included_chunks
