"""Each provider's documented request rules, written as checks on the JSON body sent.

Each ``*_violations`` function returns the rules a request body breaks (an
empty list: it meets them all). They are written from the providers'
documentation, independently of memctx's adapters.
"""

from __future__ import annotations

import json
import re
from typing import Any, Final

TOOL_ID: Final = re.compile(r"[A-Za-z0-9_-]{1,40}\Z")  # OpenAI: 40 at most
ANTHROPIC_ID: Final = re.compile(r"[A-Za-z0-9_-]{1,64}\Z")
FUNCTION_NAME: Final = re.compile(r"[A-Za-z0-9_-]{1,64}\Z")
GEMINI_NAME: Final = re.compile(r"[A-Za-z_][A-Za-z0-9_.:-]{0,63}\Z")


def _blank(text: Any) -> bool:
    return not isinstance(text, str) or not text.strip()


def _empty_content(content: Any) -> bool:
    """Neither text nor a non-empty list of parts (each text part non-blank)."""
    if isinstance(content, list):
        return not content or any(
            p.get("type") in ("text", "input_text") and _blank(p.get("text")) for p in content
        )
    return _blank(content)


def openai_violations(body: dict[str, Any]) -> list[str]:
    """Chat completions: messages present; tool calls answered by ``tool`` messages
    right after them; valid ids and names; arguments a JSON object."""
    out: list[str] = []
    messages = body.get("messages")
    if not messages:
        return ["messages is empty"]
    waiting: set[str] = set()
    for i, message in enumerate(messages):
        role = message.get("role")
        if role not in ("system", "user", "assistant", "tool"):
            out.append(f"[{i}] unknown role {role!r}")
        if role == "system" and i != 0:
            out.append(f"[{i}] system message after the start")
        if role == "system" and _blank(message.get("content")):
            out.append(f"[{i}] system content empty")
        if role == "user" and _empty_content(message.get("content")):
            out.append(f"[{i}] user content empty")
        if role == "tool":
            if message.get("tool_call_id") not in waiting:
                out.append(f"[{i}] tool message answers no pending call of the turn before")
            waiting.discard(message.get("tool_call_id"))
            continue
        if waiting:
            out.append(f"[{i}] calls {sorted(waiting)} were not answered before this message")
            waiting = set()
        if role == "assistant":
            calls = message.get("tool_calls") or []
            if message.get("content") is None and not calls:
                out.append(f"[{i}] assistant message with neither content nor tool calls")
            for call in calls:
                if not TOOL_ID.match(call["id"]):
                    out.append(f"[{i}] invalid tool call id {call['id']!r}")
                if not FUNCTION_NAME.match(call["function"]["name"]):
                    out.append(f"[{i}] invalid function name {call['function']['name']!r}")
                try:
                    arguments = json.loads(call["function"]["arguments"])
                except json.JSONDecodeError:
                    arguments = None
                if not isinstance(arguments, dict):
                    out.append(f"[{i}] arguments are not a JSON object")
                waiting.add(call["id"])
    if waiting:
        out.append(f"calls {sorted(waiting)} never answered")
    return out


MAX_CACHE_BREAKPOINTS: Final = 4


def _cache_violations(body: dict[str, Any]) -> list[str]:
    """Prompt caching: at most four ``cache_control`` breakpoints in tools, system and
    messages together; each ``{"type": "ephemeral"}`` (a ``ttl`` of 5m or 1h allowed);
    never on a blank text block."""
    out: list[str] = []
    system = body.get("system")
    blocks = [*body.get("tools", []), *(system if isinstance(system, list) else [])]
    for message in body.get("messages", []):
        if isinstance(message["content"], list):
            blocks += message["content"]
    marked = [b for b in blocks if "cache_control" in b]
    if len(marked) > MAX_CACHE_BREAKPOINTS:
        out.append(f"{len(marked)} cache_control breakpoints (at most 4)")
    for block in marked:
        control = block["cache_control"]
        if control.get("type") != "ephemeral" or set(control) - {"type", "ttl"}:
            out.append(f"cache_control {control!r} is not ephemeral")
        if control.get("ttl", "5m") not in ("5m", "1h"):
            out.append(f"cache_control ttl {control['ttl']!r}")
        if block.get("type") == "text" and _blank(block.get("text")):
            out.append("cache_control on a blank text block")
    return out


def _system_blank(system: Any) -> bool:
    if isinstance(system, list):  # text blocks
        return all(b.get("type") == "text" and _blank(b.get("text")) for b in system)
    return _blank(system)


def anthropic_violations(body: dict[str, Any], *, prefill: bool = False) -> list[str]:
    """Messages API: user first; user last unless prefilling, and a prefill never ends in
    white space; roles alternate; no empty or white-space text; ``system`` top level (a
    string or text blocks); every ``tool_use`` answered by a ``tool_result`` in the next
    (user) turn, results first in that turn; valid ids and names; tools defined for every
    ``tool_use``; the prompt-caching rules of ``_cache_violations``."""
    messages = body.get("messages")
    if not messages:
        return ["messages is empty"]
    out = _cache_violations(body)
    if "system" in body and _system_blank(body["system"]):
        out.append("system is blank")
    if messages[0]["role"] != "user":
        out.append("the first message is not a user turn")
    last = messages[-1]
    if last["role"] == "assistant":
        if not prefill:
            out.append("ends with an assistant turn without prefill")
        content = last["content"]
        text = content if isinstance(content, str) else (content[-1].get("text") or "x")
        if text != text.rstrip():
            out.append("the final assistant turn ends in white space")
    defined = {tool["name"] for tool in body.get("tools", [])}
    pending: set[str] = set()
    for i, message in enumerate(messages):
        role = message["role"]
        if role not in ("user", "assistant"):
            out.append(f"[{i}] role {role!r}")
        if i and messages[i - 1]["role"] == role:
            out.append(f"[{i}] two {role} turns in a row")
        content = message["content"]
        blocks = [{"type": "text", "text": content}] if isinstance(content, str) else content
        if not blocks:
            out.append(f"[{i}] empty content")
        answered: set[str] = set()
        seen_other = False
        seen_call = False
        for block in blocks:
            kind = block["type"]
            if kind in ("thinking", "redacted_thinking"):
                if role != "assistant" or seen_call:
                    out.append(f"[{i}] {kind} block not before the assistant turn's tool_use")
                if kind == "thinking" and _blank(block.get("signature")):
                    out.append(f"[{i}] thinking block without its signature")
                if kind == "redacted_thinking" and _blank(block.get("data")):
                    out.append(f"[{i}] redacted_thinking block without data")
            if kind in ("image", "document") and role != "user":
                out.append(f"[{i}] {kind} block in an assistant turn")
            seen_call = seen_call or kind == "tool_use"
            if kind == "text" and _blank(block["text"]):
                out.append(f"[{i}] blank text block")
            if kind == "tool_use":
                if role != "assistant":
                    out.append(f"[{i}] tool_use in a user turn")
                if not ANTHROPIC_ID.match(block["id"]):
                    out.append(f"[{i}] invalid tool_use id {block['id']!r}")
                if not FUNCTION_NAME.match(block["name"]) or block["name"] not in defined:
                    out.append(f"[{i}] tool {block['name']!r} invalid or not defined in tools")
                if not isinstance(block["input"], dict):
                    out.append(f"[{i}] tool_use input is not an object")
            if kind == "tool_result":
                if role != "user" or seen_other:
                    out.append(f"[{i}] tool_result not first in a user turn")
                answered.add(block["tool_use_id"])
            else:
                seen_other = True
        if answered != pending:
            out.append(f"[{i}] results {sorted(answered)} do not match calls {sorted(pending)}")
        pending = {b["id"] for b in blocks if b["type"] == "tool_use"}
    if pending:
        out.append(f"calls {sorted(pending)} never answered")
    return out


def gemini_violations(body: dict[str, Any], *, prefill: bool = False) -> list[str]:
    """generateContent (REST body as the SDK sends it): roles ``user``/``model``; user
    first and last (unless prefilling); the system instruction outside the contents;
    no empty part; a function call turn right after a user turn and answered by as
    many function responses, same names, in the next user turn."""
    out: list[str] = []
    contents = body.get("contents")
    if not contents:
        return ["contents is empty"]
    if contents[0]["role"] != "user":
        out.append("the first content is not a user turn")
    if contents[-1]["role"] != "user" and not prefill:
        out.append("ends with a model turn without prefill")
    pending: list[str] = []
    for i, content in enumerate(contents):
        role = content.get("role")
        if role not in ("user", "model"):
            out.append(f"[{i}] role {role!r}")
        if i and contents[i - 1]["role"] == role:
            out.append(f"[{i}] two {role} turns in a row")
        parts = content.get("parts") or []
        if not parts:
            out.append(f"[{i}] no parts")
        responses: list[str] = []
        calls: list[str] = []
        for part in parts:
            if len(part) != 1:
                out.append(f"[{i}] a part with {sorted(part)}")
            if "text" in part and _blank(part["text"]):
                out.append(f"[{i}] blank text part")
            if "functionCall" in part:
                name = part["functionCall"]["name"]
                if role != "model" or not GEMINI_NAME.match(name):
                    out.append(f"[{i}] function call {name!r} misplaced or misnamed")
                calls.append(name)
            if "functionResponse" in part:
                if role != "user":
                    out.append(f"[{i}] function response in a model turn")
                responses.append(part["functionResponse"]["name"])
        if sorted(responses) != sorted(pending):
            out.append(f"[{i}] responses {responses} do not answer calls {pending}")
        pending = calls
    if pending:
        out.append(f"calls {pending} never answered")
    if "systemInstruction" in body and _blank(body["systemInstruction"]["parts"][0]["text"]):
        out.append("blank system instruction")
    return out


def responses_violations(body: dict[str, Any]) -> list[str]:
    """Responses API ``input``: items present; every ``function_call`` answered by one
    ``function_call_output`` later, every output answering an earlier call; a reasoning
    item has an id and is followed by an item it led to (not the end, not only more
    reasoning); valid ids and names; arguments a JSON object; no blank message."""
    items = body.get("input")
    if not isinstance(items, list) or not items:
        return ["input is empty"]
    out: list[str] = []
    waiting: set[str] = set()
    for i, item in enumerate(items):
        kind = item.get("type", "message")
        if kind == "message":
            if item.get("role") not in ("system", "developer", "user", "assistant"):
                out.append(f"[{i}] role {item.get('role')!r}")
            if _empty_content(item.get("content")):
                out.append(f"[{i}] blank message")
        elif kind == "function_call":
            if not TOOL_ID.match(item["call_id"]) or not FUNCTION_NAME.match(item["name"]):
                out.append(f"[{i}] invalid call id or name")
            if not isinstance(json.loads(item["arguments"]), dict):
                out.append(f"[{i}] arguments are not a JSON object")
            waiting.add(item["call_id"])
        elif kind == "function_call_output":
            if item["call_id"] not in waiting:
                out.append(f"[{i}] output answers no earlier call")
            waiting.discard(item["call_id"])
        elif kind == "reasoning":
            rest = [x.get("type", "message") for x in items[i + 1 :]]
            if not item.get("id") or not any(k != "reasoning" for k in rest[:1] + rest):
                out.append(f"[{i}] reasoning item without an id or a following item")
        else:
            out.append(f"[{i}] unknown item type {kind!r}")
    if waiting:
        out.append(f"calls {sorted(waiting)} never answered")
    return out
