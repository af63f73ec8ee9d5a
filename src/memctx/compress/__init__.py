"""Compression: make a state smaller without losing its shape.

```python
from memctx.compress import compress, MaxChunks, MaxChars, TrimToolOutputs

state2, report = compress(state, [MaxChunks(20), MaxChars(4000),
                                  TrimToolOutputs(keep_recent=3, max_chars=500)])
```

A compressor keeps a chunk, drops it, or replaces it by a new chunk (its own
id) whose ``metadata.derived_from`` names the chunk it stands for. Units (a
call and its results, a spawn and its results) are never split; SYSTEM
chunks, pinned chunks and calls still waiting for their result are never
dropped or changed. Write your own: any callable ``state -> state`` that
keeps these rules (:func:`compress` checks them).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

from memctx._build.builder import counts_of
from memctx._build.compress_report import ChunkChange, CompressionReport
from memctx._build.compress_step import apply_compressors
from memctx._build.default import default_builder
from memctx._exceptions import CompressionError
from memctx._state import MemoryState
from memctx._units import history_shape
from memctx._validators import check_counting_tools
from memctx.compress._compressors import (
    MaxChars,
    MaxChunks,
    TrimToolOutputs,
    derived_chunk,
)
from memctx.typing import Compressor, Tokenizer

if TYPE_CHECKING:
    from memctx._build.builder import ContextBuilder

__all__ = [
    "ChunkChange",
    "CompressionReport",
    "Compressor",
    "MaxChars",
    "MaxChunks",
    "TrimToolOutputs",
    "compress",
    "derived_chunk",
    "protected_ids",
]


def protected_ids(state: MemoryState) -> frozenset[str]:
    """Ids of the chunks no compressor may drop or change.

    SYSTEM chunks, pinned chunks, calls and spawns still waiting for their
    result, and every other member of their units.
    """
    chunks = state.chunks
    return frozenset(chunks[i].id for i in history_shape(chunks).protected)


def compress(
    state: MemoryState,
    compressors: Iterable[Compressor],
    *,
    tokenizer: Tokenizer | None = None,
    builder: ContextBuilder | None = None,
) -> tuple[MemoryState, CompressionReport]:
    """Run ``compressors`` over ``state`` in order; return the new state and a report.

    Each compressor's result is checked (see :class:`~memctx.typing.Compressor`).
    A chunk replaced twice (cut, then trimmed) ends up as one chunk whose
    ``derived_from`` names the original. Tokens are counted with
    ``tokenizer`` (the builder's by default) over each chunk's rendering by
    ``builder`` (a default builder when not given).
    """
    check_counting_tools(tokenizer, builder, CompressionError)
    builder = builder if builder is not None else default_builder()
    tok = tokenizer if tokenizer is not None else builder.tokenizer
    return apply_compressors(state, compressors, tokenizer=tok, counter=counts_of(builder))
