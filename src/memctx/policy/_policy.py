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
   the prompt cache. At a trigger, compaction (and with it, at no extra cost, clearing
   of the old outputs it keeps), or clearing alone when only its trigger is reached,
   makes room for many requests at once. A compaction appends its summary after the
   earlier ones (anchored), so the system prompt, the task and the earlier summaries
   stay a stable prefix that the next request still reads from the cache; the
   summaries are folded into one only when together they pass half the budget (a
   quarter where a cache write costs less than ten cache reads).
3. **Only when it pays.** A change breaks the cache after its first changed chunk:
   that part is written again (Anthropic: 1.25x input) instead of read (0.1x). Under
   the budget a clearing or compaction is done only when the reads it saves over the
   requests until the next one outweigh that write; over the budget it is done anyway.
4. **Nothing structural breaks.** A call stays with its results, a call still
   waiting is never changed, the task (the first user turn) and pinned chunks are
   never cleared or compacted, and the build never exceeds the budget.

This module holds the policy's options and its two drivers; the step itself is
:mod:`memctx.policy._pipeline`, its events (clearing, compaction, trimming and whether
they pay) :mod:`memctx.policy._events`, the provider request and its cache breakpoints
:mod:`memctx.policy._request`.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import inspect
import threading
from collections.abc import Awaitable, Generator, Mapping
from typing import TYPE_CHECKING, Any, Final, Literal

import attrs

from memctx._build.builder import ContextBuilder, create_builder
from memctx._exceptions import CompactionError, MemctxError, PolicyError
from memctx._render.tokens import create_tokenizer
from memctx._state import MemoryState
from memctx.compress._compaction import CompactionPolicy, check_summary
from memctx.policy._clear import ClearToolUses, check_amount, resolve_amount
from memctx.policy._events import Summarize
from memctx.policy._pipeline import Memory, advance, run_step
from memctx.policy._profiles import ModelProfile, model_profile
from memctx.policy._step import PolicyStep
from memctx.typing import Summarizer, Tokenizer

if TYPE_CHECKING:
    from memctx.store import AsyncMemoryStore, MemoryStore

Strategy = Literal["recent", "stable"]
RecallProvider = Literal["openai", "anthropic", "gemini", "responses"]
ToolMode = Literal["text", "native"]

_SUMMARY_SHARES: Final = (0.25, 0.5)
"""The share of the budget the summaries may take together before they are folded: the
larger one when a cache write costs at least :data:`_PRICEY_WRITES` cache reads (a fold
rewrites them once to save reading the excess on every request after; Anthropic:
1.25x / 0.1x)."""
_PRICEY_WRITES: Final = 10.0


def _has_recall_hint(summarizer: object) -> bool:
    """Whether ``summarizer`` is one of memctx's, which can say that details can be recalled."""
    from memctx.compress._extractive import ExtractiveSummarizer
    from memctx.compress._llm_summarizer import LLMSummarizer

    return isinstance(summarizer, ExtractiveSummarizer | LLMSummarizer)


def summarizer_options(policy: ContextPolicy, ask: Summarize) -> dict[str, Any]:
    """What the policy's summarizer takes beyond ``(chunks, previous)``: an
    :class:`~memctx.compaction.ExtractiveSummarizer` takes the earlier summaries a new one
    is stacked after (it repeats no fact of them) and a fold's size allowance."""
    from memctx.compress._extractive import ExtractiveSummarizer

    if not isinstance(policy.summarizer, ExtractiveSummarizer):
        return {}
    options: dict[str, Any] = {}
    if ask.known is not None:
        options["known"] = ask.known
    if ask.max_chars is not None:
        options["max_chars"] = max(ask.max_chars, policy.summarizer.max_chars)
    return options


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
    profile's, ``builder`` the default builder. Every policy hands out the ``recall``
    tool (:meth:`recall_tool`, handled by :meth:`recall`, whose answer holds at most
    ``recall_max_tokens``); ``recall=True``, for an agent given that tool, makes the
    summary say that older details can be recalled (the default summary, or an
    ``ExtractiveSummarizer`` or ``LLMSummarizer`` given as ``summarizer``).

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

            # About a sixth of the budget (a command's line is some 3 characters a
            # token), so that a summary keeps most commands run, with their exit
            # status, and still leaves room for many requests after each compaction; of
            # the assistant's remarks only the last (the summaries are read on every
            # request: the commands, errors and files they keep are worth more than prose).
            summarizer = ExtractiveSummarizer(
                max_chars=min(24_000, max(1_000, self.budget * 9 // 16)),
                max_done=1_000,  # as many steps as max_chars holds
                max_decisions=1,
                recall_hint=recall,
            )
        elif recall and _has_recall_hint(summarizer):
            summarizer = attrs.evolve(summarizer, recall_hint=True)  # type: ignore[misc]
        self.summarizer = summarizer
        write = max(self.profile.cache_write_multiplier, 1.0)
        pricey = write >= _PRICEY_WRITES * self.profile.cache_read_multiplier
        self.summary_cap = int(_SUMMARY_SHARES[pricey] * self.budget)
        """Tokens the summaries may hold together before a compaction folds them into one."""
        lifetimes = self.profile.cache.lifetimes
        self.stable_ttl: str | None = "1h" if 3600.0 in lifetimes[1:] else None
        """The lifetime of the marks on the system prompt and the stable prefix."""
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
        self._memory: dict[str | None, Memory] = {}
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
        :func:`memctx.store.recall_tool` makes it."""
        from memctx.store import recall_tool

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
        go back to the model as the tool's error."""
        from memctx.store import recall

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

        return await arecall(store, thread_id, arguments, visible=visible, **self._recall_options())

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
            ask = await asyncio.to_thread(advance, run, answer)
            if isinstance(ask, PolicyStep):
                return ask
            if _is_async(self.summarizer) or hasattr(self.summarizer, "asummarize"):
                answer = await self._asummarize(ask)
            else:
                answer = await asyncio.to_thread(self._summarize, ask)

    def _summarize(self, ask: Summarize) -> str:
        assert self.summarizer is not None
        try:
            text = self.summarizer(list(ask.chunks), ask.previous, **summarizer_options(self, ask))
        except MemctxError as exc:
            raise PolicyError("summarizer", f"failed: {exc}") from exc
        except Exception as exc:
            raise PolicyError("summarizer", f"failed: {type(exc).__name__}: {exc}") from exc
        return self._checked(text)

    async def _asummarize(self, ask: Summarize) -> str:
        summarizer: Any = self.summarizer
        try:
            call = getattr(summarizer, "asummarize", summarizer)
            made: Awaitable[str] = call(
                list(ask.chunks), ask.previous, **summarizer_options(self, ask)
            )
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

    # -- the step itself (memctx.policy._pipeline) --------------------------------

    def _run(
        self,
        state: MemoryState,
        usage: object,
        overflowed: bool,
        now: dt.datetime | None,
    ) -> Generator[Summarize, str | None, PolicyStep]:
        if not isinstance(state, MemoryState):
            raise PolicyError("state", f"must be a MemoryState, got {type(state).__name__}")
        if overflowed is not True and overflowed is not False:
            raise PolicyError("overflowed", f"must be True or False, got {overflowed!r}")
        with self._lock:
            memory = attrs.evolve(self._memory.get(state.thread_id) or Memory())
        step = yield from run_step(self, state, memory, usage, overflowed, now)
        with self._lock:
            self._memory[state.thread_id] = memory
        return step
