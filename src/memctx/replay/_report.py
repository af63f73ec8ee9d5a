"""What a replayed run cost: one :class:`RequestCost` per model call, and their totals."""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable
from typing import Any

import attrs

from memctx.replay._page import render_page


@attrs.frozen
class RequestCost:
    """One replayed model call: how its input was served by the cache and what it cost.

    ``input_tokens == cache_read_tokens + cache_write_tokens + uncached_tokens``.
    ``cost`` is billed with the model's cache rules, ``cost_without_cache`` is the
    same input at the base price (both in the profile's currency).
    """

    index: int
    """The request's number in the run (0 first)."""
    input_tokens: int
    cache_read_tokens: int
    cache_write_tokens: int
    uncached_tokens: int
    cost: float
    cost_without_cache: float
    cache_break: bool = False
    """It read less than the previous request left in the cache, while that was still alive."""
    events: tuple[str, ...] = ()
    """What the policy did before this request: ``"clearing"``, ``"compaction"``, ..."""
    budget_violation: bool = False
    """The request was larger than the budget (or, with none, the model's window)."""
    orphaned_tool_calls: int = 0
    """Calls sent without the results the run has for them, and results sent without their call."""
    position: int = 0
    """How many of the run's chunks came before this request."""
    at: dt.datetime | None = None
    """When it was sent: the ``created_at`` of the run's last chunk before it."""

    def to_dict(self) -> dict[str, Any]:
        """The request as JSON-ready values."""
        data = attrs.asdict(self, recurse=False)
        data["events"] = list(self.events)
        data["at"] = None if self.at is None else self.at.isoformat()
        return data


def _requests(value: Iterable[RequestCost]) -> tuple[RequestCost, ...]:
    return tuple(value)


def _is(kind: str, event: str) -> bool:
    return kind in event.lower()


@attrs.frozen
class ReplayReport:
    """A recorded run replayed under one policy or strategy, priced for one model.

    The totals are sums over :attr:`requests`; ``cache_read_share`` is the share
    of all input tokens read from the cache.
    """

    requests: tuple[RequestCost, ...] = attrs.field(converter=_requests)
    model: str
    label: str
    """The strategy's name, or the policy's label."""
    budget: int | None = None
    """The token budget requests were held to (``None``: none but the model's window)."""
    currency: str = "USD"

    @property
    def input_tokens(self) -> int:
        return sum(r.input_tokens for r in self.requests)

    @property
    def cache_read_tokens(self) -> int:
        return sum(r.cache_read_tokens for r in self.requests)

    @property
    def cache_write_tokens(self) -> int:
        return sum(r.cache_write_tokens for r in self.requests)

    @property
    def uncached_tokens(self) -> int:
        return sum(r.uncached_tokens for r in self.requests)

    @property
    def cache_read_share(self) -> float:
        total = self.input_tokens
        return self.cache_read_tokens / total if total else 0.0

    @property
    def cost(self) -> float:
        return sum(r.cost for r in self.requests)

    @property
    def cost_without_cache(self) -> float:
        return sum(r.cost_without_cache for r in self.requests)

    @property
    def cost_ratio(self) -> float:
        """``cost / cost_without_cache`` (0 for an empty or unpriced run)."""
        without = self.cost_without_cache
        return self.cost / without if without else 0.0

    @property
    def cache_breaks(self) -> int:
        return sum(r.cache_break for r in self.requests)

    @property
    def compactions(self) -> int:
        return sum(_is("compact", e) for r in self.requests for e in r.events)

    @property
    def clearings(self) -> int:
        return sum(_is("clear", e) for r in self.requests for e in r.events)

    @property
    def peak_tokens(self) -> int:
        return max((r.input_tokens for r in self.requests), default=0)

    @property
    def budget_violations(self) -> int:
        return sum(r.budget_violation for r in self.requests)

    @property
    def orphaned_tool_calls(self) -> int:
        return sum(r.orphaned_tool_calls for r in self.requests)

    def totals(self) -> dict[str, Any]:
        """The run's totals, JSON-ready."""
        return {
            "request_count": len(self.requests),
            "input_tokens": self.input_tokens,
            "cache_read_tokens": self.cache_read_tokens,
            "cache_write_tokens": self.cache_write_tokens,
            "uncached_tokens": self.uncached_tokens,
            "cache_read_share": self.cache_read_share,
            "cost": self.cost,
            "cost_without_cache": self.cost_without_cache,
            "cost_ratio": self.cost_ratio,
            "cache_breaks": self.cache_breaks,
            "compactions": self.compactions,
            "clearings": self.clearings,
            "peak_tokens": self.peak_tokens,
            "budget_violations": self.budget_violations,
            "orphaned_tool_calls": self.orphaned_tool_calls,
        }

    def to_dict(self) -> dict[str, Any]:
        """The whole report as JSON-ready values: who, the totals, and every request."""
        return {
            "model": self.model,
            "label": self.label,
            "budget": self.budget,
            "currency": self.currency,
            **self.totals(),
            "requests": [r.to_dict() for r in self.requests],
        }

    def summary(self) -> str:
        """A few lines a person reads: the totals and what went wrong."""
        budget = f"{self.budget:,} tokens" if self.budget is not None else "the model's window"
        lines = [
            f"{self.label} on {self.model} ({budget}): {len(self.requests)} requests, "
            f"{self.input_tokens:,} input tokens, peak {self.peak_tokens:,}",
            f"  cache: {self.cache_read_share:.1%} read, {self.cache_write_tokens:,} written, "
            f"{self.uncached_tokens:,} uncached; {self.cache_breaks} cache breaks",
            f"  cost: {self.cost:.4f} {self.currency} ({self.cost_ratio:.2f}x of "
            f"{self.cost_without_cache:.4f} without a cache)",
            f"  events: {self.compactions} compactions, {self.clearings} clearings; "
            f"{self.budget_violations} over budget, {self.orphaned_tool_calls} orphaned tool calls",
        ]
        return "\n".join(lines)

    def to_html(self, *, title: str | None = None) -> str:
        """One self-contained HTML page (no network): a bar per request, events marked."""
        return render_reports([self], title=title)

    def _repr_html_(self) -> str:
        return self.to_html()


def render_reports(reports: Iterable[ReplayReport], *, title: str | None = None) -> str:
    """One HTML page showing ``reports`` one under the other (each: its totals, then a bar
    per request, read / written / uncached, with its events marked)."""
    reports = list(reports)
    if title is None:
        models = sorted({r.model for r in reports})
        title = f"memctx replay: {', '.join(models)}" if models else "memctx replay"
    return render_page([r.to_dict() for r in reports], title)
