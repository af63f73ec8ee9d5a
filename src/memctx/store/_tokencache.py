"""The persisted token cache: a chunk's token count per tokenizer and renderer chain.

A build through the store seeds the builder with the counts stored for the
visible chunks and stores the counts it had to make, so a build after a
restart counts only chunks that were never counted. Counts are keyed by the
chunk (its thread and sequence number: stored chunks never change), the
tokenizer's ``cache_key`` (``tiktoken:o200k_base``, ``estimate``) and a hash
of the builder's :attr:`~memctx.ContextBuilder.renderer_fingerprint`. A
tokenizer without a ``cache_key`` is not cached.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from typing import Any

from sqlalchemy.dialects.postgresql import insert as pg_insert
from sqlalchemy.dialects.sqlite import insert as sqlite_insert
from sqlmodel import Session, col, select

from memctx._builder import ContextBuilder
from memctx.store._schema import TokenCountRow


def tokenizer_key(tokenizer: object) -> str | None:
    """The tokenizer's ``cache_key``, or ``None`` when it has none (then nothing is cached)."""
    key = getattr(tokenizer, "cache_key", None)
    return key if isinstance(key, str) and key else None


def renderer_key(builder: ContextBuilder) -> str:
    """A short, stable name for the builder's renderer chain."""
    return hashlib.sha256(builder.renderer_fingerprint.encode("utf-8")).hexdigest()[:32]


def load_counts(session: Session, thread_id: str, tokenizer: str, renderer: str) -> dict[int, int]:
    """The stored counts of a thread's chunks, by sequence number."""
    statement = select(TokenCountRow.seq, TokenCountRow.tokens).where(
        TokenCountRow.thread_id == thread_id,
        TokenCountRow.tokenizer == tokenizer,
        TokenCountRow.renderer == renderer,
    )
    return {seq: tokens for seq, tokens in session.exec(statement)}


def save_counts(
    session: Session, thread_id: str, tokenizer: str, renderer: str, counts: Mapping[int, int]
) -> None:
    """Store new counts; a count another process stored meanwhile is kept (they are equal)."""
    if not counts:
        return
    rows = [
        {
            "thread_id": thread_id,
            "seq": seq,
            "tokenizer": tokenizer,
            "renderer": renderer,
            "tokens": tokens,
        }
        for seq, tokens in sorted(counts.items())
    ]
    dialect = session.get_bind().dialect.name
    table: Any = TokenCountRow.__table__  # type: ignore[attr-defined]
    insert = pg_insert(table) if dialect == "postgresql" else sqlite_insert(table)
    statement = insert.on_conflict_do_nothing(
        index_elements=[
            col(TokenCountRow.thread_id),
            col(TokenCountRow.seq),
            col(TokenCountRow.tokenizer),
            col(TokenCountRow.renderer),
        ]
    )
    session.exec(statement, params=rows)
