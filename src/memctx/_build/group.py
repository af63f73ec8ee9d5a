"""The group stage: consecutive chunks of one role become one message.

When the tokenizer's counts of pieces may not add up to the count of the
whole (the chars/4 estimate rounds per message; a custom tokenizer or a
renderer may merge across chunks), the messages are counted afresh and the
oldest unpinned units are dropped while that comes out over the budget.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import attrs

from memctx._chunk import Chunk, Role
from memctx._exceptions import BudgetExceededError
from memctx._build.incremental import MessagesByChunks
from memctx._chunk import ContextMessage
from memctx._render.segments import RenderedChunk
from memctx._build.selection import Selection
from memctx._units import UnitsIndex
from memctx.typing import Tokenizer


@attrs.frozen
class Grouped:
    """The messages of a selection, their exact token count, and what was recounted."""

    messages: tuple[ContextMessage, ...]
    selection: Selection
    token_count: int
    recounted: bool
    exact: bool = True
    """False when the count that replaced the segments' sum was an approximation."""


RequestCount = Callable[[list[ContextMessage]], tuple[int, bool]]
"""Counts the request messages stand for: ``(tokens, exact)`` (a native request's count)."""


def group_by_role(
    selection: Selection,
    items: Sequence[Chunk],
    rendered: Callable[[int], RenderedChunk],
    prompt_segment: str,
    reuse: MessagesByChunks | None = None,
) -> tuple[list[ContextMessage], bool]:
    """The messages of ``selection``, and whether their segments' counts add up exactly.

    A message of ``reuse`` that holds the very same chunks (the same shared
    history, so the same ids mean the same chunks) is reused as it is.
    """
    messages: list[ContextMessage] = []
    all_safe = True

    def add(role: Role, parts: list[str], ids: list[str]) -> None:
        key = tuple(ids)
        message = reuse.get(key) if reuse is not None else None
        if message is None:
            message = ContextMessage(role, "".join(parts), key)
        messages.append(message)

    if selection.system or prompt_segment:
        parts = [prompt_segment] if prompt_segment else []
        ids = []
        for position in selection.system:
            found = rendered(position)
            all_safe = all_safe and (found.safe_start or not parts)
            parts.append(found.segment)
            ids.append(items[position].id)
        add("system", parts, ids)
    run_role: Role | None = None
    run_parts: list[str] = []
    run_ids: list[str] = []
    for position in selection.body:
        found = rendered(position)
        if found.role != run_role:
            if run_role is not None:
                add(run_role, run_parts, run_ids)
            run_role, run_parts, run_ids = found.role, [], []
        elif not found.safe_start:
            all_safe = False
        run_parts.append(found.segment)
        run_ids.append(items[position].id)
    if run_role is not None:
        add(run_role, run_parts, run_ids)
    return messages, all_safe


def group(
    selection: Selection,
    items: Sequence[Chunk],
    rendered: Callable[[int], RenderedChunk],
    prompt_segment: str,
    *,
    counts_add_up: bool,
    tokenizer: Tokenizer,
    budget: int | None,
    pinned: set[int],
    units: UnitsIndex,
    reuse: MessagesByChunks | None = None,
    added_tokens: Callable[[list[ContextMessage]], int] | None = None,
    reserved: int = 0,
    media_tokens: Callable[[list[ContextMessage]], int] | None = None,
    request_count: RequestCount | None = None,
) -> Grouped:
    """Group ``selection`` into messages, recounting and trimming when counts may not add up.

    ``added_tokens`` gives the tokens of the turns a provider adapter adds to
    the messages (counted in), of which ``reserved`` were kept free up front;
    ``media_tokens`` the cost of the images and documents the messages hold
    (the segments' sum has them already). ``request_count``, when given,
    counts the request instead (always recounted, trimmed to the budget).
    """
    extra = added_tokens or (lambda messages: 0)
    media = media_tokens or (lambda messages: 0)

    def recount(messages: list[ContextMessage]) -> tuple[int, bool]:
        if request_count is not None:
            return request_count(messages)
        return tokenizer.count_messages(messages) + extra(messages) + media(messages), True

    messages, all_safe = group_by_role(selection, items, rendered, prompt_segment, reuse)
    if counts_add_up and all_safe and request_count is None:
        used = selection.used - reserved + extra(messages)
        return Grouped(tuple(messages), selection, used, recounted=False)
    token_count, exact = recount(messages)
    while budget is not None and token_count > budget:
        selection = _drop_oldest(selection, pinned, units, budget, token_count, tokenizer)
        messages, _ = group_by_role(selection, items, rendered, prompt_segment)
        token_count, exact = recount(messages)
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
