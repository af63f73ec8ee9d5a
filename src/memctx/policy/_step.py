"""PolicyStep and PolicyReport: what one call of a context policy returns."""

from __future__ import annotations

from typing import Any, Literal

import attrs

from memctx._build.compress_report import CompressionReport
from memctx._result import ContextBuildResult
from memctx._state import MemoryState
from memctx.compress._compaction import CompactionReport

ReportKind = Literal["cleared", "compacted", "trimmed", "skipped"]


@attrs.frozen
class PolicyReport:
    """One thing a policy did to the state (or chose not to do), and why.

    ``kind``: ``"cleared"`` (old tool outputs became placeholders), ``"compacted"``
    (old history became a summary), ``"trimmed"`` (an output too large for the budget
    was cut to a preview) or ``"skipped"`` (a clearing or compaction that would have
    saved less than the cache write it causes). ``detail`` is the
    :class:`~memctx.compress.CompressionReport` or
    :class:`~memctx.compaction.CompactionReport` of the change (``None`` when skipped).
    Tokens are counted with the policy's tokenizer.
    """

    kind: ReportKind
    reason: str
    tokens_before: int
    tokens_after: int
    detail: CompressionReport | CompactionReport | None = None

    @property
    def saved_tokens(self) -> int:
        return self.tokens_before - self.tokens_after

    def summary(self) -> str:
        """One readable line."""
        return f"{self.kind}: {self.reason} ({self.tokens_before} -> {self.tokens_after} tokens)"


@attrs.frozen
class PolicyStep:
    """The outcome of :meth:`ContextPolicy.step`: keep ``state``, send ``request``.

    ``state``: the state after clearing and compaction (append the model's answer to
    it); ``result``: the build of that state within the budget; ``request``: the
    provider's keyword arguments (Anthropic: ``system``, ``messages`` with cache
    breakpoints; OpenAI: ``messages``; Gemini: ``contents`` and ``config``);
    ``reports``: what was changed and why; ``events``: their names in order
    (``"cleared"``, ``"compacted"``, ``"trimmed"``, ``"skipped"``, ``"calibrated"``,
    ``"overflowed"``).
    """

    state: MemoryState
    result: ContextBuildResult
    request: dict[str, Any]
    reports: tuple[PolicyReport, ...]
    events: tuple[str, ...]
    budget: int
    """The tokens the build was allowed (the budget, lowered by calibration)."""
    stages: tuple[tuple[PolicyReport, MemoryState], ...] = attrs.field(default=(), repr=False)
    """Each change with the state right after it, in order (a store writes one batch each)."""

    @property
    def token_count(self) -> int:
        """Tokens of the request as memctx counts them."""
        return self.result.token_count

    @property
    def changed(self) -> bool:
        """Whether the state was cleared, compacted or trimmed in this step (the cache
        breaks once, where the first change is)."""
        return any(r.kind != "skipped" for r in self.reports)

    @property
    def compacted(self) -> bool:
        return any(r.kind == "compacted" for r in self.reports)

    @property
    def cleared(self) -> bool:
        return any(r.kind == "cleared" for r in self.reports)

    @property
    def headroom(self) -> int:
        """Tokens left under the budget after this request."""
        return self.budget - self.result.token_count
