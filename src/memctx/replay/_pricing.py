"""What each provider's prompt cache serves and bills, request after request.

The rules, from the providers' documentation, with every figure taken from the
model's :class:`~memctx.policy.ModelProfile`:

**Anthropic** (explicit, ``cache_control``). A request's prefix is cached only
up to a block that carries a mark, at most ``max_breakpoints`` marks a
request (more are refused by the API; here the first ones count). Reading:
from each mark the cache looks for a stored prefix ending at that block or at
one of the ``lookback_blocks`` blocks before it, and the longest one found is
read (``cache_read_multiplier``, 0.1x). Writing: each mark whose prefix is at
least ``min_cacheable_tokens`` long and not stored yet is written; the
tokens between what was read and the last such mark are billed as writes,
at ``cache_write_multiplier`` (1.25x) under a 5-minute mark and
``cache_write_1h_multiplier`` (2x) under a ``"ttl": "1h"`` one. The rest is
billed at the base price. An entry lives its lifetime from its last use (a
read refreshes it at no cost).

**OpenAI** (automatic). Every request's prefixes are stored; a request reads
the longest stored prefix, counted from ``min_cacheable_tokens`` (1,024) in
steps of ``step_tokens`` (128), billed at ``cache_read_multiplier``; nothing
is billed for writing. Entries live ``lifetimes[0]`` from their last use.

**Gemini** (implicit). As OpenAI's, with the model's minimum and no steps.

Time: a request happens at the ``created_at`` of the last chunk before it;
with no times (``None``) nothing expires.
"""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Final, Protocol

import attrs

from memctx._exceptions import ReplayError
from memctx.replay._blocks import DEFAULT_LIFETIME, Block

if TYPE_CHECKING:
    from memctx.policy import ModelProfile

_UNITS: Final = {"s": 1, "m": 60, "h": 3600, "d": 86400}
_DURATION: Final = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([smhd]?)\s*$")
PER_MILLION: Final = 1_000_000


def lifetime_seconds(value: Any) -> float:
    """A cache lifetime as seconds: a number of seconds, a ``timedelta``, or ``"5m"`` / ``"1h"``."""
    if isinstance(value, dt.timedelta):
        return value.total_seconds()
    if isinstance(value, int | float) and not isinstance(value, bool):
        return float(value)
    found = _DURATION.match(value) if isinstance(value, str) else None
    if found is None:
        raise ReplayError("lifetimes", f"not a cache lifetime: {value!r}")
    return float(found.group(1)) * _UNITS[found.group(2) or "s"]


def _timestamp(at: dt.datetime | None) -> float | None:
    return None if at is None else at.timestamp()


@attrs.frozen
class Billing:
    """How one request's input tokens were served."""

    read: int
    written: int
    """Tokens written under a short (default) lifetime."""
    written_long: int
    """Tokens written under a long (``"1h"``) lifetime."""
    uncached: int
    broke: bool
    """The request read less than the previous one left in the cache, which was still alive."""

    @property
    def write(self) -> int:
        return self.written + self.written_long


class PromptCache(Protocol):
    """A provider's cache over a run: :meth:`send` bills one request and remembers it."""

    def send(self, blocks: Sequence[Block], input_tokens: int, at: dt.datetime | None) -> Billing:
        """Bill a request of ``input_tokens`` cut into ``blocks`` and sent at ``at``."""
        ...


class _Entries:
    """Stored prefixes: key -> (time of expiry, lifetime); ``None`` times never expire."""

    def __init__(self) -> None:
        self._expiry: dict[str, tuple[float | None, float]] = {}

    def alive(self, key: str, now: float | None) -> bool:
        found = self._expiry.get(key)
        if found is None:
            return False
        expires, _ = found
        return now is None or expires is None or now <= expires

    def store(self, key: str, now: float | None, lifetime: float) -> None:
        expires = None if now is None else now + lifetime
        old = self._expiry.get(key)
        if old is not None and old[0] is not None and expires is not None:
            expires = max(expires, old[0])
            lifetime = max(lifetime, old[1])
        self._expiry[key] = (expires, lifetime)

    def refresh(self, key: str, now: float | None) -> None:
        found = self._expiry.get(key)
        if found is not None:
            self.store(key, now, found[1])


class ExplicitCache:
    """Anthropic's cache: breakpoints, a lookback, a minimum, lifetimes per mark."""

    def __init__(self, profile: ModelProfile) -> None:
        rules = profile.cache
        self.minimum = int(rules.min_cacheable_tokens)
        self.max_marks = int(rules.max_breakpoints or 4)
        self.lookback = int(rules.lookback_blocks or 0)
        lifetimes = tuple(rules.lifetimes or ())
        self.default = lifetime_seconds(lifetimes[0]) if lifetimes else 300.0
        self.entries = _Entries()
        self.left: tuple[str, int] | None = None
        """The longest prefix the previous request left stored: its key and tokens."""
        self.held: dict[str, int] = {}
        """Tokens each stored prefix was written with: a later read of it reads no more
        (a block's end can pass the request's counted tokens, which bound the write)."""

    def send(self, blocks: Sequence[Block], input_tokens: int, at: dt.datetime | None) -> Billing:
        now = _timestamp(at)
        could = self._could_read(now)
        marks = [i for i, b in enumerate(blocks) if b.mark is not None][: self.max_marks]
        hit = -1
        for mark in marks:
            for end in range(mark, max(-1, mark - self.lookback - 1), -1):
                if self.entries.alive(blocks[end].key, now):
                    hit = max(hit, end)
                    break
        read = 0
        if hit >= 0:
            key = blocks[hit].key
            read = min(blocks[hit].end, input_tokens, self.held.get(key, input_tokens))
        if hit >= 0:
            self.entries.refresh(blocks[hit].key, now)
        written = {"short": 0, "long": 0}
        boundary = read
        left = (blocks[hit].key, read) if hit >= 0 else None
        for mark in marks:
            block = blocks[mark]
            end = min(block.end, input_tokens)
            if block.end < self.minimum or self.entries.alive(block.key, now):
                continue
            lifetime = lifetime_seconds(block.mark or DEFAULT_LIFETIME)
            written["long" if lifetime > self.default else "short"] += max(0, end - boundary)
            boundary = max(boundary, end)
            self.entries.store(block.key, now, lifetime)
            self.held[block.key] = max(self.held.get(block.key, 0), end)
            if left is None or end > left[1]:
                left = (block.key, end)
        broke = read < could
        self.left = left
        short, long = written["short"], written["long"]
        return Billing(read, short, long, input_tokens - read - short - long, broke)

    def _could_read(self, now: float | None) -> int:
        """Tokens the previous request left stored, if they are still alive at ``now``."""
        if self.left is None or not self.entries.alive(self.left[0], now):
            return 0
        return self.left[1]


class AutomaticCache:
    """OpenAI's and Gemini's caches: every prefix stored, read from a minimum in steps."""

    def __init__(self, profile: ModelProfile) -> None:
        rules = profile.cache
        self.minimum = int(rules.min_cacheable_tokens)
        self.step = max(1, int(rules.step_tokens or 1))
        lifetimes = tuple(rules.lifetimes or ())
        self.lifetime = lifetime_seconds(lifetimes[0]) if lifetimes else 300.0
        self.entries = _Entries()
        self.left: tuple[str, int] | None = None

    def cached(self, tokens: int) -> int:
        """How much of a stored prefix of ``tokens`` tokens is served: 0 under the minimum,
        else the minimum plus whole steps."""
        if tokens < self.minimum:
            return 0
        return self.minimum + (tokens - self.minimum) // self.step * self.step

    def send(self, blocks: Sequence[Block], input_tokens: int, at: dt.datetime | None) -> Billing:
        now = _timestamp(at)
        could = 0
        if self.left is not None and self.entries.alive(self.left[0], now):
            could = self.left[1]
        read = 0
        for block in reversed(blocks):
            if self.entries.alive(block.key, now):
                read = self.cached(min(block.end, input_tokens))
                break
        for block in blocks:
            self.entries.store(block.key, now, self.lifetime)
        broke = read < could
        if blocks:
            self.left = (blocks[-1].key, self.cached(min(blocks[-1].end, input_tokens)))
        return Billing(read, 0, 0, input_tokens - read, broke)


def make_cache(profile: ModelProfile) -> PromptCache:
    """The cache model for the profile's rules: explicit breakpoints or automatic."""
    if profile.cache.kind == "explicit":
        return ExplicitCache(profile)
    return AutomaticCache(profile)


def cost(billing: Billing, profile: ModelProfile) -> tuple[float, float]:
    """``(billed, billed without a cache)`` in the profile's currency (prices per million)."""
    per_token = float(profile.input_price or 0.0) / PER_MILLION
    billed = (
        billing.uncached
        + billing.read * float(profile.cache_read_multiplier)
        + billing.written * float(profile.cache_write_multiplier)
        + billing.written_long * float(profile.cache_write_1h_multiplier)
    )
    total = billing.read + billing.write + billing.uncached
    return billed * per_token, total * per_token
