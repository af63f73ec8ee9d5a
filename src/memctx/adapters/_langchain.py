"""LangChain messages (``langchain-core``, the ``memctx[langchain]`` extra)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from memctx.adapters._conversation import Call, Result, Source, Text, ToolMode, conversation

if TYPE_CHECKING:
    from langchain_core.messages import BaseMessage


def require_langchain() -> Any:
    """Import ``langchain_core.messages``, or say how to install it."""
    try:
        import langchain_core.messages as messages
    except ImportError:
        raise ImportError(
            "LangChain support needs langchain-core: pip install 'memctx[langchain]'"
        ) from None
    return messages


def to_langchain(source: Source, *, tools: ToolMode = "text") -> list[BaseMessage]:
    """``SystemMessage``, ``HumanMessage``, ``AIMessage`` (and ``ToolMessage``) objects.

    ``tools="native"``: natively sendable calls become the ``AIMessage``'s
    ``tool_calls`` and each result a ``ToolMessage`` (``status="error"`` for
    a failed call) right after it, with the ids and names of
    :func:`memctx.adapters.tool_mapping`. No turn is added: LangChain passes
    the messages to whichever provider you call. Raises
    :class:`~memctx.EmptyContextError` when there is no message at all.
    """
    lc = require_langchain()
    talk = conversation(source, tools, "LangChain", system_only=True)
    out: list[BaseMessage] = []
    if talk.system:
        out.append(lc.SystemMessage(content=talk.system))
    for turn in talk.turns:
        text = "".join(p.text for p in turn.parts if isinstance(p, Text))
        for result in (p for p in turn.parts if isinstance(p, Result)):
            out.append(
                lc.ToolMessage(
                    content=result.output,
                    tool_call_id=result.id,
                    name=result.name,
                    status="error" if result.is_error else "success",
                )
            )
        if turn.role == "assistant":
            calls = [
                {"name": p.name, "args": p.arguments, "id": p.id, "type": "tool_call"}
                for p in turn.parts
                if isinstance(p, Call)
            ]
            out.append(lc.AIMessage(content=text, tool_calls=calls))
        elif text:
            out.append(lc.HumanMessage(content=text))
    return out
