"""A pydantic-ai history processor that fits the message history with memctx.

::

    from pydantic_ai import Agent
    from memctx import create_tokenizer
    from memctx.integrations.pydantic_ai import MemctxHistoryProcessor

    fit = MemctxHistoryProcessor(max_tokens=8000, tokenizer=create_tokenizer("gpt-4o"))
    agent = Agent("openai:gpt-4o", capabilities=[fit.capability()])

(``fit.capability()`` is ``pydantic_ai.capabilities.ProcessHistory(fit)``; the
processor is a plain callable, usable wherever pydantic-ai takes a history
processor.) As with any pydantic-ai history processor, the fitted list also
becomes the run's message history (``result.all_messages()``).

Before each model request, every part of every message (system prompts, user
prompts, tool calls, tool returns, retries, text, thinking) becomes one memctx
chunk, and memctx chooses which to keep within ``max_tokens`` by its rules:
system prompts, the current run's user prompt (the newest one) and the parts of
the newest request are always kept, and the request's instructions are counted;
then the newest parts that fit (``strategy="recent"``, or any other strategy); a
tool call and its return (same ``tool_call_id``) are kept or dropped together, so
the model never sees a return without its call. The processor returns the same
message objects' parts, in order, with the left-out parts removed (and
messages left empty removed). :attr:`MemctxHistoryProcessor.last_result` is the
build's report (what was kept, what was left out and why, the tokens).

With ``MemctxHistoryProcessor(policy=ContextPolicy(...))`` each request is a
:meth:`~memctx.policy.ContextPolicy.step` instead: old tool returns are cleared
and old history compacted when that is due (the summary is sent as a user prompt
part in place of what it covers), with the same pins. The processor keeps the
policy's state between the requests of a run, so the history changes in blocks.
Use ``fit.capability()`` with a policy: it awaits an ``async`` summarizer.

The budget is counted on memctx's rendering of the parts, which is close to,
but not exactly, what the provider counts for pydantic-ai's own request.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Callable, Sequence
from typing import Any

from memctx import MemoryState, chunks
from memctx._build.builder import ContextBuilder, create_builder
from memctx._build.options import parse_build_options
from memctx._chunk import Chunk
from memctx._exceptions import BuildOptionError, PolicyError, TranscriptError
from memctx._result import ContextBuildResult
from memctx.integrations._fit import Kept, RunFit, each
from memctx.policy import ContextPolicy, PolicyStep

try:
    from pydantic_ai.capabilities import ProcessHistory
    from pydantic_ai.messages import (
        ModelMessage,
        ModelRequest,
        ModelResponse,
        RetryPromptPart,
        SystemPromptPart,
        TextPart,
        ThinkingPart,
        ToolCallPart,
        ToolReturnPart,
        UserPromptPart,
    )
except ImportError as exc:  # pragma: no cover - the extra is not installed
    raise ImportError(
        "memctx.integrations.pydantic_ai needs pydantic-ai: pip install 'memctx[pydantic-ai]'"
    ) from exc

__all__ = ["MemctxHistoryProcessor", "messages_to_state"]


def _user_text(content: Any) -> str:
    if isinstance(content, str):
        return content
    texts = []
    for item in content:
        texts.append(item if isinstance(item, str) else f"[{type(item).__name__}]")
    return "\n".join(texts)


def _part_chunk(part: Any, chunk_id: str) -> Chunk:
    if isinstance(part, SystemPromptPart):
        return chunks.system(part.content, id=chunk_id)
    if isinstance(part, UserPromptPart):
        return chunks.user(_user_text(part.content), id=chunk_id)
    if isinstance(part, ToolReturnPart):
        return chunks.tool_result(
            part.tool_name, part.model_response_str(), call_id=part.tool_call_id, id=chunk_id
        )
    if isinstance(part, RetryPromptPart):
        if part.tool_name is not None:
            return chunks.tool_error(
                part.tool_name, part.model_response(), call_id=part.tool_call_id, id=chunk_id
            )
        return chunks.user(part.model_response(), id=chunk_id)
    if isinstance(part, TextPart):
        return chunks.assistant(part.content, id=chunk_id)
    if isinstance(part, ToolCallPart):
        return chunks.tool_call(
            part.tool_name,
            part.args_as_dict(),
            call_id=part.tool_call_id,
            status="completed",
            id=chunk_id,
        )
    if isinstance(part, ThinkingPart):
        return chunks.thinking(part.content, id=chunk_id)
    kind = getattr(part, "part_kind", type(part).__name__)
    return chunks.custom(f"pydantic_ai_{kind}", _describe(part), id=chunk_id)


def _describe(part: Any) -> str:
    if dataclasses.is_dataclass(part) and not isinstance(part, type):
        return json.dumps(dataclasses.asdict(part), default=str)
    return str(part)


def _chunk_id(message_index: int, part_index: int) -> str:
    return f"m{message_index}.p{part_index}"


def messages_to_state(messages: list[ModelMessage]) -> MemoryState:
    """A state with one chunk per part; chunk ids are ``m<message>.p<part>``."""
    _check_messages(messages)
    return MemoryState(
        [
            _part_chunk(part, _chunk_id(mi, pi))
            for mi, message in enumerate(messages)
            for pi, part in enumerate(message.parts)
        ]
    )


def _check_messages(messages: Sequence[Any]) -> None:
    for index, message in enumerate(messages):
        if not isinstance(message, ModelRequest | ModelResponse):
            raise TranscriptError(
                f"messages[{index}]: must be a ModelRequest or ModelResponse, "
                f"got {type(message).__name__}"
            )


def _instructions(messages: Sequence[ModelMessage]) -> str | None:
    """The instructions sent with the newest request (pydantic-ai records them on it)."""
    for message in reversed(messages):
        if isinstance(message, ModelRequest) and message.instructions is not None:
            return message.instructions
    return None


def _prompt(messages: Sequence[ModelMessage]) -> tuple[int, int] | None:
    """Where the current run's user prompt is: the newest ``UserPromptPart``."""
    for mi in range(len(messages) - 1, -1, -1):
        message = messages[mi]
        if isinstance(message, ModelRequest):
            for pi in range(len(message.parts) - 1, -1, -1):
                if isinstance(message.parts[pi], UserPromptPart):
                    return mi, pi
    return None


def _is_prompt(source: tuple[ModelMessage, Any]) -> bool:
    return isinstance(source[1], UserPromptPart)


def _convert(message: ModelMessage, base: str) -> list[tuple[Chunk, Any]]:
    return [
        (_part_chunk(part, f"{base}_{pi}"), (message, part))
        for pi, part in enumerate(message.parts)
    ]


def _changed_part(part: Any, chunk: Chunk) -> Any:
    """``part`` with the content the policy gave its chunk (a cleared or trimmed one)."""
    if isinstance(part, ToolCallPart):
        return dataclasses.replace(part, args=dict(chunk.content))
    if isinstance(part, ToolReturnPart | UserPromptPart | TextPart | SystemPromptPart):
        return dataclasses.replace(part, content=chunk.text)
    return part  # pragma: no cover - a policy changes only tool calls and returns


class MemctxHistoryProcessor:
    """Fit pydantic-ai's message history into ``max_tokens`` (a ``history_processors`` entry),
    or step a :class:`~memctx.policy.ContextPolicy` before each request (``policy=``).

    The keywords are :meth:`memctx.ContextBuilder.build`'s options
    (``tokenizer``, ``reserve_tokens``, ``strategy``, ``exclude_types``, ...);
    ``builder`` renders the parts (``create_builder()`` by default, kept across
    calls so renderings and counts are reused). With ``policy``, the budget, the
    tokenizer and the builder are the policy's, and no other option is taken.
    """

    def __init__(
        self,
        max_tokens: int | None = None,
        *,
        policy: ContextPolicy | None = None,
        builder: ContextBuilder | None = None,
        **build_options: Any,
    ) -> None:
        self.policy = policy
        self._fit: RunFit | None = None
        if policy is not None:
            given = [
                name
                for name, value in (("max_tokens", max_tokens), ("builder", builder))
                if value is not None
            ]
            if given or build_options:
                raise PolicyError(
                    "policy",
                    "takes no other option: the policy sets the budget and the build "
                    f"(got {', '.join(given + sorted(build_options))})",
                )
            self._fit = RunFit(policy, is_prompt=_is_prompt, prefix="m")
        if builder is not None and not isinstance(builder, ContextBuilder):
            raise BuildOptionError(
                "builder", f"must be a ContextBuilder, got {type(builder).__name__}"
            )
        parse_build_options(max_tokens, build_options)  # bad options fail here, not later
        self.max_tokens = max_tokens
        self.builder = builder if builder is not None else create_builder()
        self.build_options = build_options
        self.last_result: ContextBuildResult | None = None

    @property
    def last_step(self) -> PolicyStep | None:
        """The policy's step for the newest request (``None`` without a policy)."""
        return None if self._fit is None else self._fit.last_step

    def capability(self) -> ProcessHistory[Any]:
        """This processor as a pydantic-ai capability: ``Agent(..., capabilities=[...])``."""
        if self._fit is not None:
            return ProcessHistory(self.astep)
        return ProcessHistory(self)

    def __call__(self, messages: list[ModelMessage]) -> list[ModelMessage]:
        if not messages:
            return messages
        if self._fit is not None:
            return self._with_policy(messages, self._fit.step)
        state = messages_to_state(messages)
        pinned = list(self.build_options.get("pinned_chunk_ids", ()))
        last = len(messages) - 1
        if isinstance(messages[last], ModelRequest):
            pinned += [_chunk_id(last, pi) for pi in range(len(messages[last].parts))]
        prompt = _prompt(messages)
        if prompt is not None:
            pinned.append(_chunk_id(*prompt))
        options = {**self.build_options, "pinned_chunk_ids": pinned}
        instructions = _instructions(messages)
        if instructions and "system_prompt" not in options:
            options["system_prompt"] = instructions  # counted, not returned
        result = self.builder.build(state, max_tokens=self.max_tokens, **options)
        self.last_result = result
        if not result.excluded_chunk_ids:
            return messages
        kept = set(result.included_chunk_ids)
        fitted: list[ModelMessage] = []
        for mi, message in enumerate(messages):
            parts = [p for pi, p in enumerate(message.parts) if _chunk_id(mi, pi) in kept]
            if len(parts) == len(message.parts):
                fitted.append(message)
            elif parts:
                fitted.append(_with_parts(message, parts))
        return fitted

    async def astep(self, messages: list[ModelMessage]) -> list[ModelMessage]:
        """The processor with a policy, for an asyncio loop (what :meth:`capability` uses)."""
        if not messages or self._fit is None:
            return self(messages)
        fit = self._fit
        _check_messages(messages)
        state, memo = fit.prepare(messages, messages, each(_convert), _instructions(messages))
        step = await fit.astep(state)
        return self._assemble(fit, fit.finish(step, memo))

    def _with_policy(
        self, messages: list[ModelMessage], run: Callable[[MemoryState], PolicyStep]
    ) -> list[ModelMessage]:
        assert self._fit is not None
        fit = self._fit
        _check_messages(messages)
        state, memo = fit.prepare(messages, messages, each(_convert), _instructions(messages))
        return self._assemble(fit, fit.finish(run(state), memo))

    def _assemble(self, fit: RunFit, kept: list[Kept]) -> list[ModelMessage]:
        """Messages for the kept chunks, in order: an unchanged message as it was, else a
        copy with its kept parts; a summary joins the request before it."""
        self.last_result = None if fit.last_step is None else fit.last_step.result
        groups: list[tuple[ModelMessage | None, list[Any], bool]] = []
        for k in kept:
            if k.source is None:
                part = UserPromptPart(fit.render(k.chunk))
                if groups and isinstance(groups[-1][0], ModelRequest):
                    groups[-1][1].append(part)
                    groups[-1] = (groups[-1][0], groups[-1][1], True)
                else:
                    groups.append((None, [part], True))
                continue
            message, part = k.source
            if k.changed:
                part = _changed_part(part, k.chunk)
            if groups and groups[-1][0] is message:
                groups[-1][1].append(part)
                groups[-1] = (message, groups[-1][1], groups[-1][2] or k.changed)
            else:
                groups.append((message, [part], k.changed))
        out: list[ModelMessage] = []
        for message, parts, changed in groups:
            if message is None:
                out.append(ModelRequest(parts=parts))
            elif not changed and len(parts) == len(message.parts):
                out.append(message)
            else:
                out.append(_with_parts(message, parts))
        fit.remember_sent(out)
        return out


def _with_parts(message: ModelMessage, parts: list[Any]) -> ModelMessage:
    if isinstance(message, ModelRequest):
        return dataclasses.replace(message, parts=parts)
    if isinstance(message, ModelResponse):
        return dataclasses.replace(message, parts=parts)
    raise TypeError(f"unknown pydantic-ai message {type(message).__name__}")  # pragma: no cover
