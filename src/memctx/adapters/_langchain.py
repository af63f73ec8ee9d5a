"""LangChain messages (``langchain-core``, the ``memctx[langchain]`` extra)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from memctx.adapters._conversation import Source, ToolMode, conversation
from memctx.adapters._parts import Call, Media, Part, Result, Text, part_text

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


def to_langchain(source: Source, *, tools: ToolMode = "native") -> list[BaseMessage]:
    """``SystemMessage``, ``HumanMessage``, ``AIMessage`` (and ``ToolMessage``) objects.

    ``tools="native"`` (the default): natively sendable calls become the
    ``AIMessage``'s ``tool_calls`` and each result a ``ToolMessage``
    (``status="error"`` for a failed call; an image or PDF of the call's as
    a block of its content) right after it, with the ids and
    names of :func:`memctx.adapters.tool_mapping`; images and PDFs become
    LangChain's standard ``image`` / ``file`` content blocks (langchain-core
    1.x) of the ``HumanMessage``; reasoning stays text. ``tools="text"``:
    every chunk as its XML text. No turn is added: LangChain passes the
    messages to whichever provider you call. Raises
    :class:`~memctx.EmptyContextError` when there is no message at all.
    """
    lc = require_langchain()
    talk = conversation(source, tools, "LangChain", system_only=True)
    out: list[BaseMessage] = []
    if talk.system:
        out.append(lc.SystemMessage(content=talk.system))
    for turn in talk.turns:
        body = [p for p in turn.parts if not isinstance(p, Result | Call)]
        for result in (p for p in turn.parts if isinstance(p, Result)):
            out.append(
                lc.ToolMessage(
                    content=_content(_result_parts(result)),
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
            text = "".join(part_text(p) for p in body)
            out.append(lc.AIMessage(content=text, tool_calls=calls))
        elif body:
            out.append(lc.HumanMessage(content=_content(body)))
    return out


def _result_parts(result: Result) -> list[Part]:
    """A result's text (unless it has none and media) and its media."""
    text: list[Part] = [Text(result.output)] if result.output or not result.media else []
    return [*text, *result.media]


def _content(parts: Sequence[Part]) -> Any:
    if not any(isinstance(p, Media) for p in parts):
        return "".join(part_text(p) for p in parts)
    blocks: list[dict[str, Any]] = []
    for part in parts:
        if isinstance(part, Media):
            block: dict[str, Any] = {"type": "image" if part.is_image else "file"}
            if part.url is not None:
                block["url"] = part.url
            else:
                block["base64"] = part.data
            block["mime_type"] = part.media_type
            blocks.append(block)
        elif blocks and blocks[-1]["type"] == "text":
            blocks[-1]["text"] += part_text(part)
        else:
            blocks.append({"type": "text", "text": part_text(part)})
    return blocks
