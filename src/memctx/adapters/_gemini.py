"""Gemini: ``client.models.generate_content(model=..., **to_gemini(result))``."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final, Literal

from memctx._exceptions import AdapterError
from memctx.adapters._checks import config_mapping
from memctx.adapters._conversation import Source, ToolMode, conversation
from memctx.adapters._parts import Call, Media, Part, Result, part_text
from memctx.adapters._turns import turn_options

_TOOL_MEDIA: Final = ("response", "after")


def to_gemini(
    source: Source,
    *,
    tools: ToolMode = "native",
    prefill: bool | None = None,
    opening_turn: str | None = None,
    closing_turn: str | None = None,
    config: Mapping[str, Any] | None = None,
    tool_media: Literal["response", "after"] = "response",
) -> dict[str, Any]:
    """Exactly the keyword arguments ``generate_content`` takes besides ``model``.

    ``{"contents": [...], "config": {...}}``: roles ``user`` and ``model``;
    the system text is ``config["system_instruction"]`` (merged into your
    ``config`` when given; a ``system_instruction`` of yours as well as a
    system message in the build raises :class:`~memctx.AdapterError`). Like
    Anthropic's, the contents start with a user turn and end with one unless
    ``prefill=True`` (``opening_turn`` / ``closing_turn`` are added where
    needed). ``tools="native"`` (the default) sends ``function_call`` /
    ``function_response`` parts (the response is ``{"output": text}``, or
    ``{"error": text}`` for a failed call), images and PDFs as
    ``inline_data`` (data) or ``file_data`` (URL) parts -- the data of a
    tool's result (``call_id``) as the ``parts`` of its ``function_response``,
    which Gemini 3 models take (a URL, which the Gemini API does not take
    there, as a part right after it; ``tool_media="after"`` puts all of them
    after it, for older models, which refuse media in a response); reasoning stays
    text (Gemini's thought signatures are its own). ``tools="text"``: every
    chunk as its XML text. Raises
    :class:`~memctx.EmptyContextError` when there is no user or model turn.
    The added turns follow the same rule as :func:`to_anthropic`'s: a result
    built with ``provider="gemini"`` (or ``"anthropic"``) sends the turns it
    counted, and a different ``opening_turn``, ``closing_turn`` or
    ``prefill`` given here raises :class:`~memctx.TurnMismatchError`.
    """
    merged = config_mapping(config)
    if tool_media not in _TOOL_MEDIA:
        raise AdapterError(f"tool_media: must be 'response' or 'after', got {tool_media!r}")
    talk = conversation(source, tools, "Gemini", alternate=True)
    options = turn_options(
        source, opening_turn=opening_turn, closing_turn=closing_turn, prefill=prefill
    )
    added = options.added(t.role for t in talk.turns)
    contents: list[dict[str, Any]] = []
    if added.opening is not None:
        contents.append({"role": "user", "parts": [{"text": added.opening}]})
    for turn in talk.turns:
        role = "model" if turn.role == "assistant" else "user"
        contents.append({"role": role, "parts": _parts(turn.parts, tool_media == "after")})
    if added.closing is not None:
        contents.append({"role": "user", "parts": [{"text": added.closing}]})
    else:
        last = contents[-1]["parts"][-1]
        if contents[-1]["role"] == "model" and "text" in last:
            last["text"] = last["text"].rstrip()
    if talk.system.strip():
        if merged.get("system_instruction") is not None:
            raise AdapterError(
                "config: has a system_instruction, and the build has a system message; "
                "give your instruction to the build (system_prompt=...) instead"
            )
        merged["system_instruction"] = talk.system
    return {"contents": contents, "config": merged}


def _parts(parts: tuple[Part, ...], media_after: bool) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for part in parts:
        if isinstance(part, Result):
            inside = () if media_after else tuple(m for m in part.media if m.url is None)
            out.append(_response(part, inside))
            # The rest right after it (the Gemini API takes no URI inside a response).
            out += [_media(m) for m in part.media if m not in inside]
            continue
        found = _part(part)
        if "text" in found and out and "text" in out[-1]:
            out[-1] = {"text": out[-1]["text"] + found["text"]}
        else:
            out.append(found)
    return out


def _media(part: Media) -> dict[str, Any]:
    if part.url is not None:
        return {"file_data": {"file_uri": part.url, "mime_type": part.media_type}}
    return {"inline_data": {"mime_type": part.media_type, "data": part.data}}


def _part(part: Part) -> dict[str, Any]:
    if isinstance(part, Media):
        return _media(part)
    if isinstance(part, Call):
        call = {"id": part.id, "name": part.name, "args": part.arguments}
        return {"function_call": call}
    return {"text": part_text(part)}


def _response(part: Result, media: tuple[Media, ...]) -> dict[str, Any]:
    key = "error" if part.is_error else "output"
    response: dict[str, Any] = {"id": part.id, "name": part.name, "response": {key: part.output}}
    if media:  # a tool's image or PDF data: multimodal function response parts (Gemini 3)
        response["parts"] = [_media(m) for m in media]
    return {"function_response": response}
