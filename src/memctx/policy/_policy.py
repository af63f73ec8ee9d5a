"""ContextPolicy: one call per model request keeps a long run inside the window, cheaply.

Each :meth:`ContextPolicy.step` counts the state, clears old tool outputs and compacts
old history when due, builds the request within the budget and places the provider's
cache breakpoints. The rules, in the order they are applied:

1. **Calibrate.** ``usage=`` (the provider's report of the previous request) gives
   the ratio of the provider's count to memctx's; the budget is divided by it, so a
   tokenizer that counts low (cl100k standing in for Claude's) never overflows the
   window. ``overflowed=True`` (the provider refused the previous request as too
   long) raises the ratio and forces clearing and compaction now.
2. **In blocks.** Nothing changes while the request stays under its triggers: the
   request then only grows at its end, so each request reads the previous one from
   the prompt cache. At a trigger, clearing (then compaction, if clearing is not
   enough) makes room for many requests at once.
3. **Only when it pays.** A change breaks the cache after its first changed chunk:
   that part is written again (Anthropic: 1.25x input) instead of read (0.1x). Under
   the budget a clearing or compaction is done only when the reads it saves over the
   requests until the next one outweigh that write; over the budget it is done anyway.
4. **Nothing structural breaks.** A call stays with its results, a call still
   waiting is never changed, the task (the first user turn) and pinned chunks are
   never cleared or compacted, and the build never exceeds the budget.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import inspect
import math
import threading
from collections.abc import Awaitable, Generator, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Final, Literal

import attrs

from memctx._build.builder import ContextBuilder, counts_of, create_builder
from memctx._build.compress_step import apply_compressors
from memctx._build.counts import chunk_tokens
from memctx._chunk import Chunk, ChunkType
from memctx._exceptions import BudgetExceededError, CompactionError, MemctxError, PolicyError
from memctx._render.tokens import create_tokenizer
from memctx._result import ContextBuildResult
from memctx._state import MemoryState
from memctx.compress._compaction import (
    CompactionPolicy,
    check_summary,
    is_compaction_summary,
    place_summary,
    plan_compaction,
    summary_input,
)
from memctx.compress._compressors import TrimToolOutputs
from memctx.policy._clear import ClearToolUses, check_amount, resolve_amount
from memctx.policy._profiles import ModelProfile, model_profile
from memctx.policy._request import anthropic_request
from memctx.policy._step import PolicyReport, PolicyStep
from memctx.typing import Summarizer, Tokenizer

if TYPE_CHECKING:
    from memctx.store import AsyncMemoryStore, MemoryStore

Strategy = Literal["recent", "stable"]
RecallProvider = Literal["openai", "anthropic", "gemini", "responses"]
ToolMode = Literal["text", "native"]

_GAP: Final = 0.25
"""After a forced event the request is brought this fraction of the budget below it."""
_CHARS_PER_TOKEN: Final = 4


@attrs.frozen
class _Summarize:
    """A request from the step to its driver: summarise these chunks."""

    chunks: tuple[Chunk, ...]
    previous: str | None


@attrs.define
class _Memory:
    """What a policy remembers of one thread between steps."""

    ratio: float = 1.0
    last_count: int | None = None
    last_total: int | None = None
    growth: float | None = None
    overhead: float | None = None


def _usage_tokens(usage: object) -> int:
    """The input tokens a provider reports: Anthropic (input + cache read + cache
    write), OpenAI (``prompt_tokens`` / ``input_tokens``, cached included) or Gemini
    (``prompt_token_count``), from the SDK's usage object or a dict."""

    def get(name: str) -> int:
        value = usage.get(name) if isinstance(usage, Mapping) else getattr(usage, name, None)
        if isinstance(value, bool) or not isinstance(value, int | float) or value < 0:
            return 0
        return int(value)

    for name in ("prompt_tokens", "prompt_token_count"):
        if get(name):
            return get(name)
    total = get("input_tokens")
    total += get("cache_read_input_tokens") + get("cache_creation_input_tokens")
    if not total:
        raise PolicyError(
            "usage",
            f"found no input token count in {usage!r} (expected input_tokens, prompt_tokens "
            "or prompt_token_count)",
        )
    return total


def _task_position(chunks: Sequence[Chunk]) -> int | None:
    for position, chunk in enumerate(chunks):
        if chunk.type is ChunkType.AGENT and chunk.role == "user":
            return position
    return None


def _record(
    reports: list[PolicyReport],
    stages: list[tuple[PolicyReport, MemoryState]],
    state: MemoryState,
) -> None:
    """Note the state after the newest report, if that report changed something."""
    if (
        reports
        and reports[-1].kind != "skipped"
        and (not stages or stages[-1][0] is not reports[-1])
    ):
        stages.append((reports[-1], state))


def _advance(
    run: Generator[_Summarize, str | None, PolicyStep], answer: str | None
) -> _Summarize | PolicyStep:
    """Run the step on to its next question, or to its end (a StopIteration cannot cross
    into an asyncio future, so the end is returned)."""
    try:
        return run.send(answer)
    except StopIteration as done:
        step: PolicyStep = done.value
        return step


def _has_recall_hint(summarizer: object) -> bool:
    """Whether ``summarizer`` is one of memctx's, which can say that details can be recalled."""
    from memctx.compress._extractive import ExtractiveSummarizer
    from memctx.compress._llm_summarizer import LLMSummarizer

    return isinstance(summarizer, ExtractiveSummarizer | LLMSummarizer)


def _is_async(summarizer: object) -> bool:
    method = getattr(type(summarizer), "__call__", None)  # noqa: B004 - the method, not callability
    return inspect.iscoroutinefunction(summarizer) or inspect.iscoroutinefunction(method)


class ContextPolicy:
    """Everything a long run needs per model call, composed (see the module's docstring).

    ``model``: a name :func:`~memctx.policy.model_profile` knows, or a
    :class:`~memctx.policy.ModelProfile`. The budget is ``max_tokens`` or the model's
    window minus ``reserve_tokens`` (kept for the answer). ``clear_tool_uses``: a
    :class:`~memctx.policy.ClearToolUses` (``None``: never clear). ``compaction``: a
    :class:`~memctx.compaction.CompactionPolicy` (fractions are of the budget) with
    ``summarizer`` (sync, or ``async def``; default: an
    :class:`~memctx.compaction.ExtractiveSummarizer`). ``strategy``, ``system_prompt``
    and ``tools`` go to the build and the request. ``tokenizer`` overrides the
    profile's, ``builder`` the default builder. ``recall=True`` gives the agent the
    ``recall`` tool (:meth:`recall_tool`, handled by :meth:`recall`, whose answer holds at
    most ``recall_max_tokens``), and makes the summary say that older details can be
    recalled (the default summary, or an ``ExtractiveSummarizer`` or ``LLMSummarizer``
    given as ``summarizer``).

    A policy remembers, per thread id, what calibration and growth it has seen: use
    one policy per agent (it is safe to share between threads of a store).
    """

    def __init__(
        self,
        model: str | ModelProfile = "claude-sonnet-4-6",
        *,
        reserve_tokens: int = 8_000,
        max_tokens: int | None = None,
        clear_tool_uses: ClearToolUses | None = None,
        compaction: CompactionPolicy | None = None,
        summarizer: Summarizer | None = None,
        strategy: Strategy = "stable",
        system_prompt: str | None = None,
        tools: ToolMode = "text",
        tokenizer: Tokenizer | None = None,
        builder: ContextBuilder | None = None,
        recall: bool = False,
        recall_max_tokens: int = 2000,
    ) -> None:
        self.profile = model_profile(model)
        window = self.profile.context_window
        if isinstance(reserve_tokens, bool) or not isinstance(reserve_tokens, int):
            raise PolicyError("reserve_tokens", f"must be an int, got {reserve_tokens!r}")
        if not 0 <= reserve_tokens < window:
            raise PolicyError(
                "reserve_tokens",
                f"{reserve_tokens} must be >= 0 and below {self.profile.name}'s window of "
                f"{window} tokens",
            )
        if max_tokens is not None and (
            isinstance(max_tokens, bool) or not isinstance(max_tokens, int) or max_tokens < 1
        ):
            raise PolicyError("max_tokens", f"must be a positive int or None, got {max_tokens!r}")
        if max_tokens is not None and max_tokens > window:
            raise PolicyError(
                "max_tokens",
                f"{max_tokens} is above {self.profile.name}'s window of {window} tokens",
            )
        self.reserve_tokens = reserve_tokens
        self.max_tokens = max_tokens
        self.budget: int = max_tokens if max_tokens is not None else window - reserve_tokens
        if clear_tool_uses is not None and not isinstance(clear_tool_uses, ClearToolUses):
            raise PolicyError(
                "clear_tool_uses", f"must be a ClearToolUses, got {clear_tool_uses!r}"
            )
        if compaction is not None and not isinstance(compaction, CompactionPolicy):
            raise PolicyError("compaction", f"must be a CompactionPolicy, got {compaction!r}")
        if summarizer is not None and not callable(summarizer):
            raise PolicyError(
                "summarizer", f"must be callable (chunks, previous), got {summarizer!r}"
            )
        if recall is not True and recall is not False:
            raise PolicyError("recall", f"must be True or False, got {recall!r}")
        if (
            isinstance(recall_max_tokens, bool)
            or not isinstance(recall_max_tokens, int)
            or recall_max_tokens < 50
        ):
            raise PolicyError(
                "recall_max_tokens", f"must be an int of at least 50, got {recall_max_tokens!r}"
            )
        self.recall_enabled = recall
        self.recall_max_tokens = recall_max_tokens
        if strategy not in ("recent", "stable"):
            raise PolicyError("strategy", f"must be 'recent' or 'stable', got {strategy!r}")
        if tools not in ("text", "native"):
            raise PolicyError("tools", f"must be 'text' or 'native', got {tools!r}")
        self.clear_tool_uses = clear_tool_uses
        self.compaction = compaction
        self.strategy: Strategy = strategy
        self.system_prompt = system_prompt
        self.tools: ToolMode = tools
        try:
            self.tokenizer: Tokenizer = tokenizer or create_tokenizer(self.profile.tokenizer)
        except MemctxError as exc:
            raise PolicyError("tokenizer", str(exc)) from None
        self.builder = builder if builder is not None else create_builder(self.tokenizer)
        if summarizer is None and compaction is not None:
            from memctx.compress._extractive import ExtractiveSummarizer

            # About an eighth of the budget (4 characters a token), so that a summary
            # leaves room for many requests after each compaction.
            summarizer = ExtractiveSummarizer(
                max_chars=min(24_000, max(1_000, self.budget // 2)), recall_hint=recall
            )
        elif recall and _has_recall_hint(summarizer):
            summarizer = attrs.evolve(summarizer, recall_hint=True)  # type: ignore[misc]
        self.summarizer = summarizer
        self.compaction_tokens: tuple[int, int] | None = None
        if compaction is not None:
            try:
                self.compaction_tokens = compaction.tokens(self.budget)
            except CompactionError as exc:
                raise PolicyError("compaction", str(exc)) from None
            if self.compaction_tokens[0] > self.budget:
                raise PolicyError(
                    "compaction.trigger",
                    f"{self.compaction_tokens[0]} tokens is above the budget of {self.budget} "
                    f"({self.profile.name}'s window {window} minus reserve {reserve_tokens})",
                )
        self.clear_trigger: int | None = None
        if clear_tool_uses is not None:
            given = check_amount("clear_tool_uses.trigger", clear_tool_uses.trigger)
            if given is not None:
                self.clear_trigger = resolve_amount(given, self.budget)
            elif self.compaction_tokens is not None:
                self.clear_trigger = self.compaction_tokens[0]
            else:
                self.clear_trigger = int(0.8 * self.budget)
            if self.clear_trigger > self.budget:
                raise PolicyError(
                    "clear_tool_uses.trigger",
                    f"{self.clear_trigger} tokens is above the budget of {self.budget}",
                )
        self._memory: dict[str | None, _Memory] = {}
        self._lock = threading.Lock()

    def __repr__(self) -> str:
        return (
            f"ContextPolicy(model={self.profile.name!r}, budget={self.budget}, "
            f"clear_tool_uses={self.clear_tool_uses!r}, compaction={self.compaction!r})"
        )

    # -- recall ---------------------------------------------------------------------

    def recall_tool(self, provider: RecallProvider | None = None) -> dict[str, Any]:
        """The ``recall`` tool's definition, to put in the request's tools next to the
        agent's own: in the shape of ``provider`` (``"openai"``, ``"responses"``,
        ``"anthropic"``, ``"gemini"``; default: the model's provider), as
        :func:`memctx.store.recall_tool` makes it. Needs ``recall=True``."""
        from memctx.store import recall_tool

        self._check_recall()
        try:
            return recall_tool(self.profile.provider if provider is None else provider)
        except MemctxError as exc:
            raise PolicyError("provider", str(exc)) from None

    def recall(
        self,
        store: MemoryStore,
        thread_id: str,
        arguments: Mapping[str, Any] | str,
        *,
        visible: bool | None = None,
    ) -> str:
        """Answer the model's ``recall`` call on ``thread_id``: the matching chunks of the
        thread's whole history, rendered as this policy's builder renders them, best first,
        within ``recall_max_tokens`` counted by this policy's tokenizer
        (:func:`memctx.store.recall`). ``arguments`` are the call's (a mapping, or JSON
        text). Bad arguments raise :class:`~memctx.StoreArgumentError`, whose message can
        go back to the model as the tool's error. Needs ``recall=True``."""
        from memctx.store import recall

        self._check_recall()
        return recall(store, thread_id, arguments, visible=visible, **self._recall_options())

    async def arecall(
        self,
        store: AsyncMemoryStore,
        thread_id: str,
        arguments: Mapping[str, Any] | str,
        *,
        visible: bool | None = None,
    ) -> str:
        """:meth:`recall` for an :class:`~memctx.store.AsyncMemoryStore`."""
        from memctx.store import arecall

        self._check_recall()
        return await arecall(store, thread_id, arguments, visible=visible, **self._recall_options())

    def _check_recall(self) -> None:
        if not self.recall_enabled:
            raise PolicyError(
                "recall",
                "is False: make the policy with recall=True to give the agent the recall "
                "tool (the summary then says that older details can be recalled)",
            )

    def _recall_options(self) -> dict[str, Any]:
        return {
            "max_tokens": self.recall_max_tokens,
            "tokenizer": self.tokenizer,
            "builder": self.builder,
        }

    # -- the two drivers ------------------------------------------------------------

    def step(
        self,
        state: MemoryState,
        *,
        usage: object = None,
        overflowed: bool = False,
        now: dt.datetime | None = None,
    ) -> PolicyStep:
        """Clear and compact ``state`` when due, build it, and make the provider request.

        ``usage``: the provider's usage of the previous request (calibrates the
        budget); ``overflowed``: the provider refused the previous request as too
        long (shrink now); ``now``: the compaction time (default: the clock).
        """
        run = self._run(state, usage, overflowed, now)
        answer: str | None = None
        try:
            while True:
                ask = run.send(answer)
                if _is_async(self.summarizer):
                    raise PolicyError(
                        "summarizer", "is async (async def): use await policy.astep(...)"
                    )
                answer = self._summarize(ask)
        except StopIteration as done:
            step: PolicyStep = done.value
            return step

    async def astep(
        self,
        state: MemoryState,
        *,
        usage: object = None,
        overflowed: bool = False,
        now: dt.datetime | None = None,
    ) -> PolicyStep:
        """:meth:`step` for an asyncio loop: counting, clearing and building run in a
        worker thread, an ``async`` summarizer is awaited, a sync one runs in a thread."""
        run = self._run(state, usage, overflowed, now)
        answer: str | None = None
        while True:
            ask = await asyncio.to_thread(_advance, run, answer)
            if isinstance(ask, PolicyStep):
                return ask
            if _is_async(self.summarizer) or hasattr(self.summarizer, "asummarize"):
                answer = await self._asummarize(ask)
            else:
                answer = await asyncio.to_thread(self._summarize, ask)

    def _summarize(self, ask: _Summarize) -> str:
        assert self.summarizer is not None
        try:
            text = self.summarizer(list(ask.chunks), ask.previous)
        except MemctxError as exc:
            raise PolicyError("summarizer", f"failed: {exc}") from exc
        except Exception as exc:
            raise PolicyError("summarizer", f"failed: {type(exc).__name__}: {exc}") from exc
        return self._checked(text)

    async def _asummarize(self, ask: _Summarize) -> str:
        summarizer: Any = self.summarizer
        try:
            call = getattr(summarizer, "asummarize", summarizer)
            made: Awaitable[str] = call(list(ask.chunks), ask.previous)
            text = await made
        except MemctxError as exc:
            raise PolicyError("summarizer", f"failed: {exc}") from exc
        except Exception as exc:
            raise PolicyError("summarizer", f"failed: {type(exc).__name__}: {exc}") from exc
        return self._checked(text)

    @staticmethod
    def _checked(text: object) -> str:
        try:
            return check_summary(text)
        except CompactionError:
            raise PolicyError("summarizer", f"returned no text ({text!r})") from None

    # -- the step itself ------------------------------------------------------------

    def _memory_of(self, thread_id: str | None) -> _Memory:
        with self._lock:
            return attrs.evolve(self._memory.get(thread_id) or _Memory())

    def _run(
        self,
        state: MemoryState,
        usage: object,
        overflowed: bool,
        now: dt.datetime | None,
    ) -> Generator[_Summarize, str | None, PolicyStep]:
        if not isinstance(state, MemoryState):
            raise PolicyError("state", f"must be a MemoryState, got {type(state).__name__}")
        if overflowed is not True and overflowed is not False:
            raise PolicyError("overflowed", f"must be True or False, got {overflowed!r}")
        memory = self._memory_of(state.thread_id)
        events: list[str] = []
        if usage is not None:
            reported = _usage_tokens(usage)
            if memory.last_count:
                memory.ratio = min(max(reported / memory.last_count, 0.5), 4.0)
                events.append("calibrated")
        if overflowed:
            events.append("overflowed")
            # The provider refused what it counted above its window; memctx had counted
            # ``seen``. Aim below as if the provider counts that much more from now on.
            window = self.profile.context_window if self.max_tokens is None else self.budget
            seen = memory.last_count or self.budget
            memory.ratio = min(max(memory.ratio * 1.25, 1.05 * window / max(seen, 1)), 4.0)
        limit = max(1, min(self.budget, math.floor(self.budget / max(memory.ratio, 1.0))))
        tok, builder = self.tokenizer, self.builder
        counts = chunk_tokens(counts_of(builder), state, tok)
        prompt = tok.count(self.system_prompt) if self.system_prompt else 0
        per_chunk = memory.overhead if memory.overhead is not None else 4.0
        overhead = prompt + math.ceil(per_chunk * len(state)) + 8
        total = sum(counts) + overhead
        if memory.last_total is not None and total > memory.last_total:
            grown = total - memory.last_total
            memory.growth = grown if memory.growth is None else 0.7 * memory.growth + 0.3 * grown
        growth = memory.growth if memory.growth is not None else self.budget / 20
        target = int(limit * (1 - _GAP))
        first_total, first_counts = total, counts
        for attempt in range(2):
            # The estimate can be a little low: when the build still leaves chunks out,
            # the step is done again as over the budget.
            force = overflowed or total > limit or attempt == 1
            reports: list[PolicyReport] = []
            stages: list[tuple[PolicyReport, MemoryState]] = []
            current, total, counts = state, first_total, first_counts
            clear_trigger = self.clear_trigger
            if clear_trigger is not None and (force or total > min(clear_trigger, limit)):
                current, total, counts = self._clear(
                    current, counts, total, overhead, force, limit, growth, reports
                )
                _record(reports, stages, current)
            if self.compaction is not None and self.compaction_tokens is not None:
                trigger, keep = self.compaction_tokens
                must = overflowed or total > limit or (force and total > target)
                if must or total > min(trigger, limit):
                    outcome = yield from self._compact(
                        current, counts, total, overhead, keep, must, limit, growth, reports, now
                    )
                    current, total, counts = outcome
                    _record(reports, stages, current)
            if total > limit:
                current, total, counts = self._trim(
                    current, counts, total, overhead, limit, reports
                )
                _record(reports, stages, current)
            result, limit, task = self._build(current, limit, prompt)
            if force or stages or not result.excluded_for("over_budget"):
                break
        request = self._request(result, None if task is None else current.chunks[task])
        included = set(result.included_chunk_ids)
        content = sum(c for ch, c in zip(current, counts, strict=True) if ch.id in included)
        extra = max(0, result.token_count - content - prompt - 8)
        memory.overhead = extra / max(len(included), 1)
        memory.last_count = result.token_count
        memory.last_total = sum(counts) + prompt + math.ceil(memory.overhead * len(current)) + 8
        with self._lock:
            self._memory[state.thread_id] = memory
        events.extend(r.kind for r in reports)
        return PolicyStep(
            state=current,
            result=result,
            request=request,
            reports=tuple(reports),
            events=tuple(events),
            budget=limit,
            stages=tuple(stages),
        )

    def _build(
        self, current: MemoryState, limit: int, prompt: int
    ) -> tuple[ContextBuildResult, int, int | None]:
        options: dict[str, Any] = {
            "tokenizer": self.tokenizer,
            "strategy": self.strategy,
            "provider": self.profile.provider,
        }
        if self.system_prompt is not None:
            options["system_prompt"] = self.system_prompt
        task = _task_position(current.chunks)
        pinned = [c.id for c in current.chunks[:3] if is_compaction_summary(c)]
        if task is not None:
            pinned.insert(0, current.chunks[task].id)
        if pinned:
            options["pinned_chunk_ids"] = tuple(pinned)
        try:
            result = self.builder.build(current, max_tokens=limit, **options)
        except BudgetExceededError as exc:
            if exc.needed > self.budget:
                raise
            limit = exc.needed  # what must stay needs more than the calibrated budget
            result = self.builder.build(current, max_tokens=limit, **options)
        return result, limit, task

    def _worth(self, saved: int, rewritten: int, after: int, trigger: int, growth: float) -> bool:
        """Whether the reads saved until the next event outweigh the cache write now."""
        read = self.profile.cache_read_multiplier
        write = max(self.profile.cache_write_multiplier, 1.0)
        requests = max(1.0, (trigger - after) / max(growth, 1.0))
        return requests * saved * read >= rewritten * (write - read)

    def _clear(
        self,
        state: MemoryState,
        counts: list[int],
        total: int,
        overhead: int,
        force: bool,
        limit: int,
        growth: float,
        reports: list[PolicyReport],
    ) -> tuple[MemoryState, int, list[int]]:
        clear = self.clear_tool_uses
        assert clear is not None
        assert self.clear_trigger is not None
        positions = clear.candidates(state.chunks)
        if not positions:
            return state, total, counts
        new, report = apply_compressors(
            state, [clear], tokenizer=self.tokenizer, counter=counts_of(self.builder)
        )
        if not report.changed:
            return state, total, counts
        saved = report.tokens_before - report.tokens_after
        after = total - saved
        first = positions[0]
        rewritten = after - overhead - sum(counts[:first])
        if saved <= 0 or saved < clear.clear_at_least:
            reason = (
                f"clearing would save {saved} tokens, under clear_at_least={clear.clear_at_least}"
            )
            reports.append(PolicyReport("skipped", reason, total, total))
            return state, total, counts
        if not force and not self._worth(saved, rewritten, after, self.clear_trigger, growth):
            reason = (
                f"clearing would save {saved} tokens a request but write {rewritten} again "
                "to the cache: not worth it yet"
            )
            reports.append(PolicyReport("skipped", reason, total, total))
            return state, total, counts
        why = "over the budget" if force else f"over the trigger of {self.clear_trigger} tokens"
        reason = f"{why}: cleared {len(report.replaced_ids)} old tool outputs"
        reports.append(PolicyReport("cleared", reason, total, after, report))
        return new, after, chunk_tokens(counts_of(self.builder), new, self.tokenizer)

    def _compact(
        self,
        state: MemoryState,
        counts: list[int],
        total: int,
        overhead: int,
        keep: int,
        must: bool,
        limit: int,
        growth: float,
        reports: list[PolicyReport],
        now: dt.datetime | None,
    ) -> Generator[_Summarize, str | None, tuple[MemoryState, int, list[int]]]:
        assert self.compaction_tokens is not None
        trigger = self.compaction_tokens[0]
        chunks = state.chunks
        task = _task_position(chunks)
        plan = plan_compaction(chunks, keep, counts, keep=() if task is None else (task,))
        given = summary_input(state, plan)
        if given is None:
            return state, total, counts
        previous_tokens = 0 if plan.previous is None else counts[plan.previous]
        estimate = min(previous_tokens + 400, sum(counts[i] for i in plan.covered))
        after = plan.must_keep_tokens + estimate + overhead
        saved = total - after
        if saved <= 0 and not must:
            return state, total, counts
        first = plan.covered[0]
        rewritten = after - overhead - sum(counts[:first])
        if not must and not self._worth(saved, rewritten, after, min(trigger, limit), growth):
            reason = (
                f"compaction would save about {saved} tokens a request but write {rewritten} "
                "again to the cache: not worth it yet"
            )
            reports.append(PolicyReport("skipped", reason, total, total))
            return state, total, counts
        text = yield _Summarize(tuple(given[0]), given[1])
        assert text is not None
        new, report = place_summary(state, plan, text, self.tokenizer, self.builder, now)
        new_counts = chunk_tokens(counts_of(self.builder), new, self.tokenizer)
        new_total = sum(new_counts) + overhead
        if new_total >= total:
            reason = f"a compaction would not make the request smaller ({new_total} tokens)"
            reports.append(PolicyReport("skipped", reason, total, total))
            return state, total, counts
        why = "over the budget" if must else f"over the trigger of {trigger} tokens"
        reason = (
            f"{why}: {len(report.covered_ids)} chunks summarised, the newest {keep} tokens kept"
        )
        reports.append(PolicyReport("compacted", reason, total, new_total, report))
        return new, new_total, new_counts

    def _trim(
        self,
        state: MemoryState,
        counts: list[int],
        total: int,
        overhead: int,
        limit: int,
        reports: list[PolicyReport],
    ) -> tuple[MemoryState, int, list[int]]:
        """Cut outputs too large for the budget to a preview (the last resort)."""
        max_chars = max(200, limit * _CHARS_PER_TOKEN // 4)
        trim = TrimToolOutputs(keep_recent=0, max_chars=max_chars)
        new, report = apply_compressors(
            state, [trim], tokenizer=self.tokenizer, counter=counts_of(self.builder)
        )
        if not report.changed:
            return state, total, counts
        new_counts = chunk_tokens(counts_of(self.builder), new, self.tokenizer)
        new_total = sum(new_counts) + overhead
        reason = (
            f"still over the budget of {limit}: {len(report.replaced_ids)} outputs cut to a preview"
        )
        reports.append(PolicyReport("trimmed", reason, total, new_total, report))
        return new, new_total, new_counts

    def _request(self, result: ContextBuildResult, task: Chunk | None) -> dict[str, Any]:
        provider = self.profile.provider
        if provider == "anthropic":
            return anthropic_request(result, task, self.builder, self.tools)
        if provider == "gemini":
            gemini: dict[str, Any] = result.to_gemini(tools=self.tools)
            return gemini
        return {"messages": result.to_openai(tools=self.tools)}
