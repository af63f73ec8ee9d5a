"""The provider-neutral conversation every adapter maps: turns of text, calls and results.

In ``tools="text"`` mode each message is one turn of text (its chunks' XML).
In ``tools="native"`` mode a tool or skill call becomes a structured call and
its result a structured result, when the call can be sent that way:

- it has a ``call_id`` no other included call has, and its arguments are a
  JSON object;
- exactly one result (``tool_result``/``tool_error`` for a tool call,
  ``skill_result`` for a skill call) with that ``call_id`` is included, and
  it sits in the message right after the call's (the providers want the
  results in the next turn);
- both messages can be cut back into their chunks (always so for renderers
  that use :func:`memctx.xml.render_element`).

Any other call -- a pending call, one whose result was left out or filtered,
one with several results -- stays XML text with its results, so a native call
is never sent without all its results. In a user turn the native results come
first (the providers want them there), then the turn's other chunks.

Also in ``"native"`` mode, an image or document chunk becomes a :class:`Media`
part and a ``thinking`` / ``redacted_thinking`` chunk a :class:`Reasoning`
part, in place; each carries its XML segment too, so an adapter whose API
cannot take it sends that text instead (see ``docs/providers-fidelity.md``).
An image or document chunk with the ``call_id`` of a native result in the
same message is the tool's: it goes with that :class:`Result` (its ``media``)
instead. An assistant message chunk with a Responses ``item_id`` is a
:class:`Text` part of its own, so that its id can be sent back.
A call whose arguments are ``None`` is sent with an empty object.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Final, Literal, Protocol, TypeAlias, TypeGuard

import attrs

from memctx._build.turns import TurnOptions
from memctx._chunk import ROLES, Chunk, ChunkType, ContextMessage, Role
from memctx._exceptions import AdapterError, EmptyContextError
from memctx.adapters._checks import check_mode
from memctx.adapters._ids import provider_id, provider_name
from memctx.adapters._parts import Call, Media, Part, Reasoning, Result, Text, Turn
from memctx.adapters._segments import split_segments
from memctx.xml import sanitize

ToolMode: TypeAlias = Literal["text", "native"]
_RESULT_ACTIONS = {"tool_call": ("tool_result",), "skill_call": ("skill_result",)}


@attrs.frozen
class ToolMapping:
    """How the ids and names of natively sent calls were made valid for the providers.

    ``call_ids`` maps each natively sent call's ``call_id`` to the id sent,
    ``names`` each tool or skill name to the name sent (identical when the
    original was already valid).
    """

    call_ids: Mapping[str, str] = attrs.field(factory=dict)
    names: Mapping[str, str] = attrs.field(factory=dict)


@attrs.frozen
class Conversation:
    system: str
    turns: tuple[Turn, ...]
    mapping: ToolMapping


class BuildResult(Protocol):
    """What the adapters read of a :class:`~memctx.ContextBuildResult`.

    (A Protocol, so that the result's ``to_*`` methods can call the adapters
    without the two modules importing each other.)
    """

    @property
    def messages(self) -> tuple[ContextMessage, ...]: ...

    @property
    def included_chunks(self) -> tuple[Chunk, ...]: ...

    @property
    def excluded_chunk_ids(self) -> tuple[str, ...]: ...

    @property
    def exclusions(self) -> Mapping[str, Any]: ...

    @property
    def strategy(self) -> str: ...

    @property
    def turn_options(self) -> TurnOptions | None: ...

    @property
    def prefix_messages_shared(self) -> int: ...


Source: TypeAlias = BuildResult | Sequence[ContextMessage]
_RESULT_MEMBERS: Final = (
    "messages",
    "included_chunks",
    "excluded_chunk_ids",
    "exclusions",
    "strategy",
    "turn_options",
    "prefix_messages_shared",
)


def is_build_result(source: object) -> TypeGuard[BuildResult]:
    """Whether ``source`` has what :class:`BuildResult` reads, looked up on its class (or
    in its ``__dict__``) without evaluating a property: ``isinstance`` with a runtime
    Protocol calls each (``excluded_chunk_ids`` walks the whole state), on every request."""
    kind = type(source)
    own = getattr(source, "__dict__", {})
    return all(hasattr(kind, name) or name in own for name in _RESULT_MEMBERS)


def _messages(source: Source) -> tuple[ContextMessage, ...]:
    if is_build_result(source):
        return source.messages
    if isinstance(source, str | bytes | Mapping) or not isinstance(source, Iterable):
        raise AdapterError(
            f"expected a ContextBuildResult or ContextMessages, got {type(source).__name__}"
        )
    messages = tuple(source)
    for index, message in enumerate(messages):
        if not isinstance(message, ContextMessage):
            raise AdapterError(
                f"expected a ContextBuildResult or ContextMessages, got {type(message).__name__}"
            )
        if message.role not in ROLES or not isinstance(message.content, str):
            raise AdapterError(
                f"message {index}: needs a role of {', '.join(sorted(ROLES))} and text "
                f"content, got {message.role!r} and {type(message.content).__name__}"
            )
    return messages


def _alternating(body: Sequence[ContextMessage], provider: str) -> tuple[Turn, ...]:
    """Turns whose roles alternate: consecutive messages of one role (given one by one;
    a build never makes them) join, and a blank one is refused, as ``provider`` would."""
    runs: list[tuple[Literal["user", "assistant"], list[str]]] = []
    for index, message in enumerate(body):
        if not message.content.strip():
            raise AdapterError(f"message {index}: has no text, which {provider} refuses")
        role = _turn_role(message.role)
        if runs and runs[-1][0] == role:
            runs[-1][1].append(message.content)
        else:
            runs.append((role, [message.content]))
    return tuple(Turn(role, (Text("".join(texts)),)) for role, texts in runs)


def empty_reason(source: Source) -> str:
    """Why a build gave no conversation to send, in words."""
    messages = _messages(source)
    if messages:
        return "the build holds only a system message, and the API needs a user or assistant turn"
    if not is_build_result(source):
        return "no messages were given"
    if not source.excluded_chunk_ids:
        return "the state holds no chunks"
    counts: dict[str, int] = {}
    for exclusion in source.exclusions.values():
        counts[exclusion.reason.value] = counts.get(exclusion.reason.value, 0) + 1
    detail = ", ".join(f"{n} by {reason}" for reason, n in sorted(counts.items()))
    what = "the budget" if set(counts) == {"over_budget"} else "the options"
    return f"{what} left out all {len(source.excluded_chunk_ids)} chunks ({detail})"


def conversation(
    source: Source,
    tools: ToolMode,
    provider: str,
    *,
    system_only: bool = False,
    alternate: bool = False,
) -> Conversation:
    """The system text and the turns of ``source``.

    Raises EmptyContextError when there is no turn (with ``system_only``:
    when there is not even a system message). With ``alternate``, messages
    given one by one are made into turns whose roles alternate.
    """
    check_mode(tools)
    messages = _messages(source)
    system = "".join(m.content for m in messages if m.role == "system")
    body = [m for m in messages if m.role != "system"]
    if not body:
        if system_only and system:
            return Conversation(system, (), ToolMapping())
        raise EmptyContextError(provider, empty_reason(source))
    if tools == "text" or not is_build_result(source):
        # Messages given without their result hold no chunks: their text is all there is.
        if alternate and not is_build_result(source):
            return Conversation(system, _alternating(body, provider), ToolMapping())
        turns = tuple(Turn(_turn_role(m.role), (Text(m.content),)) for m in body)
        return Conversation(system, turns, ToolMapping())
    return _native(system, body, source.included_chunks)


def _turn_role(role: Role) -> Literal["user", "assistant"]:
    return "assistant" if role == "assistant" else "user"


def _plain(chunk: Chunk) -> Any:
    """The chunk's content as JSON (``None`` for a call made without arguments)."""
    content = chunk.content
    if content is None:
        return {}  # a call without arguments: every provider takes an empty object
    return content if isinstance(content, str) else _clean(json.loads(chunk.text))


def _clean(value: Any) -> Any:
    """JSON with XML-forbidden characters replaced, as in the text form (lone surrogates
    could not even be encoded in a request)."""
    if isinstance(value, str):
        return sanitize(value)
    if isinstance(value, list):
        return [_clean(v) for v in value]
    if isinstance(value, dict):
        return {sanitize(k): _clean(v) for k, v in value.items()}
    return value


@attrs.frozen
class _Cut:
    """A body message with its chunks and their segments (None: it cannot be cut)."""

    message: ContextMessage
    chunks: list[Chunk] | None
    segments: list[str] | None


def _cut(message: ContextMessage, by_id: Mapping[str, Chunk]) -> _Cut:
    found = [by_id.get(i) for i in message.chunk_ids]
    present = [c for c in found if c is not None]
    if len(present) != len(found):
        return _Cut(message, None, None)
    return _Cut(message, present, split_segments(message.content, len(present)))


def _pair(call: Chunk, answer: Chunk, call_id: str) -> tuple[Call, Result]:
    sent = provider_id(call_id)
    name = provider_name(call.metadata.tool or call.metadata.skill or "tool")
    meta = answer.metadata
    failed = bool(meta.error or meta.success is False)
    return (
        Call(call, sent, name, _plain(call)),
        Result(answer, sent, name, sanitize(answer.text), failed),
    )


def _native_pairs(cuts: list[_Cut]) -> dict[str, tuple[Call, Result]]:
    """The calls sent natively with their results, by the chunk id of each."""
    where: dict[str, int] = {}
    calls: dict[str, list[Chunk]] = {}
    results: dict[str, list[Chunk]] = {}
    for index, cut in enumerate(cuts):
        for chunk in cut.chunks or ():
            where[chunk.id] = index
            call_id = chunk.metadata.call_id
            if call_id is None:
                continue
            if chunk.type is ChunkType.WORKFLOW and chunk.action in _RESULT_ACTIONS:
                calls.setdefault(call_id, []).append(chunk)
            elif chunk.type is ChunkType.ENVIRONMENT:
                results.setdefault(call_id, []).append(chunk)
    native: dict[str, tuple[Call, Result]] = {}
    sent_ids: dict[str, str] = {}
    for call_id, found_calls in calls.items():
        answers = results.get(call_id, [])
        if len(found_calls) != 1 or len(answers) != 1:
            continue
        call, answer = found_calls[0], answers[0]
        i, j = where[call.id], where[answer.id]
        if (
            answer.action not in _RESULT_ACTIONS[call.action or ""]
            or not isinstance(_plain(call), dict)
            or j != i + 1
            or cuts[i].segments is None
            or cuts[j].segments is None
            or cuts[i].message.role != "assistant"
            or cuts[j].message.role != "user"
        ):
            continue
        pair = _pair(call, answer, call_id)
        if sent_ids.setdefault(pair[0].id, call_id) != call_id:
            continue  # two call ids met after cleaning: keep the later one as text
        native[call.id] = native[answer.id] = pair
    return native


def _special(chunk: Chunk) -> type[Media] | type[Reasoning] | None:
    """The part a chunk becomes in native mode besides calls and results (None: text)."""
    if chunk.type is ChunkType.AGENT and chunk.action in ("image", "document"):
        if isinstance(chunk.content, Mapping) and (
            "data" in chunk.content or "url" in chunk.content
        ):
            return Media
    elif chunk.type is ChunkType.WORKING_FLOW and chunk.subtype in (
        "THINKING",
        "REDACTED_THINKING",
    ):
        return Reasoning
    return None


def _own_text(chunk: Chunk) -> bool:
    """Whether a chunk is a text part of its own: an assistant message with a Responses id."""
    return (
        chunk.type is ChunkType.AGENT
        and chunk.role == "assistant"
        and chunk.metadata.item_id is not None
    )


def _native_turn(cut: _Cut, native: Mapping[str, tuple[Call, Result]]) -> Turn:
    """One turn: native results first (each with the media of its call), then text, calls,
    media and reasoning in order."""
    role = _turn_role(cut.message.role)
    if (
        cut.chunks is None
        or cut.segments is None
        or not any(c.id in native or _special(c) or _own_text(c) for c in cut.chunks)
    ):
        return Turn(role, (Text(cut.message.content),))
    answered = {
        chunk.metadata.call_id
        for chunk in cut.chunks
        if chunk.id in native and chunk is native[chunk.id][1].chunk
    }
    attached: dict[str | None, list[Media]] = {}
    front: list[Result] = []
    parts: list[Part] = []
    text: list[str] = []
    for chunk, segment in zip(cut.chunks, cut.segments, strict=True):
        pair = native.get(chunk.id)
        special = _special(chunk) if pair is None else None
        if special is Media and chunk.metadata.call_id in answered:
            attached.setdefault(chunk.metadata.call_id, []).append(Media(chunk, segment))
            continue
        if pair is None and special is None and not _own_text(chunk):
            text.append(segment)
            continue
        if text:
            parts.append(Text("".join(text)))
            text = []
        if special is not None:
            parts.append(special(chunk, segment))
        elif pair is None:
            parts.append(Text(segment, chunk.metadata.item_id))
        elif chunk is pair[0].chunk:
            parts.append(pair[0])
        else:
            front.append(pair[1])
    if text:
        parts.append(Text("".join(text)))
    front = [
        attrs.evolve(r, media=tuple(attached.get(r.chunk.metadata.call_id, ()))) for r in front
    ]
    return Turn(role, (*front, *parts))


def _native(system: str, body: list[ContextMessage], included: Sequence[Chunk]) -> Conversation:
    by_id = {chunk.id: chunk for chunk in included}
    cuts = [_cut(message, by_id) for message in body]
    native = _native_pairs(cuts)
    calls = [pair[0] for chunk_id, pair in native.items() if pair[0].chunk.id == chunk_id]
    mapping = ToolMapping(
        {c.chunk.metadata.call_id or "": c.id for c in calls},
        {c.chunk.metadata.tool or c.chunk.metadata.skill or "tool": c.name for c in calls},
    )
    turns = tuple(_native_turn(cut, native) for cut in cuts)
    return Conversation(system, turns, mapping)


def native_conversation(
    messages: Sequence[ContextMessage], chunks: Sequence[Chunk]
) -> Conversation:
    """The native conversation of built ``messages`` holding ``chunks`` (none may be empty)."""
    system = "".join(m.content for m in messages if m.role == "system")
    return _native(system, [m for m in messages if m.role != "system"], chunks)


def tool_mapping(result: BuildResult) -> ToolMapping:
    """The ids and names the native calls of ``result`` are sent with (see :class:`ToolMapping`)."""
    if not any(m.role != "system" for m in result.messages):
        return ToolMapping()
    return conversation(result, "native", "any provider").mapping
