"""Each chunk's tokens in a state, counted once per builder and tokenizer.

The counts live in the builder (its cache of the state's shared history),
so a state that grows by appending is counted only for its new chunks.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Protocol

from memctx._chunk import Chunk
from memctx._state import MemoryState
from memctx.typing import Tokenizer


class TokenCounter(Protocol):
    """What is needed of a :class:`~memctx.ContextBuilder` to count chunks."""

    def token_counts(self, state: MemoryState, tokenizer: Tokenizer) -> dict[int, int]: ...

    def seed_token_counts(
        self, state: MemoryState, tokenizer: Tokenizer, counts: Mapping[int, int]
    ) -> None: ...

    def tokens(self, chunk: Chunk, tokenizer: Tokenizer) -> int: ...


def chunk_tokens(builder: TokenCounter, state: MemoryState, tokenizer: Tokenizer) -> list[int]:
    """The tokens of each chunk's rendered segment, in state order."""
    known = builder.token_counts(state, tokenizer)
    if len(known) < len(state):
        missing = {
            position: builder.tokens(state[position], tokenizer)
            for position in range(len(state))
            if position not in known
        }
        builder.seed_token_counts(state, tokenizer, missing)
        known.update(missing)
    return [known[position] for position in range(len(state))]
