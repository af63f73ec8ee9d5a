"""Building a thread through the store: cached token counts in, counts and an event out."""

from __future__ import annotations

from collections.abc import Callable
from contextlib import AbstractContextManager
from typing import Any

from sqlmodel import Session

from memctx._builder import ContextBuilder
from memctx._options import parse_build_options
from memctx._result import ContextBuildResult
from memctx._state import MemoryState
from memctx.store._queries import get_batch, get_thread, record_event, visible_rows
from memctx.store._records import CONTEXT_BUILT
from memctx.store._schema import row_to_chunk
from memctx.store._tokencache import load_counts, renderer_key, save_counts, tokenizer_key

SessionFactory = Callable[..., AbstractContextManager[Session]]


def build_thread(
    session: SessionFactory,
    thread_id: str,
    builder: ContextBuilder,
    max_tokens: int | None,
    options: dict[str, Any],
) -> ContextBuildResult:
    """Build the thread's visible chunks with ``builder`` (see :meth:`MemoryStore.build`)."""
    opts = parse_build_options(max_tokens, options)
    tokenizer = opts.tokenizer or builder.tokenizer
    tokenizer_name = tokenizer_key(tokenizer)
    renderer_name = renderer_key(builder)
    with session(write=False) as read:
        thread = get_thread(read, thread_id)
        rows = visible_rows(read, get_batch(read, thread_id, thread.batch))
        cached: dict[int, int] = {}
        if tokenizer_name is not None:
            cached = load_counts(read, thread_id, tokenizer_name, renderer_name)
    chunks = [row_to_chunk(row) for row in rows]
    seqs = [row.seq for row in rows]
    state = MemoryState(chunks, thread_id=thread_id)
    seeds = {position: cached[seq] for position, seq in enumerate(seqs) if seq in cached}
    reused = len(seeds)
    if seeds:
        builder.seed_token_counts(state, tokenizer, seeds)
    result = builder.build(state, options=opts)
    counted: dict[int, int] = {}
    for position, count in builder.token_counts(state, tokenizer).items():
        seq = seqs[position]
        if seq not in cached:
            counted[seq] = count
    included = len(result.included_chunk_ids)
    payload = {
        "batch": thread.batch,
        "max_tokens": opts.max_tokens,
        "reserve_tokens": opts.reserve_tokens,
        "budget": opts.budget,
        "strategy": opts.strategy,
        "tokenizer": result.tokenizer_name,
        "token_count": result.token_count,
        "token_count_exact": result.token_count_exact,
        "messages": len(result.messages),
        "visible": len(chunks),
        "included": included,
        "excluded": len(chunks) - included,
        "tokens_reused": reused,
        "tokens_counted": len(counted),
    }
    with session(write=True) as write:
        get_thread(write, thread_id, lock=True)
        if tokenizer_name is not None:
            save_counts(write, thread_id, tokenizer_name, renderer_name, counted)
        record_event(write, thread_id, CONTEXT_BUILT, payload)
    return result
