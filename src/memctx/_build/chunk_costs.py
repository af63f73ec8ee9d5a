"""The costs of one history's chunks under one renderer chain and tokenizer, cached.

Roles, renderings and token counts live in the builder's :class:`HistoryCache`
(by position); :class:`ChunkCosts` reads them, and renders and counts on a
miss: a long chunk only as far as a limit needs.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Collection, Iterable, Iterator, Sequence
from typing import Final, cast

from memctx._build.cache import CountKey, HistoryCache
from memctx._chunk import Chunk, ChunkType, Role
from memctx._render.media import is_media, media_tokens
from memctx._render.rendering import XmlRendering
from memctx._render.segments import PREFIX_CHARS_PER_TOKEN, RenderedChunk, safe_split_point
from memctx.typing import Tokenizer


class ChunkCosts:
    """Roles, segments and token counts of one history's chunks, cached by position.

    ``renderer.render_chunk`` makes a chunk's :class:`RenderedChunk` on a miss. When
    the tokenizer's counts add up (``counts_add_up``), :meth:`measure_within`
    counts a long chunk in pieces cut where the counts must add up, stops
    once it is over the limit, and keeps what it counted, so a later build
    with more room goes on from there: no character is encoded twice.

    A chunk whose text is longer than :data:`LONG_CHUNK_CHARS` is not
    rendered whole to learn its role or to be measured against a limit: its
    role comes from ``renderer.role``, and its renderer's prefix
    (``renderer.render_prefix``, when it can make one) is counted first, so a
    huge chunk that cannot fit costs what the limit needs, not its length.

    An image or document chunk costs its segment (the short placeholder) plus
    its media cost by the formula of ``media_provider`` (OpenAI's when None):
    the cached counts are of the segments only, so they serve every provider.

    :meth:`count_ahead` counts the chunks a walk will likely need in batches
    (on several threads, with a tokenizer that has ``count_many``); those
    counts serve :meth:`measure` and :meth:`measure_within` exactly as a count
    of their own would, so a build returns and remembers the same either way.
    """

    __slots__ = (
        "_ahead",
        "_count",
        "_items",
        "_media",
        "_media_provider",
        "_more_than",
        "_partial",
        "_rendered",
        "_renderer",
        "_roles",
        "_tokenizer",
        "_tokens",
        "adds_up",
    )

    def __init__(
        self,
        cache: HistoryCache,
        items: list[Chunk],
        *,
        renderer: XmlRendering,
        tokenizer: Tokenizer,
        count_key: CountKey,
        adds_up: bool,
        media_provider: str | None = None,
        media_positions: Collection[int] | None = None,
    ) -> None:
        chain_key = count_key[0]  # the renderer chain's key
        rendered = cache.renderings.setdefault(chain_key, {})
        tokens = cache.counts.setdefault(count_key, {})
        self._items = items
        self._rendered = rendered
        self._tokens = tokens
        self._partial = cache.partial_counts.setdefault(count_key, {})
        self._roles = cache.long_roles.setdefault(chain_key, {})
        self._renderer = renderer
        self._count = tokenizer.count
        self._media_provider = media_provider
        # Positions of images and documents (None: not known, every chunk is checked).
        self._media = media_positions
        more_than = getattr(tokenizer, "more_than", None)
        self._more_than: Callable[..., bool] | None = more_than if callable(more_than) else None
        self.adds_up = adds_up
        self._tokenizer = tokenizer  # asked for batches only by count_ahead (cold builds)
        # Counts made ahead by count_ahead, not yet asked for: position -> tokens.
        self._ahead: dict[int, int] = {}

    def media(self, position: int) -> int:
        """The media cost of the chunk at ``position`` (0 for a chunk that is no image or
        document)."""
        if self._media is not None and position not in self._media:
            return 0
        item = self._items[position]
        if item.type is not ChunkType.AGENT or not is_media(item.action):
            return 0
        return media_tokens(item.action, item.metadata, self._media_provider)

    def rendered(self, position: int) -> RenderedChunk:
        found = self._rendered.get(position)
        if found is None:
            found = self._rendered[position] = self._renderer.render_chunk(self._items[position])
        return found

    def rendered_all(self, positions: Sequence[int]) -> list[RenderedChunk]:
        """:meth:`rendered` of each of ``positions``, in order."""
        found = list(map(self._rendered.get, positions))
        if all(found):  # each rendered before (a build renders what it groups)
            return cast("list[RenderedChunk]", found)
        return list(map(self.rendered, positions))

    def role(self, position: int) -> Role:
        """The chunk's role; rendered only when it must be counted anyway (a chunk whose
        count is known, or a long one, asks the registry instead)."""
        found = self._rendered.get(position)
        if found is not None:
            return found.role
        item = self._items[position]
        if position not in self._tokens and not _is_long(item):
            return self.rendered(position).role
        role = self._roles.get(position)
        if role is None:
            role = self._roles[position] = self._renderer.role(item)
        return role

    def known_counts(self, length: int) -> dict[int, int]:
        """Every count known of the first ``length`` chunks, by position."""
        return {p: t for p, t in self._tokens.items() if p < length}

    def known_tokens(self, position: int) -> int | None:
        """The tokens of ``position`` if they were counted (or seeded) already."""
        found = self._tokens.get(position)
        media = self._media
        if found is None or (media is not None and position not in media):
            return found
        return found + self.media(position)

    def seed(self, position: int, tokens: int) -> None:
        """Record a count known from elsewhere (a store's cache) so it is not counted again."""
        self._tokens[position] = tokens

    def measure(self, position: int) -> int:
        """Tokens of the segment at ``position`` (its XML and the newline after it), and of
        its media."""
        found = self._tokens.get(position)
        if found is None:
            found = self._ahead.pop(position, None)
            if found is None:
                found = self._count(self.rendered(position).segment)
            self._tokens[position] = found
        media = self._media
        if media is not None and position not in media:
            return found
        return found + self.media(position)

    def measure_all(self, positions: Sequence[int]) -> list[int]:
        """:meth:`measure` of each of ``positions``, in order."""
        counts = list(map(self._tokens.get, positions))
        if self._media is not None and not self._media and None not in counts:
            return cast("list[int]", counts)  # all counted, no image or document among them
        return list(map(self.measure, positions))

    def measure_within(self, position: int, limit: int) -> int | None:
        """The tokens of ``position`` if at most ``limit``; None if it cannot fit."""
        media = self.media(position)
        limit -= media
        if limit <= 0:
            return None
        tokens = self._tokens.get(position)
        if tokens is None:
            tokens = self._ahead.pop(position, None)
            if tokens is not None and (tokens <= limit or not self.adds_up):
                # What counting it now would find and keep (in pieces, it would finish).
                self._tokens[position] = tokens
                self._partial.pop(position, None)
            elif self.adds_up:  # over the limit: measured as ever, as far as the limit needs
                counted = self._count_within(position, limit)
                return None if counted is None else counted + media
            else:
                tokens = self.measure(position) - media
        return tokens + media if tokens <= limit else None

    def count_ahead(self, positions_desc: Iterable[int], room: int | None) -> None:
        """Count in batches the chunks a newest-first walk of ``positions_desc`` will
        likely measure: those not counted yet, newest first, as far as ``room`` tokens go
        (all of them when ``room`` is None).

        What fits is guessed at :data:`AHEAD_CHARS_PER_TOKEN` characters a token, then
        corrected by the batch's counts, and the next batch takes what is still guessed
        to fit. Only with a tokenizer that counts batches (``count_many``), and only
        batches of at least its ``batch_min_chars`` characters: what is left is counted
        by the walk, one by one, as ever. Chunks longer than :data:`LONG_CHUNK_CHARS`
        or counted in part are left to :meth:`measure_within` (which counts as far as a
        limit needs).
        """
        count_many = getattr(self._tokenizer, "count_many", None)
        least = getattr(self._tokenizer, "batch_min_chars", None)
        if not callable(count_many) or type(least) is not int:
            return
        if room is not None and room * AHEAD_CHARS_PER_TOKEN < least:
            return
        positions = iter(positions_desc)
        stopped_at: int | None = None
        while True:
            batch, texts, guessed, room, stopped_at = self._next_batch(positions, stopped_at, room)
            if not texts or sum(map(len, texts)) < least:
                return  # too little to pay for a batch: the walk counts them
            counts = count_many(texts)
            self._ahead.update(zip(batch, counts, strict=True))
            if room is None or stopped_at is None:
                return  # every candidate was taken
            room += guessed - sum(counts)  # the guess corrected by the counts
            if room * AHEAD_CHARS_PER_TOKEN < least:
                return

    def _next_batch(
        self, positions: Iterator[int], stopped_at: int | None, room: int | None
    ) -> tuple[list[int], list[str], int, int | None, int | None]:
        """The next batch: ``(positions, segments, tokens guessed for them, room left
        after them, the position it stopped at as guessed not to fit or None)``."""
        items, tokens, ahead, partial = self._items, self._tokens, self._ahead, self._partial
        batch: list[int] = []
        texts: list[str] = []
        guessed = 0
        walked = positions if stopped_at is None else itertools.chain((stopped_at,), positions)
        for position in walked:
            known = tokens.get(position)
            if known is None:
                known = ahead.get(position)
            segment = None
            if known is not None:
                cost = known
            elif _is_long(items[position]):
                cost = len(cast("str", items[position].content)) // AHEAD_CHARS_PER_TOKEN
            else:
                segment = self.rendered(position).segment
                cost = len(segment) // AHEAD_CHARS_PER_TOKEN
                # One counted in part goes on from there (no character is counted twice).
                if position in partial:
                    segment = None
            if room is not None:
                cost += self.media(position)
                if cost > room:
                    return batch, texts, guessed, room, position
                room -= cost
            if segment is not None:
                batch.append(position)
                texts.append(segment)
                guessed += len(segment) // AHEAD_CHARS_PER_TOKEN
        return batch, texts, guessed, room, None

    def _count_within(self, position: int, limit: int) -> int | None:
        if position not in self._rendered and _is_long(self._items[position]):
            prefix = self._renderer.render_prefix(self._items[position], prefix_chars(limit))
            if prefix is not None:
                counted = self._count_pieces(position, prefix, limit, whole=False)
                if not isinstance(counted, _NeedsMore):
                    return counted
        counted = self._count_pieces(position, self.rendered(position).segment, limit, whole=True)
        assert not isinstance(counted, _NeedsMore)
        return counted

    def _surely_over(self, text: str, limit: int, *, complete: bool = True) -> bool:
        """Whether ``text`` (or, not ``complete``, the text it starts) is shown to have more
        than ``limit`` tokens without encoding it (the tokenizer's ``more_than``, if any)."""
        if self._more_than is None or len(text) <= LONG_CHUNK_CHARS:
            return False  # short texts are counted: the report then knows their tokens
        return self._more_than(text, limit, complete=complete)

    def _count_pieces(
        self, position: int, text: str, limit: int, *, whole: bool
    ) -> int | _NeedsMore | None:
        """Count ``text`` (the segment, or a prefix of it) from where counting stopped.

        Returns the count once ``text`` is counted whole (None if over ``limit``),
        None as soon as the pieces counted exceed ``limit``, or, for a prefix
        (``whole=False``), :data:`_NEEDS_MORE` when counting must go past it.
        """
        count = self._count
        counted, end = self._partial.get(position, (0, 0))
        rate = float(PREFIX_CHARS_PER_TOKEN)
        while counted <= limit:
            # Enough characters for the tokens still missing, at this text's
            # own rate once known; cut where the pieces' counts must add up.
            target = end + int(rate * (limit + 1 - counted)) + 1
            cut = safe_split_point(text, target) if 2 * target < len(text) + end else None
            if cut is None:
                if not whole:
                    if self._surely_over(text[end:], limit - counted, complete=False):
                        return None  # its start alone is over the limit
                    return _NEEDS_MORE
                rest = text[end:]
                if self._surely_over(rest, limit - counted):
                    return None  # surely over the limit, known without encoding it
                counted += count(rest)
                self._tokens[position] = counted
                self._partial.pop(position, None)
                return counted if counted <= limit else None
            piece = text[end:cut]
            if cut - end > 2 * (target - end) and self._surely_over(piece, limit - counted):
                return None  # a piece far longer than needed (a huge line) that cannot fit
            tokens = count(piece)
            rate = max(1.0, 1.1 * (cut - end) / max(tokens, 1))
            counted += tokens
            end = cut
            self._partial[position] = (counted, end)
        return None


class _NeedsMore:
    """Counting a prefix must go past its end."""


_NEEDS_MORE: Final = _NeedsMore()

AHEAD_CHARS_PER_TOKEN: Final = 3
"""Characters a token is guessed to hold when :meth:`ChunkCosts.count_ahead` guesses what
fits: fewer than most text has (3.2-4.5), so a batch seldom passes the room; what it
leaves is taken by the next batch, once the counts are known."""

LONG_CHUNK_CHARS: Final = 1 << 16
"""Chunks with more text than this are rendered in part while only a part can fit."""


def prefix_chars(limit: int) -> int:
    """Characters of content to render of a long chunk measured against ``limit`` tokens:
    enough at one character per token and then some (counting goes on past them if need be)."""
    return 4 * PREFIX_CHARS_PER_TOKEN * (limit + 1) + 1024


def _is_long(chunk: Chunk) -> bool:
    content = chunk.content
    return type(content) is str and len(content) > LONG_CHUNK_CHARS
