"""The group stage: consecutive chunks of one role become one message."""

from __future__ import annotations

from collections.abc import Callable, Sequence

import attrs

from memctx._build.incremental import MessagesByChunks
from memctx._build.selection import Selection
from memctx._chunk import Chunk, ContextMessage, Role
from memctx._render.segments import RenderedChunk


@attrs.frozen
class Grouped:
    """The messages of a selection, their exact token count, and whether it was recounted."""

    messages: tuple[ContextMessage, ...]
    selection: Selection
    token_count: int
    recounted: bool
    exact: bool = True
    """False when the count that replaced the segments' sum was an approximation."""


RequestCount = Callable[[list[ContextMessage]], tuple[int, bool]]
"""Counts the request messages stand for: ``(tokens, exact)`` (a native request's count)."""


def group(
    selection: Selection,
    items: Sequence[Chunk],
    rendered: Callable[[int], RenderedChunk],
    prompt_segment: str,
    *,
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
