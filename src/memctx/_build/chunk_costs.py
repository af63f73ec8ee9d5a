"""The costs of one history's chunks under one renderer chain and tokenizer, cached.

Roles, renderings and token counts live in the builder's :class:`HistoryCache`
(by position); :class:`ChunkCosts` reads them, and renders and counts on a
miss: a long chunk only as far as a limit needs.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Sequence
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
    """

    __slots__ = (
        "_count",
        "_items",
        "_media",
        "_media_provider",
        "_more_than",
        "_partial",
        "_rendered",
        "_renderer",
        "_roles",
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
            found = self._tokens[position] = self._count(self.rendered(position).segment)
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
            if self.adds_up:
                counted = self._count_within(position, limit)
                return None if counted is None else counted + media
            tokens = self.measure(position) - media
        return tokens + media if tokens <= limit else None

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

LONG_CHUNK_CHARS: Final = 1 << 16
"""Chunks with more text than this are rendered in part while only a part can fit."""


def prefix_chars(limit: int) -> int:
    """Characters of content to render of a long chunk measured against ``limit`` tokens:
    enough at one character per token and then some (counting goes on past them if need be)."""
    return 4 * PREFIX_CHARS_PER_TOKEN * (limit + 1) + 1024


def _is_long(chunk: Chunk) -> bool:
    content = chunk.content
    return type(content) is str and len(content) > LONG_CHUNK_CHARS
