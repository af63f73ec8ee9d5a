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
from collections.abc import Hashable, Mapping, Sequence

from memctx._chunk import Role
from memctx._render.segments import RenderedChunk
from memctx._result import ContextBuildResult
from memctx._state import SharedHistory
from memctx._units import UnitsIndex


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
