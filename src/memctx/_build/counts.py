"""What the store, compression and compaction need of a builder's caches: one interface.

A builder's counts live in its cache of each shared history, so a state that
grows by appending is counted only for its new chunks. :class:`BuilderCounts`
is the only way in from outside the build (``counts_of(builder)``): the counts
a builder knows of a state, counts to seed from a store, a chunk's rendering
and count, and the fingerprint under which persisted counts stay valid.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Protocol

from memctx._build.cache import BuildCaches, CountKey, HistoryCache
from memctx._build.chunk_costs import ChunkCosts
from memctx._build.options import BuildOptions
from memctx._build.select_stable import StableStart
from memctx._chunk import Chunk
from memctx._render.rendering import XmlRendering
from memctx._render.segments import RenderedChunk
from memctx._state import MemoryState
from memctx.typing import Tokenizer


class TokenCounter(Protocol):
    """What compression needs to count chunks (a :class:`BuilderCounts` fits)."""

    def token_counts(self, state: MemoryState, tokenizer: Tokenizer) -> dict[int, int]: ...

    def seed_token_counts(
        self, state: MemoryState, tokenizer: Tokenizer, counts: Mapping[int, int]
    ) -> None: ...

    def tokens(self, chunk: Chunk, tokenizer: Tokenizer) -> int: ...


class BuilderCounts:
    """One builder's renderings and token counts, as the store and compression use them."""

    __slots__ = ("_caches", "_count_key", "_fingerprint", "_rendering")

    def __init__(
        self,
        caches: BuildCaches,
        rendering: XmlRendering,
        count_key: Callable[[Tokenizer], tuple[CountKey, bool]],
        fingerprint: Callable[[], str],
    ) -> None:
        self._caches = caches
        self._rendering = rendering
        self._count_key = count_key
        self._fingerprint = fingerprint

    @property
    def renderer_fingerprint(self) -> str:
        """Names the renderer chain and its configuration: persisted counts are valid only
        under the same one (and the same tokenizer ``cache_key``)."""
        return self._fingerprint()

    def render_chunk(self, chunk: Chunk) -> RenderedChunk:
        """``chunk``'s role, segment and replaced characters, as a build renders it."""
        return self._rendering.render_chunk(chunk)

    def tokens(self, chunk: Chunk, tokenizer: Tokenizer) -> int:
        """Tokens of ``chunk``'s segment (its XML and the newline after it)."""
        return tokenizer.count(self._rendering.render_chunk(chunk).segment)

    def costs(self, cache: HistoryCache, items: list[Chunk], tokenizer: Tokenizer) -> ChunkCosts:
        """The cached costs of one history's chunks under ``tokenizer``."""
        count_key, adds_up = self._count_key(tokenizer)
        return ChunkCosts(
            cache,
            items,
            renderer=self._rendering,
            tokenizer=tokenizer,
            count_key=count_key,
            adds_up=adds_up,
        )

    def token_counts(self, state: MemoryState, tokenizer: Tokenizer) -> dict[int, int]:
        """Token counts of ``state``'s chunks the builder knows, by position."""
        history = state.shared_history
        with history.lock:
            costs = self.costs(self._caches.for_history(history), history.items, tokenizer)
            return costs.known_counts(len(state))

    def seed_token_counts(
        self, state: MemoryState, tokenizer: Tokenizer, counts: Mapping[int, int]
    ) -> None:
        """Record counts known from elsewhere (a store's cache), by position, so they are
        not counted again; only counts made under the same :attr:`renderer_fingerprint`
        and tokenizer ``cache_key``."""
        history = state.shared_history
        with history.lock:
            costs = self.costs(self._caches.for_history(history), history.items, tokenizer)
            for position, tokens in counts.items():
                if 0 <= position < len(state):
                    costs.seed(position, tokens)

    def stable_lowest(
        self, state: MemoryState, options: BuildOptions, tokenizer: Tokenizer
    ) -> int | None:
        """The lowest position the last ``stable`` build of ``state`` with ``options`` read
        (what lies below it changes nothing but through the pinned chunks); None when
        there was no such build."""
        history = state.shared_history
        with history.lock:
            last = self._caches.for_history(history).by_options.get(
                (options, self._count_key(tokenizer)[0])
            )
        if last is None or last.length != len(state) or not isinstance(last.memory, StableStart):
            return None
        return last.memory.lowest

    def cached_tokens(self, chunk: Chunk, tokenizer: Tokenizer) -> int | None:
        """The count of ``chunk``'s segment if a build of a live state holding it counted it."""
        for history, cache in self._caches.histories():
            position = history.ids.get(chunk.id)
            if position is None or history.items[position] is not chunk:
                continue
            with history.lock:
                found = self.costs(cache, history.items, tokenizer).known_tokens(position)
            if found is not None:
                return found
        return None


def chunk_tokens(counter: TokenCounter, state: MemoryState, tokenizer: Tokenizer) -> list[int]:
    """The tokens of each chunk's rendered segment, in state order."""
    known = counter.token_counts(state, tokenizer)
    if len(known) < len(state):
        missing = {
            position: counter.tokens(state[position], tokenizer)
            for position in range(len(state))
            if position not in known
        }
        counter.seed_token_counts(state, tokenizer, missing)
        known.update(missing)
    return [known[position] for position in range(len(state))]
