"""OpenAI chat completions: ``client.chat.completions.create(messages=to_openai(result))``."""

from __future__ import annotations

import json
from typing import Any

from memctx.adapters._conversation import Call, Result, Source, Text, ToolMode, conversation


def to_openai(source: Source, *, tools: ToolMode = "text") -> list[dict[str, Any]]:
    """Chat-completions messages for ``source`` (a build result, or its messages).

    ``tools="text"``: ``{"role", "content"}`` dicts, the system message first.
    ``tools="native"``: calls that can be sent natively (see
    :mod:`memctx.adapters`) become ``tool_calls`` of the assistant message
    (``content`` is ``None`` when it holds no other text), and each result a
    ``tool`` message right after it. OpenAI needs no added turn; a request of
    only a system message is sent as it is. Raises
    :class:`~memctx.EmptyContextError` when there is no message at all.
    """
    talk = conversation(source, tools, "OpenAI", system_only=True)
    messages: list[dict[str, Any]] = []
    if talk.system:
        messages.append({"role": "system", "content": talk.system})
    for turn in talk.turns:
        texts = [p.text for p in turn.parts if isinstance(p, Text)]
        calls = [p for p in turn.parts if isinstance(p, Call)]
        for result in (p for p in turn.parts if isinstance(p, Result)):
            messages.append({"role": "tool", "tool_call_id": result.id, "content": result.output})
        if turn.role == "assistant":
            message: dict[str, Any] = {"role": "assistant", "content": "".join(texts) or None}
            if calls:
                message["tool_calls"] = [_tool_call(call) for call in calls]
            messages.append(message)
        elif texts:
            messages.append({"role": "user", "content": "".join(texts)})
    return messages


def _tool_call(call: Call) -> dict[str, Any]:
    arguments = json.dumps(call.arguments, ensure_ascii=False)
    function = {"name": call.name, "arguments": arguments}
    return {"id": call.id, "type": "function", "function": function}
