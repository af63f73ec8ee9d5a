"""What memctx is measured against: the tiktoken floor and LangChain's ``trim_messages``."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

import tiktoken

from memctx import ContextBuilder, ContextBuildResult, MemoryState

if TYPE_CHECKING:
    from langchain_core.messages import BaseMessage

UNLIMITED = 10**12
"""``max_tokens`` given to LangChain for the "everything fits" budget."""


def floor_inputs(result: ContextBuildResult) -> list[str]:
    """The contents of the messages a build returned: exactly what the floor encodes."""
    return [message.content for message in result.messages]


def floor(encoding: tiktoken.Encoding) -> Callable[[list[str]], int]:
    """The floor: ``encode_ordinary`` of each returned message content, once."""
    encode = encoding.encode_ordinary

    def run(contents: list[str]) -> int:
        return sum(len(encode(content)) for content in contents)

    return run


def langchain_available() -> str | None:
    """None when ``langchain_core`` imports, else why not."""
    try:
        import langchain_core.messages  # noqa: F401
    except ImportError as exc:
        return f"langchain-core not installed ({exc}); run with `uv run --group bench`"
    return None


def langchain_version() -> str:
    try:
        import langchain_core
    except ImportError:
        return "not installed"
    return str(langchain_core.__version__)


def to_langchain(builder: ContextBuilder, state: MemoryState) -> list[BaseMessage]:
    """One LangChain message per chunk, holding the same XML memctx renders for it.

    SYSTEM chunks come first as one ``SystemMessage`` (as memctx groups
    them), so ``include_system=True`` keeps them like memctx pins them.
    """
    from langchain_core.messages import AIMessage, HumanMessage, SystemMessage

    system: list[str] = []
    body: list[BaseMessage] = []
    for chunk in state.chunks:
        role, xml = builder.render(chunk)
        if role == "system":
            system.append(xml + "\n")
        elif role == "user":
            body.append(HumanMessage(content=xml))
        else:
            body.append(AIMessage(content=xml))
    head: list[BaseMessage] = [SystemMessage(content="".join(system))] if system else []
    return head + body


_ROLES = {"system": "system", "human": "user", "ai": "assistant", "tool": "tool"}


def exact_counter(encoding: tiktoken.Encoding) -> Callable[[Sequence[BaseMessage]], int]:
    """An exact token counter over LangChain messages: OpenAI's cookbook formula.

    3 tokens per message, the encoded role and content, 3 for reply priming;
    the same ``Encoding`` object memctx counts with.
    """
    encode = encoding.encode_ordinary

    def count(messages: Sequence[BaseMessage]) -> int:
        total = 3
        for message in messages:
            content: Any = message.content
            text = content if isinstance(content, str) else str(content)
            total += 3 + len(encode(_ROLES.get(message.type, message.type))) + len(encode(text))
        return total

    return count


def langchain_trim(
    encoding: tiktoken.Encoding, budget: int | None
) -> Callable[[list[BaseMessage]], list[BaseMessage]]:
    """``trim_messages(strategy="last")`` with the exact counter and ``budget``."""
    from langchain_core.messages import trim_messages

    counter = exact_counter(encoding)
    max_tokens = UNLIMITED if budget is None else budget

    def run(messages: list[BaseMessage]) -> list[BaseMessage]:
        kept: list[BaseMessage] = trim_messages(
            messages,
            max_tokens=max_tokens,
            token_counter=counter,
            strategy="last",
            include_system=True,
            allow_partial=False,
        )
        return kept

    return run
