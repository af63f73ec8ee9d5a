"""The cost stage: what each chunk and each message costs, exactly.

A message's content is its chunks' segments, whose token counts add up;
each message adds the chat format's overhead for its role, and the request
adds the reply priming once. So the cost of a selection is the sum of its
segments, plus one overhead per run of same-role chunks, plus the priming.
When a chunk lands between two chosen chunks, the number of messages changes
only with its two neighbours' roles (:func:`overhead_delta`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence

import attrs

from memctx._build.chunk_costs import ChunkCosts
from memctx._chunk import Role
from memctx._render.segments import SEPARATOR
from memctx.typing import Tokenizer

Overheads = dict[str, int]
"""``priming`` (once per request), the per-message overhead of each role, and each
role's own tokens (``name:ROLE``)."""


@attrs.define
class CostModel:
    """Per-position role and token count, and the per-message overheads."""

    role: Callable[[int], Role]
    measure: Callable[[int], int]
    measure_within: Callable[[int, int], int | None]
    """``measure(p)`` if it is at most the given limit, else None (maybe without a full count)."""
    known: Callable[[int], int | None]
    """The count of ``p`` if it was counted in full already, else None (never counts)."""
    count_ahead: Callable[[Iterable[int], int | None], None]
    """``count_ahead(positions newest first, room or None)``: counts in batches what a
    newest-first walk will likely measure (see :meth:`ChunkCosts.count_ahead`)."""
    overhead: Overheads
    system_base: int
    """Tokens of the system message before any chunk: its overhead and the system prompt."""
    has_system_prompt: bool


def message_overheads(tokenizer: Tokenizer) -> Overheads:
    """The chat format's overheads, measured with ``tokenizer.count_messages``."""
    priming = tokenizer.count_messages([])
    overhead = {"priming": priming}
    for role in ("system", "user", "assistant"):
        overhead[role] = tokenizer.count_messages([{"role": role, "content": ""}]) - priming
        overhead[f"name:{role}"] = tokenizer.count(role)
    return overhead


def prompt_segment(system_prompt: str | None) -> str:
    """The system prompt as it opens the system message: ending in a newline."""
    prompt = system_prompt or ""
    return prompt if not prompt or prompt.endswith(SEPARATOR) else prompt + SEPARATOR


def cost_model(
    costs: ChunkCosts, *, overhead: Overheads, prompt_tokens: int, has_system_prompt: bool
) -> CostModel:
    """The cost model of one build: ``costs``' roles and counts, and the overheads."""
    return CostModel(
        role=costs.role,
        measure=costs.measure,
        measure_within=costs.measure_within,
        known=costs.known_tokens,
        count_ahead=costs.count_ahead,
        overhead=overhead,
        system_base=overhead["system"] + prompt_tokens,
        has_system_prompt=has_system_prompt,
    )


def overhead_delta(
    overhead: Overheads, prev_role: Role | None, next_role: Role | None, role: Role
) -> int:
    """Tokens of message overhead added by putting a ``role`` chunk between two neighbours."""
    if prev_role is not None and prev_role == next_role:
        # The neighbours share one message; a different role splits it in three.
        return 0 if role == prev_role else overhead[role] + overhead[prev_role]
    if role in (prev_role, next_role):
        return 0
    return overhead[role]


def pinned_cost(costs: CostModel, body: Sequence[int], system: Sequence[int]) -> int:
    """Exact tokens of the system message and the pinned body chunks, grouped by role."""
    total = 0
    if system or costs.has_system_prompt:
        total += costs.system_base + sum(costs.measure(p) for p in system)
    previous: Role | None = None
    for position in body:
        role = costs.role(position)
        total += costs.measure(position)
        if role != previous:
            total += costs.overhead[role]
            previous = role
    return total
