"""Replaying a recorded run: the request before each assistant turn, built and priced in order.

A run is the :class:`~memctx.MemoryState` of everything an agent recorded. A
model call happened wherever an assistant-role chunk follows a chunk of another
role (the assistant's text and its tool calls are one turn). Before each such
point the history so far is handed to a policy (``policy.step(state)``; when it
clears or compacts, the replay goes on from the state it returned plus the
run's later chunks, as the agent loop would) or built with a strategy and
exported with the provider's adapter. Each request is then billed by the
provider's cache (:mod:`memctx.replay._pricing`).
"""

from __future__ import annotations

import inspect
import os
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Final, Protocol

import attrs

from memctx import (
    BudgetExceededError,
    ChunkType,
    EmptyContextError,
    MemoryState,
    ReplayError,
    create_builder,
    create_tokenizer,
)
from memctx.compress import TrimToolOutputs
from memctx.replay._blocks import BLOCKS, BlockCounter
from memctx.replay._load import load_run
from memctx.replay._pricing import PromptCache, cost, make_cache
from memctx.replay._report import ReplayReport, RequestCost

if TYPE_CHECKING:
    from memctx import Chunk, ContextBuilder, ContextBuildResult
    from memctx.policy import ModelProfile
    from memctx.typing import Tokenizer


class PolicyStepLike(Protocol):
    """What a policy's ``step`` returns: the request, the build, the state to go on from."""

    @property
    def request(self) -> Any: ...

    @property
    def result(self) -> ContextBuildResult: ...

    @property
    def state(self) -> MemoryState: ...


class Policy(Protocol):
    """Anything with ``step(state)``, as :class:`memctx.policy.ContextPolicy` has (a
    ``now=`` keyword, when taken, gets the time of the request)."""

    def step(self, state: MemoryState) -> PolicyStepLike: ...


@attrs.frozen
class Strategy:
    """A baseline: how each request is built when no policy runs."""

    name: str
    strategy: str
    """The builder's ``strategy``."""
    budgeted: bool
    """Held to the budget (``none``: sends everything)."""
    compressors: tuple[Any, ...] = ()
    """Applied at every build (``rolling``: old tool outputs trimmed every step)."""


ROLLING_MASK: Final = TrimToolOutputs(keep_recent=2, max_chars=2_000)
"""The rolling mask: the bundled long-running example's trimming, redone before every request."""

STRATEGIES: Final[Mapping[str, Strategy]] = {
    "none": Strategy("none", "recent", budgeted=False),
    "raw": Strategy("raw", "recent", budgeted=False),
    "recent": Strategy("recent", "recent", budgeted=True),
    "stable": Strategy("stable", "stable", budgeted=True),
    "rolling": Strategy("rolling", "recent", budgeted=True, compressors=(ROLLING_MASK,)),
}
"""The baselines by name: ``none``/``raw`` send the whole history; ``recent`` and
``stable`` are the builder's strategies at the budget; ``rolling`` is ``recent``
with :data:`ROLLING_MASK` applied before every request."""

_CALLS: Final = ("tool_call", "skill_call")


def request_points(run: MemoryState, builder: ContextBuilder) -> list[int]:
    """How many chunks precede each model call: every assistant-role chunk that follows
    a chunk of another role (the first chunk of an assistant turn)."""
    roles = [builder.render(chunk)[0] for chunk in run]
    return [
        n for n in range(1, len(roles)) if roles[n] == "assistant" and roles[n - 1] != "assistant"
    ]


def orphaned_tool_calls(result: ContextBuildResult, state: MemoryState) -> int:
    """Calls sent without the results the state has for them, plus results sent
    without their call (by ``call_id``)."""
    answered = {_call_id(c) for c in state if _is_result(c)}
    calls = {_call_id(c) for c in result.included_chunks if _is_call(c)}
    results = {_call_id(c) for c in result.included_chunks if _is_result(c)}
    unanswered = {c for c in calls if c in answered and c not in results}
    return len(unanswered) + len(results - calls)


def _call_id(chunk: Chunk) -> str | None:
    return chunk.metadata.call_id


def _is_call(chunk: Chunk) -> bool:
    return (
        chunk.type is ChunkType.WORKFLOW and chunk.action in _CALLS and _call_id(chunk) is not None
    )


def _is_result(chunk: Chunk) -> bool:
    return chunk.type is ChunkType.ENVIRONMENT and _call_id(chunk) is not None


def provider_request(result: ContextBuildResult, provider: str) -> Any:
    """The request the provider's adapter makes of ``result``: Anthropic with its cache
    marks (``cache=True``), OpenAI's messages, Gemini's contents and config."""
    if provider == "anthropic":
        return result.to_anthropic(cache=True)
    if provider == "gemini":
        return result.to_gemini()
    return {"messages": result.to_openai()}


def step_events(step: Any) -> tuple[str, ...]:
    """The clearing and compaction events a policy step reports (``events``, or one
    name per report in ``reports``)."""
    events = getattr(step, "events", None)
    if events is not None:
        return tuple(str(e) for e in events)
    names = []
    for report in getattr(step, "reports", None) or ():
        name = str(getattr(report, "kind", None) or type(report).__name__).lower()
        if "compact" in name:
            names.append("compaction")
        elif "clear" in name:
            names.append("clearing")
        else:
            names.append(name)
    return tuple(names)


@attrs.define
class _Pricer:
    """Bills each request of one replay with the profile's cache rules."""

    profile: ModelProfile
    counter: BlockCounter
    cache: PromptCache
    limit: int
    requests: list[RequestCost] = attrs.Factory(list)

    def add(
        self,
        request: Any,
        result: ContextBuildResult,
        state: MemoryState,
        position: int,
        at: Any,
        events: tuple[str, ...] = (),
    ) -> None:
        blocks = BLOCKS[self.profile.provider](request, self.counter)
        tokens = result.token_count
        billing = self.cache.send(blocks, tokens, at)
        billed, plain = cost(billing, self.profile)
        self.requests.append(
            RequestCost(
                index=len(self.requests),
                input_tokens=tokens,
                cache_read_tokens=billing.read,
                cache_write_tokens=billing.write,
                uncached_tokens=billing.uncached,
                cost=billed,
                cost_without_cache=plain,
                cache_break=billing.broke,
                events=events,
                budget_violation=tokens > self.limit,
                orphaned_tool_calls=orphaned_tool_calls(result, state),
                position=position,
                at=at,
            )
        )


def _profile(model: Any) -> ModelProfile:
    from memctx.policy import ModelProfile, model_profile

    if isinstance(model, ModelProfile):
        return model
    return model_profile(model)


def _tokenizer(profile: ModelProfile) -> Tokenizer:
    return create_tokenizer(profile.tokenizer)


def _check_budget(max_tokens: object) -> int | None:
    if max_tokens is None:
        return None
    if isinstance(max_tokens, bool) or not isinstance(max_tokens, int) or max_tokens < 1:
        raise ReplayError("max_tokens", f"must be a positive int or None, got {max_tokens!r}")
    return max_tokens


def _run_state(run: object) -> MemoryState:
    if isinstance(run, MemoryState):
        return run
    if isinstance(run, str | os.PathLike):
        return load_run(run)
    raise ReplayError("run", f"must be a MemoryState or a path, got {type(run).__name__}")


def replay(
    run: MemoryState | str | os.PathLike[str],
    policy_or_strategy: Policy | str = "stable",
    *,
    model: str | ModelProfile | None = None,
    max_tokens: int | None = None,
    label: str | None = None,
    on_progress: Callable[[int, int], object] | None = None,
) -> ReplayReport:
    """Replay ``run`` request by request and price every request for ``model``.

    ``policy_or_strategy`` is an object with ``step(state)`` (a
    :class:`memctx.policy.ContextPolicy`; ``model`` then defaults to its
    profile) or a baseline's name from :data:`STRATEGIES` (``model`` is then
    required). ``max_tokens`` is the budget a strategy builds to (default: the
    model's window less its largest answer; ``none`` ignores it) and the limit a
    request is checked against (default: a policy's ``budget``, else the model's
    window); a policy builds to its own budget. ``label`` names the report
    (default: the strategy, or the policy's class). ``run`` may be
    a path, read with :func:`load_run`. ``on_progress(done, total)`` is called
    after each request.
    """
    state = _run_state(run)
    budget = _check_budget(max_tokens)
    if isinstance(policy_or_strategy, str):
        return _replay_strategy(state, policy_or_strategy, model, budget, label, on_progress)
    if not callable(getattr(policy_or_strategy, "step", None)):
        raise ReplayError(
            "policy_or_strategy",
            "must be a policy (an object with step(state)) or one of "
            f"{', '.join(STRATEGIES)}; got {policy_or_strategy!r}",
        )
    return _replay_policy(state, policy_or_strategy, model, budget, label, on_progress)


def _replay_strategy(
    run: MemoryState,
    name: str,
    model: str | ModelProfile | None,
    budget: int | None,
    label: str | None,
    on_progress: Callable[[int, int], object] | None,
) -> ReplayReport:
    strategy = STRATEGIES.get(name)
    if strategy is None:
        raise ReplayError(
            "strategy", f"unknown strategy {name!r}; choose one of {', '.join(STRATEGIES)}"
        )
    if model is None:
        raise ReplayError("model", f"the {name!r} strategy needs a model to build and price for")
    profile = _profile(model)
    tokenizer = _tokenizer(profile)
    builder = create_builder(tokenizer)
    build_to = budget if budget is not None else profile.context_window - profile.max_output_tokens
    pricer = _pricer(profile, tokenizer, budget)
    points = request_points(run, builder)
    grown = MemoryState(thread_id=run.thread_id)
    done = 0
    for point in points:
        grown = grown.extend(run.chunks[done:point])
        done = point
        result = _build(builder, grown, strategy, build_to, profile.provider)
        request = _request(result, profile.provider)
        if request is not None:
            pricer.add(request, result, grown, point, run.chunks[point - 1].created_at)
        if on_progress is not None:
            on_progress(len(pricer.requests), len(points))
    return _report(pricer, profile, label or name, budget)


def _build(
    builder: ContextBuilder, state: MemoryState, strategy: Strategy, budget: int, provider: str
) -> ContextBuildResult:
    """Build one request; when what must be kept (the system, pinned chunks, the newest
    unit) is over the budget, the request is built to just that size (and reported over
    budget), as the agent would have had to send it."""
    options: dict[str, Any] = {"strategy": strategy.strategy, "provider": provider}
    if strategy.compressors:
        options["compressors"] = strategy.compressors
    if not strategy.budgeted:
        return builder.build(state, max_tokens=None, **options)
    try:
        return builder.build(state, max_tokens=budget, **options)
    except BudgetExceededError as exc:
        needed = exc.needed
    try:
        return builder.build(state, max_tokens=max(needed, budget + 1), **options)
    except BudgetExceededError:
        return builder.build(state, max_tokens=None, **options)


def _request(result: ContextBuildResult, provider: str) -> Any:
    try:
        return provider_request(result, provider)
    except EmptyContextError:  # nothing a model could be called with (only a system prompt)
        return None


def _pricer(profile: ModelProfile, tokenizer: Tokenizer, budget: int | None) -> _Pricer:
    limit = budget if budget is not None else profile.context_window
    return _Pricer(profile, BlockCounter(tokenizer), make_cache(profile), limit)


def _report(pricer: _Pricer, profile: ModelProfile, label: str, budget: int | None) -> ReplayReport:
    return ReplayReport(tuple(pricer.requests), model=profile.name, label=label, budget=budget)


def _replay_policy(
    run: MemoryState,
    policy: Policy,
    model: str | ModelProfile | None,
    budget: int | None,
    label: str | None,
    on_progress: Callable[[int, int], object] | None,
) -> ReplayReport:
    if model is None:
        model = getattr(policy, "profile", None) or getattr(policy, "model", None)
        if model is None:
            raise ReplayError("model", "the policy names no model; pass model=")
    profile = _profile(model)
    if budget is None:
        budget = _policy_budget(policy)
    pricer = _pricer(profile, _tokenizer(profile), budget)
    points = request_points(run, create_builder())
    timed = _takes_now(policy)
    stepper: Any = policy  # its step(state, now=...) when it takes one
    state = MemoryState(thread_id=run.thread_id)
    done = 0
    for point in points:
        state = state.extend(run.chunks[done:point])
        done = point
        at = run.chunks[point - 1].created_at
        step = stepper.step(state, now=at) if timed else policy.step(state)
        state = step.state
        pricer.add(_as_request(step.request), step.result, state, point, at, step_events(step))
        if on_progress is not None:
            on_progress(len(pricer.requests), len(points))
    return _report(pricer, profile, label or _policy_label(policy), budget)


def _takes_now(policy: object) -> bool:
    """Whether ``policy.step`` takes ``now=`` (a compaction then carries the run's time)."""
    try:
        parameters = inspect.signature(policy.step).parameters  # type: ignore[attr-defined]
    except (TypeError, ValueError):
        return False
    return "now" in parameters or any(p.kind is p.VAR_KEYWORD for p in parameters.values())


def _as_request(request: Any) -> Any:
    if isinstance(request, Sequence) and not isinstance(request, str | bytes):
        return {"messages": list(request)}
    return request


def _policy_budget(policy: object) -> int | None:
    for name in ("budget", "max_tokens"):
        value = getattr(policy, name, None)
        if isinstance(value, int) and not isinstance(value, bool):
            return value
    return None


def _policy_label(policy: object) -> str:
    label = getattr(policy, "label", None)
    return label if isinstance(label, str) and label else type(policy).__name__


def replay_many(
    run: MemoryState | str | os.PathLike[str],
    strategies: Iterable[Policy | str],
    *,
    model: str | ModelProfile | None = None,
    max_tokens: int | None = None,
) -> tuple[ReplayReport, ...]:
    """The same run replayed under each policy or strategy, side by side."""
    state = _run_state(run)
    return tuple(replay(state, s, model=model, max_tokens=max_tokens) for s in strategies)


def default_policy(model: str | ModelProfile, max_tokens: int | None = None) -> Policy:
    """The policy ``memctx replay`` runs: a :class:`~memctx.policy.ContextPolicy` for
    ``model`` that clears old tool outputs (``ClearToolUses()``) and compacts at 80% of
    the budget, keeping 30% (the configuration ``docs/long-runs.md`` starts from)."""
    from memctx.compaction import CompactionPolicy
    from memctx.policy import ClearToolUses, ContextPolicy

    return ContextPolicy(
        model,
        max_tokens=max_tokens,
        clear_tool_uses=ClearToolUses(),
        compaction=CompactionPolicy(trigger=0.8, keep_recent=0.3),
    )
