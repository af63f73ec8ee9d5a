"""Provider adapters: the same messages in each provider's request shape.

The state and the build are provider-agnostic; only these functions know a
provider's format.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from memctx._message import ContextMessage


def to_openai(messages: Sequence[ContextMessage]) -> list[dict[str, str]]:
    """Chat-completions messages."""
    return [message.to_dict() for message in messages]


def to_anthropic(messages: Sequence[ContextMessage]) -> dict[str, Any]:
    """``{"system": ..., "messages": [...]}`` for Anthropic's Messages API.

    System messages become the top-level ``system`` string; the API wants the
    conversation to start with a user turn, so a leading assistant message is
    preceded by an empty-context user turn.
    """
    system = "\n".join(m.content for m in messages if m.role == "system")
    turns = [{"role": m.role, "content": m.content} for m in messages if m.role != "system"]
    if turns and turns[0]["role"] == "assistant":
        turns.insert(0, {"role": "user", "content": "(context follows)"})
    result: dict[str, Any] = {"messages": turns}
    if system:
        result["system"] = system
    return result


def to_gemini(messages: Sequence[ContextMessage]) -> dict[str, Any]:
    """``{"system_instruction": ..., "contents": [...]}`` for Gemini; assistant is ``model``."""
    system = "\n".join(m.content for m in messages if m.role == "system")
    contents = [
        {"role": "model" if m.role == "assistant" else "user", "parts": [{"text": m.content}]}
        for m in messages
        if m.role != "system"
    ]
    result: dict[str, Any] = {"contents": contents}
    if system:
        result["system_instruction"] = {"parts": [{"text": system}]}
    return result


def to_text(messages: Sequence[ContextMessage]) -> str:
    """Each message under a ``=== role ===`` header, for reading and logs."""
    parts = []
    for message in messages:
        parts.append(f"=== {message.role} ===\n{message.content}")
    return "\n".join(parts)
