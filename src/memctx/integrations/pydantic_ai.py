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
system prompts and the parts of the newest request are always kept; then the
newest parts that fit (``strategy="recent"``, or any other strategy); a tool
call and its return (same ``tool_call_id``) are kept or dropped together, so the
model never sees a return without its call. The processor returns the same
message objects' parts, in order, with the left-out parts removed (and
messages left empty removed). :attr:`MemctxHistoryProcessor.last_result` is the
build's report (what was kept, what was left out and why, the tokens).

The budget is counted on memctx's rendering of the parts, which is close to,
but not exactly, what the provider counts for pydantic-ai's own request.
"""

from __future__ import annotations

import dataclasses
import json
from typing import Any

from memctx import MemoryState, chunks
from memctx._build.builder import ContextBuilder, create_builder
from memctx._build.options import parse_build_options
from memctx._chunk import Chunk
from memctx._exceptions import BuildOptionError, TranscriptError
from memctx._result import ContextBuildResult

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
    for index, message in enumerate(messages):
        if not isinstance(message, ModelRequest | ModelResponse):
            raise TranscriptError(
                f"messages[{index}]: must be a ModelRequest or ModelResponse, "
                f"got {type(message).__name__}"
            )
    return MemoryState(
        [
            _part_chunk(part, _chunk_id(mi, pi))
            for mi, message in enumerate(messages)
            for pi, part in enumerate(message.parts)
        ]
    )


class MemctxHistoryProcessor:
    """Fit pydantic-ai's message history into ``max_tokens`` (a ``history_processors`` entry).

    The keywords are :meth:`memctx.ContextBuilder.build`'s options
    (``tokenizer``, ``reserve_tokens``, ``strategy``, ``exclude_types``, ...);
    ``builder`` renders the parts (``create_builder()`` by default, kept across
    calls so renderings and counts are reused).
    """

    def __init__(
        self,
        max_tokens: int | None,
        *,
        builder: ContextBuilder | None = None,
        **build_options: Any,
    ) -> None:
        if builder is not None and not isinstance(builder, ContextBuilder):
            raise BuildOptionError(
                "builder", f"must be a ContextBuilder, got {type(builder).__name__}"
            )
        parse_build_options(max_tokens, build_options)  # bad options fail here, not later
        self.max_tokens = max_tokens
        self.builder = builder if builder is not None else create_builder()
        self.build_options = build_options
        self.last_result: ContextBuildResult | None = None

    def capability(self) -> ProcessHistory[Any]:
        """This processor as a pydantic-ai capability: ``Agent(..., capabilities=[...])``."""
        return ProcessHistory(self)

    def __call__(self, messages: list[ModelMessage]) -> list[ModelMessage]:
        if not messages:
            return messages
        state = messages_to_state(messages)
        pinned = list(self.build_options.get("pinned_chunk_ids", ()))
        last = len(messages) - 1
        if isinstance(messages[last], ModelRequest):
            pinned += [_chunk_id(last, pi) for pi in range(len(messages[last].parts))]
        options = {**self.build_options, "pinned_chunk_ids": pinned}
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


def _with_parts(message: ModelMessage, parts: list[Any]) -> ModelMessage:
    if isinstance(message, ModelRequest):
        return dataclasses.replace(message, parts=parts)
    if isinstance(message, ModelResponse):
        return dataclasses.replace(message, parts=parts)
    raise TypeError(f"unknown pydantic-ai message {type(message).__name__}")  # pragma: no cover
