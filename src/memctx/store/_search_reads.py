"""The two things a search asks the index, on each backend (see :mod:`memctx.store._search`).

- :meth:`Index.sample`: how many of the thread's chunks from a sequence number on hold
  each word (the newest chunks, from which word frequencies are estimated);
- :meth:`Index.pool`: the newest chunks holding every word of a few, or any of them.

A word goes to the database as a quoted term in a bound parameter (it holds letters and
digits only); a word of :data:`~memctx.store._search_index.MAX_WORD` characters finds the
words that begin with it. SQLite reads the thread's rowid range of its FTS5 table;
PostgreSQL the GIN entries of the thread's key-prefixed words, with sequential scans
turned off for the search's transaction (they would read every row of the table).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Final

from sqlalchemy import Connection, bindparam, text

from memctx.store._search_index import KEY_SHIFT, MAX_WORD, thread_key

_NO_SEQUENTIAL_SCANS: Final = text("SELECT set_config('enable_seqscan', 'off', true)")


class Index:
    """The index of one thread, read through ``connection`` (the search's transaction)."""

    def __init__(self, connection: Connection, thread_id: str, key: int) -> None:
        self.connection = connection
        self.thread_id = thread_id
        self.key = key
        self.postgresql = connection.dialect.name == "postgresql"

    @classmethod
    def of(cls, connection: Connection, thread_id: str) -> Index | None:
        """The thread's index; None if the thread has no search key (a corrupt database)."""
        key = thread_key(connection, thread_id)
        if key is None:
            return None
        if connection.dialect.name == "postgresql":
            connection.execute(_NO_SEQUENTIAL_SCANS)
        return cls(connection, thread_id, key)

    def _term(self, word: str) -> str:
        prefix = len(word) >= MAX_WORD
        if self.postgresql:
            return f"'{self.key}:{word}'" + (":*" if prefix else "")
        return f'"{word}"' + ("*" if prefix else "")

    def sample(self, words: Sequence[str], first_seq: int) -> list[int]:
        """Per word, how many chunks of sequence number ``first_seq`` or later hold it."""
        params: dict[str, Any] = {f"q{i}": self._term(w) for i, w in enumerate(words)}
        params["first"] = first_seq
        if self.postgresql:
            counts = ", ".join(
                f"count(*) FILTER (WHERE terms @@ CAST(:q{i} AS tsquery))"
                for i in range(len(words))
            )
            statement = f"SELECT {counts} FROM memctx_search WHERE key = :k AND seq >= :first"
            params["k"] = self.key
        else:
            statement = "SELECT " + ", ".join(
                "(SELECT count(*) FROM memctx_search WHERE memctx_search MATCH "
                f":q{i} AND rowid BETWEEN :lo + :first AND :hi)"
                for i in range(len(words))
            )
            params["lo"] = self.key * KEY_SHIFT
            params["hi"] = self.key * KEY_SHIFT + KEY_SHIFT - 1
        row = self.connection.execute(text(statement), params).one()
        return [int(n) for n in row]

    def pool(
        self, words: Sequence[str], *, every: bool, types: Sequence[str] | None, limit: int
    ) -> list[int]:
        """Sequence numbers of the newest ``limit`` chunks (of ``types``, when given) holding
        every word of ``words`` (``every``) or any of them, newest first."""
        terms = [self._term(w) for w in words]
        params: dict[str, Any] = {"n": limit}
        if self.postgresql:
            params["q"] = (" & " if every else " | ").join(terms)
            seq = "memctx_search.seq"
            statement = "SELECT seq FROM memctx_search WHERE terms @@ CAST(:q AS tsquery)"
        else:
            params["q"] = (" AND " if every else " OR ").join(terms)
            params["lo"] = self.key * KEY_SHIFT
            params["hi"] = self.key * KEY_SHIFT + KEY_SHIFT - 1
            seq = "memctx_search.rowid - :lo"
            statement = (
                "SELECT rowid - :lo FROM memctx_search WHERE memctx_search MATCH :q "
                "AND rowid BETWEEN :lo AND :hi"
            )
        if types is not None:
            statement += (
                " AND EXISTS (SELECT 1 FROM memctx_chunks AS c WHERE c.thread_id = :t "
                f"AND c.seq = {seq} AND c.type IN :types)"
            )
            params["types"] = list(types)
            params["t"] = self.thread_id
        order = "seq" if self.postgresql else "rowid"
        compiled = text(f"{statement} ORDER BY {order} DESC LIMIT :n")
        if types is not None:
            compiled = compiled.bindparams(bindparam("types", expanding=True))
        return [int(seq) for seq in self.connection.execute(compiled, params).scalars()]
