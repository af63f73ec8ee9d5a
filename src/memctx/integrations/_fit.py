"""One run's history kept for a ContextPolicy across the run's model calls.

A framework hands its whole history to a hook before each model call: the Agents SDK
the run's input and every item generated since; pydantic-ai and LangChain what the hook
returned the last time, plus what came after. :class:`RunFit` remembers the policy's
state (its clearings and compaction included) and the items it was made from, so a call
that continues the previous one only adds the new items' chunks, and the policy changes
the history in blocks instead of anew at every call. A history that does not continue
the previous one (a new run) starts a new state.

The rules every integration shares:

- the framework's *current task* (its newest prompt) is pinned: never dropped, cleared
  or compacted, and neither is the run's first task (the policy's own rule);
- the instructions sent with the call are a SYSTEM chunk: counted, always kept;
- each kept chunk comes back with the framework object it was made from, marked
  ``changed`` when the policy replaced its content (a cleared or trimmed output); a
  compaction's summary comes back without one.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from typing import Any, Final

import attrs

from memctx import chunks
from memctx._build.builder import counts_of
from memctx._chunk import Chunk
from memctx._exceptions import PolicyError
from memctx._state import MemoryState
from memctx.policy import ContextPolicy, PolicyStep

INSTRUCTIONS_ID: Final = "instructions"
"""Id of the SYSTEM chunk holding the instructions sent with the call."""

Convert = Callable[[Sequence[Any], list[str]], list[tuple[Chunk, Any]]]
"""Turn the new framework items into chunks and their sources; the chunks of item ``i``
have ids starting with ``bases[i]``, holding no dot (a derived chunk's id adds one)."""


def each(convert: Callable[[Any, str], list[tuple[Chunk, Any]]]) -> Convert:
    """A :data:`Convert` made of one that converts an item at a time."""

    def convert_all(items: Sequence[Any], bases: list[str]) -> list[tuple[Chunk, Any]]:
        return [
            pair for item, base in zip(items, bases, strict=True) for pair in convert(item, base)
        ]

    return convert_all


@attrs.frozen
class Kept:
    """A chunk the step kept, and the framework object it stands for."""

    chunk: Chunk
    source: Any
    """What the chunk was made from; ``None`` for a compaction's summary."""
    changed: bool
    """Whether the chunk's content replaces its source's (a cleared or trimmed output)."""


@attrs.frozen
class _Memo:
    seen: tuple[object, ...]  # keys of the items the last call was given
    sent: tuple[object, ...]  # keys of the items the last call returned
    state: MemoryState  # the policy's state after the last step
    sources: dict[str, Any]  # chunk id -> framework object
    counter: int  # items converted so far (the next chunk id base)
    pinned: str | None  # the chunk pinned as the current task


def check_policy(policy: object) -> ContextPolicy:
    if not isinstance(policy, ContextPolicy):
        raise PolicyError("policy", f"must be a memctx.policy.ContextPolicy, got {policy!r}")
    return policy


def _continues(keys: Sequence[object], known: tuple[object, ...]) -> bool:
    return 0 < len(known) <= len(keys) and tuple(keys[: len(known)]) == known


def _with_pin(chunk: Chunk, pinned: bool) -> Chunk:
    if chunk.pinned == pinned:
        return chunk
    return attrs.evolve(chunk, metadata=attrs.evolve(chunk.metadata, pinned=pinned))


class RunFit:
    """A policy applied to one run's model calls (see the module's docstring).

    ``is_prompt(source)`` says whether a framework object is a prompt of the user: the
    newest one is the current task. One ``RunFit`` serves one run at a time; a call
    that does not continue the previous one starts afresh.
    """

    def __init__(
        self,
        policy: ContextPolicy,
        *,
        is_prompt: Callable[[Any], bool],
        thread_id: str | None = None,
        prefix: str = "item",
    ) -> None:
        self.policy = check_policy(policy)
        self.thread_id = thread_id
        self.last_step: PolicyStep | None = None
        self._is_prompt = is_prompt
        self._prefix = prefix
        self._memo: _Memo | None = None
        self._lock = threading.Lock()

    def prepare(
        self,
        items: Sequence[Any],
        keys: Sequence[object],
        convert: Convert,
        instructions: str | None,
    ) -> tuple[MemoryState, _Memo]:
        """The state to step for ``items`` (converted with ``convert`` where new)."""
        with self._lock:
            memo = self._memo
        if memo is not None and _continues(keys, memo.seen):
            start, base = len(memo.seen), memo
        elif memo is not None and _continues(keys, memo.sent):
            start, base = len(memo.sent), memo
        else:
            start, base = 0, None
        chunk_list = list(base.state.chunks) if base is not None else []
        sources = dict(base.sources) if base is not None else {}
        counter = base.counter if base is not None else 0
        pinned = base.pinned if base is not None else None
        new = items[start:]
        bases = [f"{self._prefix}{counter + i}" for i in range(len(new))]
        for chunk, source in convert(new, bases):
            chunk_list.append(chunk)
            sources[chunk.id] = source
        counter += len(new)
        given = [c for c in chunk_list if c.id == INSTRUCTIONS_ID]
        chunk_list = [c for c in chunk_list if c.id != INSTRUCTIONS_ID]
        if given and given[0].text == instructions:
            chunk_list.insert(0, given[0])  # the same chunk: the builder's caches still hold
        elif instructions:
            chunk_list.insert(0, chunks.system(instructions, id=INSTRUCTIONS_ID))
        task = None
        for position in range(len(chunk_list) - 1, -1, -1):
            source = sources.get(chunk_list[position].id)
            if source is not None and self._is_prompt(source):
                task = position
                break
        for position, chunk in enumerate(chunk_list):
            if position == task:
                chunk_list[position] = _with_pin(chunk, True)
            elif chunk.id == pinned:
                chunk_list[position] = _with_pin(chunk, False)
        state = MemoryState(chunk_list, thread_id=self.thread_id)
        task_id = None if task is None else chunk_list[task].id
        return state, _Memo(tuple(keys), (), state, sources, counter, task_id)

    def finish(self, step: PolicyStep, memo: _Memo) -> list[Kept]:
        """Remember ``step`` and say what it kept, in order, with the sources."""
        self.last_step = step
        included = set(step.result.included_chunk_ids)
        kept: list[Kept] = []
        sources: dict[str, Any] = {}  # only those the state still needs
        for chunk in step.state:
            original = chunk.id  # a derived chunk's id is "<original>.<kind>-<digest>"
            while original not in memo.sources and "." in original:
                original = original.rsplit(".", 1)[0]
            source = memo.sources.get(original)
            if source is not None:
                sources[original] = source
            if chunk.id in included and chunk.id != INSTRUCTIONS_ID:
                kept.append(Kept(chunk, source, source is not None and original != chunk.id))
        with self._lock:
            self._memo = attrs.evolve(memo, state=step.state, sources=sources)
        return kept

    def remember_sent(self, keys: Sequence[object]) -> None:
        """Note the keys of what the hook returned (the framework may hand it back)."""
        with self._lock:
            if self._memo is not None:
                self._memo = attrs.evolve(self._memo, sent=tuple(keys))

    def step(self, state: MemoryState) -> PolicyStep:
        return self.policy.step(state)

    async def astep(self, state: MemoryState) -> PolicyStep:
        return await self.policy.astep(state)

    def render(self, chunk: Chunk) -> str:
        """``chunk`` as the policy's builder renders it (a summary's text for the model)."""
        return counts_of(self.policy.builder).render_chunk(chunk).segment
