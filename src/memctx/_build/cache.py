"""What a builder remembers about the histories it built, keyed weakly by shared history.

Chunks never change and positions in a shared history never move, so a
chunk's rendering under one renderer chain, and its token count under one
tokenizer, are kept by position in lists that grow with the history. The
builder owns these caches (a :class:`BuildCaches`); states and results hold
none of them, and a history's cache goes when its last state goes.
"""

from __future__ import annotations

import threading
import weakref
from collections.abc import Callable, Collection, Hashable, Mapping, Sequence
from typing import Final, cast

from memctx._chunk import Chunk, ChunkType, Role
from memctx._render.media import is_media, media_tokens
from memctx._render.rendering import XmlRendering
from memctx._render.segments import PREFIX_CHARS_PER_TOKEN, RenderedChunk, safe_split_point
from memctx._result import ContextBuildResult
from memctx._state import SharedHistory
from memctx._units import UnitsIndex
from memctx.typing import Tokenizer


class HashedKey:
    """A hashable key with its hash worked out once (a renderer chain's key is a deep tuple)."""

    __slots__ = ("_hash", "key")

    def __init__(self, key: Hashable) -> None:
        self.key = key
        self._hash = hash(key)

    def __hash__(self) -> int:
        return self._hash

    def __eq__(self, other: object) -> bool:
        if self is other:
            return True
        if not isinstance(other, HashedKey):
            return NotImplemented
        return self._hash == other._hash and self.key == other.key

    def __repr__(self) -> str:
        return f"HashedKey({self.key!r})"


ChainKey = HashedKey
"""Names a renderer chain: the cache keys of its renderers, in order, hashed once."""
CountKey = tuple[ChainKey, Hashable]
"""A renderer chain's key and a tokenizer's ``cache_key``."""

OPTIONS_KEPT = 4
"""Sets of build options remembered per history (the last build of each)."""


class HistoryCache:
    """Everything one builder remembers about one shared history."""

    __slots__ = (
        "__weakref__",
        "by_options",
        "counts",
        "long_roles",
        "older_units",
        "partial_counts",
        "renderings",
    )

    def __init__(self) -> None:
        # By position: only the chunks a build reached (a cold build of a long history
        # must not pay for its length).
        self.renderings: dict[ChainKey, dict[int, RenderedChunk]] = {}
        self.counts: dict[CountKey, dict[int, int]] = {}
        # Long chunks counted in part: position -> (tokens counted, characters counted).
        self.partial_counts: dict[CountKey, dict[int, tuple[int, int]]] = {}
        # Roles of chunks not rendered (long ones, or counted already): position -> role.
        self.long_roles: dict[ChainKey, dict[int, Role]] = {}
        # A units index of an older state (the history indexes only its newest one).
        self.older_units: tuple[int, UnitsIndex] | None = None
        # Per set of options: the last build (length, result) and what its selector kept.
        self.by_options: dict[Hashable, LastBuild] = {}

    def units_index(self, history: SharedHistory, length: int) -> UnitsIndex:
        """The units index of the first ``length`` chunks of ``history``."""
        units = history.units
        if units.length == length:
            return units
        if self.older_units is None or self.older_units[0] != length:
            older = UnitsIndex()
            older.extend_to(history.items, length)
            self.older_units = (length, older)
        return self.older_units[1]

    def remember(self, key: Hashable, last: LastBuild) -> None:
        """Keep ``last`` as the last build for ``key``, forgetting the oldest beyond the limit."""
        builds = self.by_options
        builds.pop(key, None)
        builds[key] = last
        while len(builds) > OPTIONS_KEPT:
            del builds[next(iter(builds))]


class LastBuild:
    """The last build of a history with one set of options."""

    __slots__ = ("again", "encoded", "length", "memory", "result")

    def __init__(
        self,
        length: int,
        result: ContextBuildResult,
        memory: object | None,
        encoded: Mapping[str, Sequence[int]] | None = None,
    ) -> None:
        self.length = length
        self.result = result
        self.memory = memory
        """What the selector kept (a :class:`LastWalk` for ``recent``), or None."""
        self.encoded = encoded
        """What the shared-prefix figure encoded of ``result``'s request (for the next one)."""
        self.again = False
        """Whether ``result`` is that of building the same state again (its whole request
        shared with the build before)."""


_CACHES_LOCK = threading.Lock()


class BuildCaches:
    """A builder's caches: one :class:`HistoryCache` per live shared history.

    Each history holds its cache (``SharedHistory.caches``, keyed weakly by this
    object): a remembered result holds its state and so its history, which a
    mapping owned here would keep alive for as long as the builder lives.
    """

    def __init__(self) -> None:
        self._histories: weakref.WeakSet[SharedHistory] = weakref.WeakSet()
        # The last history asked for and its cache, both weakly (an agent loop asks for
        # one history build after build; holding either would keep the history alive).
        self._last: tuple[weakref.ref[SharedHistory], weakref.ref[HistoryCache]] | None = None

    def for_history(self, history: SharedHistory) -> HistoryCache:
        """The cache of ``history``, made on first use."""
        last = self._last
        if last is not None and last[0]() is history:
            cache = last[1]()
            if cache is not None:
                return cache
        found = self._find(history)
        self._last = (weakref.ref(history), weakref.ref(found))
        return found

    def _find(self, history: SharedHistory) -> HistoryCache:
        caches = history.caches
        found = caches.get(self) if caches is not None else None
        if found is None:
            with _CACHES_LOCK:  # one lock: several builders may meet the same history
                if history.caches is None:
                    history.caches = weakref.WeakKeyDictionary()
                found = history.caches.get(self)
                if found is None:
                    found = HistoryCache()
                    history.caches[self] = found
                    self._histories.add(history)
        assert isinstance(found, HistoryCache)
        return found

    def histories(self) -> list[tuple[SharedHistory, HistoryCache]]:
        """The live histories and their caches."""
        with _CACHES_LOCK:
            live = list(self._histories)
        found = []
        for history in live:
            cache = history.caches.get(self) if history.caches is not None else None
            if isinstance(cache, HistoryCache):
                found.append((history, cache))
        return found


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
