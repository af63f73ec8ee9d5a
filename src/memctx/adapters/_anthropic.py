"""Anthropic Messages API: ``client.messages.create(..., **to_anthropic(result))``."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Final

from memctx.adapters._cache import MAX_BREAKPOINTS, ephemeral, mark_message, marks_in, message_marks
from memctx.adapters._checks import check_flag, checked_tool_definitions
from memctx.adapters._conversation import (
    Call,
    Part,
    Source,
    Text,
    ToolMode,
    Turn,
    conversation,
)
from memctx.adapters._turns import turn_options

DECLARED_TOOL_DESCRIPTION: Final = (
    "A tool called earlier in this conversation (declared by memctx so that the "
    "history's tool calls are accepted)."
)


def to_anthropic(
    source: Source,
    *,
    tools: ToolMode = "text",
    prefill: bool | None = None,
    opening_turn: str | None = None,
    closing_turn: str | None = None,
    tool_definitions: Sequence[Mapping[str, Any]] = (),
    cache: bool = False,
) -> dict[str, Any]:
    """The ``system``, ``messages`` (and, for native calls, ``tools``) arguments.

    The rules met: the system text is the top-level ``system`` (left out when
    there is none); ``messages`` start with a user turn (``opening_turn`` is
    added before a leading assistant turn) and end with one (``closing_turn``
    is added after a final assistant turn) unless ``prefill=True``, in which
    case a final assistant turn is kept as the prefill, its trailing white
    space removed. ``tools="native"`` sends ``tool_use`` / ``tool_result``
    blocks (``is_error`` for failed calls); since the API refuses those blocks
    unless the request defines the tools, ``tools`` lists
    ``tool_definitions`` plus a minimal definition (any object as input) for
    each other tool the history calls. Raises
    :class:`~memctx.EmptyContextError` when there is no user or assistant turn.

    The added turns: a result built with ``provider="anthropic"`` (or
    ``"gemini"``) counted its ``turn_options`` in ``token_count``; those are
    sent, and an ``opening_turn``, ``closing_turn`` or ``prefill`` given here
    that differs raises :class:`~memctx.TurnMismatchError` -- pass it to the
    build instead. Otherwise (no provider, or messages given) the turns given
    here are added, uncounted (defaults: :data:`OPENING_TURN`,
    :data:`CLOSING_TURN`, no prefill).

    ``cache=True`` marks the stable prefix with ``cache_control`` breakpoints
    (at most four with those in ``tool_definitions``): the system prompt
    (``system`` is then a list of one text block) and the messages that the
    previous request sent or the next one will repeat; the rule is in
    :mod:`memctx.adapters._cache` and docs/strategies-and-caching.md.
    """
    check_flag("cache", cache)
    definitions = checked_tool_definitions(tool_definitions)
    talk = conversation(source, tools, "Anthropic", alternate=True)
    options = turn_options(
        source, opening_turn=opening_turn, closing_turn=closing_turn, prefill=prefill
    )
    added = options.added(t.role for t in talk.turns)
    messages: list[dict[str, Any]] = []
    if added.opening is not None:
        messages.append({"role": "user", "content": added.opening})
    messages.extend(_message(turn, native=tools == "native") for turn in talk.turns)
    if added.closing is not None:
        messages.append({"role": "user", "content": added.closing})
    elif messages[-1]["role"] == "assistant":
        _strip_final(messages[-1])
    request: dict[str, Any] = {"messages": messages}
    used = list(dict.fromkeys(p.name for t in talk.turns for p in t.parts if isinstance(p, Call)))
    if used:
        defined = definitions
        names = {d.get("name") for d in defined}
        defined += [
            {
                "name": name,
                "description": DECLARED_TOOL_DESCRIPTION,
                "input_schema": {"type": "object"},
            }
            for name in used
            if name not in names
        ]
        request["tools"] = defined
    room = MAX_BREAKPOINTS - marks_in(request.get("tools", ()))
    if talk.system.strip():
        request["system"] = talk.system
        if cache and room > 0:
            request["system"] = [
                {"type": "text", "text": talk.system, "cache_control": ephemeral()}
            ]
            room -= 1
    if cache:
        offset = 1 if added.opening is not None else 0
        for index in message_marks(source, talk, tools, room):
            mark_message(messages[offset + index])
    return request


def _message(turn: Turn, *, native: bool) -> dict[str, Any]:
    if not native or all(isinstance(p, Text) for p in turn.parts):
        text = "".join(p.text for p in turn.parts if isinstance(p, Text))
        return {"role": turn.role, "content": text}
    return {"role": turn.role, "content": [_block(p) for p in turn.parts]}


def _block(part: Part) -> dict[str, Any]:
    if isinstance(part, Text):
        return {"type": "text", "text": part.text}
    if isinstance(part, Call):
        return {"type": "tool_use", "id": part.id, "name": part.name, "input": part.arguments}
    block: dict[str, Any] = {"type": "tool_result", "tool_use_id": part.id}
    if part.output:
        block["content"] = part.output
    if part.is_error:
        block["is_error"] = True
    return block


def _strip_final(message: dict[str, Any]) -> None:
    """A prefill must not end in white space: strip the end of the final text."""
    content = message["content"]
    if isinstance(content, str):
        message["content"] = content.rstrip()
    elif content and content[-1].get("type") == "text":
        content[-1]["text"] = content[-1]["text"].rstrip()
