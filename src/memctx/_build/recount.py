"""The recount stage: when counts of pieces may not add up, count the messages afresh.

The chars/4 estimate rounds per message, a custom tokenizer or a renderer may
merge text across chunks, and a native OpenAI request lays calls out its own way,
so the sum of the chunks' counts may differ from the count of the request. Then
the messages are counted whole, and while that comes out over the budget the
oldest unpinned unit is dropped and they are grouped again. A build whose counts
add up never runs this stage.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from memctx._build.group import Grouped, RequestCount, group
from memctx._build.selection import Selection
from memctx._chunk import Chunk, ContextMessage
from memctx._exceptions import BudgetExceededError
from memctx._render.segments import RenderedChunk
from memctx._units import UnitsIndex
from memctx.typing import Tokenizer


def recount(
    selection: Selection,
    messages: list[ContextMessage],
    *,
    items: Sequence[Chunk],
    rendered: Callable[[int], RenderedChunk],
    prompt_segment: str,
    tokenizer: Tokenizer,
    budget: int | None,
    pinned: set[int],
    units: UnitsIndex,
    count: RequestCount,
) -> Grouped:
    """The messages counted whole by ``count`` (``(tokens, exact)`` of the request they
    stand for), the oldest unpinned units dropped while they come out over ``budget``."""
    token_count, exact = count(messages)
    while budget is not None and token_count > budget:
        selection = _drop_oldest(selection, pinned, units, budget, token_count, tokenizer)
        messages, _ = group(selection, items, rendered, prompt_segment)
        token_count, exact = count(messages)
    return Grouped(tuple(messages), selection, token_count, recounted=True, exact=exact)


def _drop_oldest(
    selection: Selection,
    pinned: set[int],
    units: UnitsIndex,
    budget: int,
    needed: int,
    tokenizer: Tokenizer,
) -> Selection:
    """Remove the oldest unpinned unit (a recount gave ``needed`` tokens, over budget)."""
    for position in sorted(selection.body + selection.system):
        if position in pinned:
            continue
        drop = set(units.unit_members(position) or [position])
        return Selection(
            [p for p in selection.body if p not in drop],
            [p for p in selection.system if p not in drop],
            selection.used,
            selection.measured_excluded + sorted(drop),
            selection.refused,
        )
    raise BudgetExceededError(needed, budget, f"counted afresh with {tokenizer.name}")
