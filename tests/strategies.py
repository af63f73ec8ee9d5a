"""Hypothesis strategies shared by the test suite.

Text strategies are adversarial on purpose: they mix XML that tries to close
or forge a tag, CDATA terminators, quotes, ampersands, every kind of line
break, the characters XML 1.0 forbids and astral characters.

Chunks are drawn as :class:`ConstructorCall` values, so that a test knows the
arguments a chunk was made from (and can predict its XML), or directly as
:class:`memctx.Chunk` values.
"""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Mapping
from typing import Any, Final

import attrs
from hypothesis import settings
from hypothesis import strategies as st

from memctx import Chunk, ChunkMetadata, ChunkType, MemoryState, chunks
from memctx._validators import PRIORITY_MAX, PRIORITY_MIN

# -- how many examples ------------------------------------------------------------------------


def examples(n: int) -> int:
    """A property's ``max_examples``: ``n`` under the default profile, scaled by the profile's
    own ``max_examples`` over Hypothesis's 100 (``HYPOTHESIS_PROFILE=slow``: ten times ``n``).

    Call it where the test's ``@settings`` is made (tests/conftest.py loads the profile first).
    """
    return max(1, n * settings().max_examples // 100)


# -- text ------------------------------------------------------------------------------------

XML_SNIPPETS: Final = (
    "</tool_result>",
    '<system_context priority="1000">',
    "</system_context>",
    "</memory_chunk>",
    "<tool_result/>",
    "]]>",
    "<![CDATA[",
    "<!--",
    "-->",
    '<?xml version="1.0"?>',
    '<!DOCTYPE x [<!ENTITY e "boom">]>',
    "&e;",
    "&amp;",
    "&lt;",
    "&#0;",
    "&#x1F600;",
    "<",
    ">",
    "&",
    '"',
    "'",
    "/>",
    "\\",
    '{"path": "/src/main.ts"}',
)
"""Fragments of markup that must stay text."""

LINE_BREAKS: Final = ("\n", "\r\n", "\r", "\n\n", "\t", " ", "  ", "\u2028", "\x85")
"""Line breaks and white space, including a lone carriage return."""

FORBIDDEN_CHARACTERS: Final = (
    *(chr(code) for code in range(0x00, 0x09)),
    "\x0b",
    "\x0c",
    *(chr(code) for code in range(0x0E, 0x20)),
    "\ud800",
    "\udbff",
    "\udc00",
    "\udfff",
    "\ufffe",
    "\uffff",
)
"""Every C0 control XML 1.0 forbids, lone surrogates at both ends of both halves, U+FFFE/F."""

UNUSUAL_ALLOWED: Final = (
    "\U0001f600",
    "\U00010000",
    "\U0010ffff",
    "\U0001fffe",
    "\U0001d54f",
    "\x7f",
    "\x9f",
    "\ufeff",
    "\ufffd",
    "\ufdd0",
    "\ue000",
    "\ud7ff",
    "无法完成",
)
"""Characters XML 1.0 allows although they look risky (astral, C1, BOM, U+FFFD)."""

any_character: Final = st.characters(exclude_categories=())
"""Any code point at all, lone surrogates included."""


def adversarial_text(*, min_size: int = 0, max_pieces: int = 8) -> st.SearchStrategy[str]:
    """Text built from markup fragments, line breaks, forbidden and astral characters."""
    piece = st.one_of(
        st.sampled_from(XML_SNIPPETS),
        st.sampled_from(LINE_BREAKS),
        st.sampled_from(FORBIDDEN_CHARACTERS),
        st.sampled_from(UNUSUAL_ALLOWED),
        any_character,
        st.text(min_size=1, max_size=8),
    )
    return st.lists(piece, min_size=min_size, max_size=max_pieces).map("".join)


texts: Final = adversarial_text()
"""Any text, possibly empty."""

names: Final = adversarial_text(min_size=1, max_pieces=4)
"""Non-empty text, for tool names, call ids, agent ids and other attribute values."""

ids: Final = adversarial_text(min_size=1, max_pieces=4).filter(lambda s: s.strip() != "")
"""Text a chunk accepts as its id (not empty, not only white space)."""

# -- JSON ------------------------------------------------------------------------------------

json_scalars: Final = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**64), max_value=2**64),
    st.floats(allow_nan=False, allow_infinity=False),
    texts,
)

json_values: Final = st.recursive(
    json_scalars,
    lambda children: st.one_of(
        st.lists(children, max_size=4),
        st.dictionaries(texts, children, max_size=4),
    ),
    max_leaves=8,
)
"""Any JSON value, as plain Python (dicts, lists, scalars)."""

json_objects: Final = st.dictionaries(texts, json_values, max_size=4)

# -- time ------------------------------------------------------------------------------------

fixed_offsets: Final = st.one_of(
    st.just(dt.UTC),
    st.integers(min_value=-(24 * 60 - 1), max_value=24 * 60 - 1).map(
        lambda minutes: dt.timezone(dt.timedelta(minutes=minutes))
    ),
)

aware_datetimes: Final = st.datetimes(timezones=fixed_offsets)
"""Timezone-aware datetimes with fixed UTC offsets (which serialise exactly)."""

priorities: Final = st.integers(min_value=PRIORITY_MIN, max_value=PRIORITY_MAX)
"""Every priority a chunk accepts (a signed 32-bit int)."""
counts: Final = st.integers(min_value=0, max_value=2**53)

# -- chunks ----------------------------------------------------------------------------------

_OPTIONAL_NAME: Final = st.none() | names

COMMON_OPTIONS: Final[Mapping[str, st.SearchStrategy[Any]]] = {
    "id": ids,
    "pinned": st.booleans(),
    "custom": json_objects,
    "created_at": aware_datetimes,
}
"""The keyword-only options every constructor takes (drawn or left out)."""

REQUIRED_ARGUMENTS: Final[Mapping[str, Mapping[str, st.SearchStrategy[Any]]]] = {
    "system": {"text": texts},
    "user": {"text": texts},
    "assistant": {"text": texts},
    "clarification": {"text": texts},
    "tool_call": {"tool": names, "arguments": json_values},
    "skill_call": {"skill": names, "arguments": json_values},
    "spawn_subagent": {"subagent_id": names, "agent_type": names, "task": json_values},
    "message_to_subagent": {"subagent_id": names, "text": texts},
    "subagent_result": {"subagent_id": names, "result": json_values},
    "parent_agent_message": {"parent_agent_id": names, "text": texts},
    "tool_result": {"tool": names, "output": json_values},
    "tool_error": {"tool": names, "error": texts},
    "skill_result": {"skill": names, "output": json_values},
    "progress_summary": {"text": texts},
    "todo_update": {"todos": st.lists(json_values, max_size=4)},
    "thinking": {"text": texts},
    "user_intervention": {"text": texts},
    "task_completed": {"result": json_values},
    "task_abandoned": {"reason": names},
    "task_terminated": {"terminated_by": names, "text": texts},
    "custom": {"kind": names, "content": json_values},
}

OPTIONAL_ARGUMENTS: Final[Mapping[str, Mapping[str, st.SearchStrategy[Any]]]] = {
    "system": {"priority": priorities},
    "tool_call": {"call_id": _OPTIONAL_NAME, "status": names},
    "skill_call": {"call_id": _OPTIONAL_NAME, "status": names},
    "subagent_result": {"success": st.booleans()},
    "tool_result": {"call_id": _OPTIONAL_NAME, "success": st.booleans()},
    "tool_error": {"call_id": _OPTIONAL_NAME},
    "skill_result": {"call_id": _OPTIONAL_NAME, "success": st.booleans()},
    "progress_summary": {"original_count": st.none() | counts, "compacted_at": st.none() | counts},
    "task_completed": {"summary": st.none() | texts},
    "task_abandoned": {"partial_result": json_values},
    "custom": {"role": st.sampled_from(["system", "user", "assistant"])},
}

BUILTIN_CONSTRUCTORS: Final = tuple(name for name in REQUIRED_ARGUMENTS if name != "custom")
"""The twenty constructors of DESIGN.md, each rendered by a built-in renderer."""

ALL_CONSTRUCTORS: Final = tuple(REQUIRED_ARGUMENTS)
"""The twenty, plus ``chunks.custom`` (rendered by the generic fallback)."""


@attrs.frozen(eq=False)
class ConstructorCall:
    """A call of one constructor of :mod:`memctx.chunks` with the arguments drawn for it."""

    name: str
    kwargs: Mapping[str, Any]

    def make(self) -> Chunk:
        """Call the constructor."""
        constructor = getattr(chunks, self.name)
        chunk: Chunk = constructor(**self.kwargs)
        return chunk

    def __repr__(self) -> str:
        arguments = ", ".join(f"{key}={value!r}" for key, value in self.kwargs.items())
        return f"chunks.{self.name}({arguments})"


def constructor_calls(*names: str) -> st.SearchStrategy[ConstructorCall]:
    """Calls of the named constructors (all of them, ``custom`` included, when none named)."""
    chosen = names or ALL_CONSTRUCTORS

    def call_of(name: str) -> st.SearchStrategy[ConstructorCall]:
        arguments = st.fixed_dictionaries(
            dict(REQUIRED_ARGUMENTS[name]),
            optional={**OPTIONAL_ARGUMENTS.get(name, {}), **COMMON_OPTIONS},
        )
        return arguments.map(lambda kwargs: ConstructorCall(name, kwargs))

    return st.sampled_from(chosen).flatmap(call_of)


def constructed_chunks(*names: str) -> st.SearchStrategy[Chunk]:
    """Chunks made by the named constructors (all of them when none named)."""
    return constructor_calls(*names).map(ConstructorCall.make)


_metadata_fields: Final = {
    "tool": _OPTIONAL_NAME,
    "skill": _OPTIONAL_NAME,
    "call_id": _OPTIONAL_NAME,
    "status": _OPTIONAL_NAME,
    "subagent_id": _OPTIONAL_NAME,
    "agent_type": _OPTIONAL_NAME,
    "parent_agent_id": _OPTIONAL_NAME,
    "success": st.none() | st.booleans(),
    "error": st.none() | st.booleans(),
    "reason": _OPTIONAL_NAME,
    "terminated_by": _OPTIONAL_NAME,
    "original_count": st.none() | counts,
    "compacted_at": st.none() | counts,
    "pinned": st.booleans(),
    "custom": json_objects,
}

metadata: Final = st.fixed_dictionaries({}, optional=_metadata_fields).map(
    lambda fields: ChunkMetadata(**fields)
)
"""Any valid :class:`memctx.ChunkMetadata`."""

raw_chunks: Final = st.builds(
    Chunk,
    type=st.sampled_from(ChunkType),
    content=json_values,
    id=ids,
    role=st.sampled_from([None, "system", "user", "assistant"]),
    action=st.none() | st.sampled_from(["tool_call", "clarification", "todo_set"]) | names,
    subtype=st.none() | st.sampled_from(["THINKING", "USER", "PROGRESS_SUMMARY"]) | names,
    metadata=metadata,
    priority=priorities,
    created_at=aware_datetimes,
)
"""Chunks built field by field: any combination the model accepts, not only the constructors'."""

any_chunks: Final = st.one_of(constructed_chunks(), raw_chunks)
"""Every chunk a user can make."""


def states(
    chunk_strategy: st.SearchStrategy[Chunk] = any_chunks, *, max_size: int = 5
) -> st.SearchStrategy[MemoryState]:
    """States of chunks with distinct ids and an optional thread id."""
    return st.builds(
        MemoryState,
        st.lists(chunk_strategy, max_size=max_size, unique_by=lambda chunk: chunk.id),
        thread_id=st.none() | ids,
    )


# -- chat ------------------------------------------------------------------------------------

_NAME_PIECES: Final = st.one_of(
    st.text(alphabet="abcdefghijklmnopqrstuvwxyzABCDEFGHIJ0123456789_", min_size=1, max_size=6),
    st.text(alphabet="程序猫银渐层牛奶咖啡阿比西尼亚加菲ねこカフェ철수", min_size=1, max_size=4),
    st.text(alphabet=st.characters(exclude_characters="@"), min_size=1, max_size=4),
)

chat_names: Final = (
    st.lists(_NAME_PIECES, min_size=1, max_size=3)
    .map(" ".join)
    .map(str.strip)
    .filter(lambda s: s != "" and not any(c in s for c in "@\n\r\t\x0b\x0c\x85\u2028\u2029"))
)
"""Names an agent may answer to: Latin words, CJK, anything without ``@`` or line breaks."""


@st.composite
def chat_agents(draw: st.DrawFn, *, min_size: int = 1, max_size: int = 4) -> list[Any]:
    """Agents with distinct ids and names (case-insensitively), some with aliases."""
    from memctx.chat import ChatAgent

    count = draw(st.integers(min_value=min_size, max_value=max_size))
    taken = {f"agent{number}" for number in range(count)}
    agents = []
    for number in range(count):
        agent_id = f"agent{number}"
        names = draw(st.lists(chat_names, max_size=3))
        free = []
        for name in names:
            if name.casefold() not in taken:
                taken.add(name.casefold())
                free.append(name)
        display = free[0] if free else agent_id
        agents.append(ChatAgent(agent_id, display, aliases=tuple(free[1:])))
    return agents


@st.composite
def chat_texts(draw: st.DrawFn, agents: list[Any]) -> str:
    """Messages mixing mentions of ``agents``, unknown ``@words``, e-mails and any text."""
    names = [name for agent in agents for name in agent.names]
    piece = st.one_of(
        st.sampled_from(names).map(lambda n: "@" + n),
        st.sampled_from(names).map(lambda n: "@" + n.upper()),
        st.sampled_from(names),
        st.sampled_from(["@", "@@", "@nobody", "bob@example.com", "x@", " @ ", "，", ".", "-"]),
        st.sampled_from(LINE_BREAKS),
        st.text(max_size=6),
        texts,
    )
    return "".join(draw(st.lists(piece, max_size=10)))


# -- team conversations ------------------------------------------------------------------

wide_texts: Final = st.text(
    alphabet=st.sampled_from(["a", "é", "无", "\U0001f600", "\n", " "])
    | st.characters(exclude_categories=("Cs",)),
    max_size=60,
)
"""Text of characters of every UTF-8 length (1 to 4 bytes), without lone surrogates."""

marker_free_texts: Final = st.text(st.characters(exclude_characters="["))
"""Text that cannot hold a routing marker: anything but an opening bracket."""

_marker_insides: Final = st.text(st.characters(exclude_characters="]"), max_size=12)


@st.composite
def marked_texts(draw: st.DrawFn) -> tuple[str, str]:
    """A team message of plain text and routing markers, and the plain text it carries.

    Markers are ``[FROM:…]``, ``[NEXT:…]`` and ``[TEAM_TASK]`` in any case. A
    ``[TEAM_TASK]`` takes the text after it up to the next ``[`` that is still
    there once ``[FROM:…]`` markers are gone (they are removed first): plain
    pieces in that stretch are its body, not plain text.
    """
    pieces: list[str] = []
    kept: list[str] = []
    in_task = False
    for _ in range(draw(st.integers(0, 6))):
        kind = draw(st.sampled_from(["plain", "from", "next", "team_task"]))
        if kind == "plain":
            text = draw(marker_free_texts)
            pieces.append(text)
            if not in_task:
                kept.append(text)
            continue
        if kind == "from":
            name = draw(_marker_insides.filter(bool))
            pieces.append(draw(st.sampled_from(["[FROM:", "[from:", "[From:"])) + name + "]")
        elif kind == "next":
            inside = draw(_marker_insides)
            pieces.append(draw(st.sampled_from(["[NEXT:", "[next:"])) + inside + "]")
        else:
            pieces.append(draw(st.sampled_from(["[TEAM_TASK]", "[team_task]"])))
        in_task = kind == "team_task" or (kind == "from" and in_task)
    return "".join(pieces), "".join(kept)


# -- long agent runs (compression and compaction) ------------------------------------------------

_RUN_TEXT: Final = st.one_of(
    st.sampled_from(["ok", "done", "x = 2", "Traceback (most recent call last):\nValueError: x"]),
    st.integers(1, 400).map(lambda n: "line of output\n" * n),
    st.text(max_size=80),
)


@st.composite
def agent_runs(draw: st.DrawFn, *, max_steps: int = 40) -> MemoryState:
    """A long agent history: calls with results (short and long, some late, some missing),
    spawns with results or still running, pinned chunks, system chunks, todos and summaries."""
    made: list[Chunk] = []
    open_calls: list[str] = []
    open_agents: list[str] = []
    for n in range(draw(st.integers(0, max_steps))):
        kind = draw(
            st.sampled_from(
                [
                    "user",
                    "assistant",
                    "call",
                    "call",
                    "result",
                    "result",
                    "spawn",
                    "agent_result",
                    "system",
                    "todo",
                    "thinking",
                    "summary",
                    "error",
                ]
            )
        )
        pinned = draw(st.integers(0, 9)) == 0
        text = draw(_RUN_TEXT)
        if kind == "user":
            made.append(chunks.user(text, id=f"u{n}", pinned=pinned))
        elif kind == "assistant":
            made.append(chunks.assistant(text, id=f"a{n}", pinned=pinned))
        elif kind == "thinking":
            made.append(chunks.thinking(text, id=f"t{n}"))
        elif kind == "system":
            made.append(chunks.system(text, id=f"s{n}"))
        elif kind == "todo":
            made.append(
                chunks.todo_update([{"task": text, "done": draw(st.booleans())}], id=f"td{n}")
            )
        elif kind == "summary":
            made.append(chunks.progress_summary(text, original_count=2, id=f"ps{n}"))
        elif kind == "call":
            tool = draw(st.sampled_from(["bash", "read_file", "search"]))
            made.append(
                chunks.tool_call(
                    tool, {"command": text[:60]}, call_id=f"c{n}", id=f"call{n}", pinned=pinned
                )
            )
            open_calls.append(f"c{n}")
        elif kind in ("result", "error") and open_calls:
            call_id = draw(st.sampled_from(open_calls))
            if draw(st.integers(0, 3)):
                open_calls.remove(call_id)
            if kind == "error":
                made.append(
                    chunks.tool_error("bash", text or "failed", call_id=call_id, id=f"err{n}")
                )
            else:
                made.append(
                    chunks.tool_result("bash", text, call_id=call_id, id=f"res{n}", pinned=pinned)
                )
        elif kind == "spawn":
            made.append(chunks.spawn_subagent(f"ag{n}", "researcher", text[:80], id=f"sp{n}"))
            open_agents.append(f"ag{n}")
        elif kind == "agent_result" and open_agents:
            agent = draw(st.sampled_from(open_agents))
            open_agents.remove(agent)
            made.append(chunks.subagent_result(agent, text, id=f"sr{n}"))
    return MemoryState(made)


# -- search queries ---------------------------------------------------------------------------

SEARCH_SYNTAX: Final = (
    '"', "'", "*", "^", ":", "-", "(", ")", "AND", "OR", "NOT", "NEAR", "NEAR(", "+", "|",
    "&", "!", "<->", ":*", "{", "}", "\\", "%", "_", ";", "--", "/*", "DROP TABLE memctx_chunks",
    "col:", "'' OR 1=1", "\x00",
)  # fmt: skip
"""FTS5, tsquery and SQL syntax: a search query must take each as text."""

search_queries: Final = st.lists(
    st.one_of(
        st.sampled_from(SEARCH_SYNTAX),
        st.sampled_from(UNUSUAL_ALLOWED),
        st.sampled_from(FORBIDDEN_CHARACTERS),
        st.sampled_from(("keyerror", "KeyError", "x", "y", " ")),
        st.text(max_size=12),
    ),
    max_size=12,
).map(" ".join)
"""Any text as a search query: syntax of every backend, words, non-ASCII, control characters."""


# -- recorded runs (replay) ------------------------------------------------------------------


@st.composite
def recorded_runs(draw: st.DrawFn) -> MemoryState:
    """A run long enough for prompt caches to matter: a system prompt and a pinned task,
    then turns of a remark, a tool call and its output (a few to a few thousand tokens,
    sometimes an error or a user turn instead), chunks from none to an hour apart."""
    start = dt.datetime(2026, 3, 1, tzinfo=dt.UTC)
    gaps = draw(st.lists(st.sampled_from([0, 2, 30, 200, 400, 4000]), min_size=1, max_size=4))
    made = [
        chunks.system("You are an agent. " * draw(st.integers(1, 400)), id="sys"),
        chunks.user("The task. " * draw(st.integers(1, 200)), id="task", pinned=True),
    ]
    for n in range(draw(st.integers(0, 14))):
        kind = draw(st.sampled_from(["call", "call", "call", "error", "user", "remark"]))
        words = f"out{n} " * draw(st.sampled_from([1, 20, 300, 1500, 4000]))
        if kind == "user":
            made.append(chunks.user(f"Also: {words}", id=f"u{n}"))
            continue
        made.append(chunks.assistant(f"Step {n}.", id=f"a{n}"))
        if kind == "remark":
            continue
        made.append(chunks.tool_call("sh", {"n": n}, call_id=f"c{n}", id=f"call{n}"))
        if kind == "error":
            made.append(chunks.tool_error("sh", words, call_id=f"c{n}", id=f"res{n}"))
        else:
            made.append(chunks.tool_result("sh", words, call_id=f"c{n}", id=f"res{n}"))
    at = start
    timed = []
    for n, chunk in enumerate(made):
        at += dt.timedelta(seconds=gaps[n % len(gaps)])
        timed.append(attrs.evolve(chunk, created_at=at))
    return MemoryState(timed, thread_id="recorded")


# -- compression -----------------------------------------------------------------------------


def _compressors() -> st.SearchStrategy[Any]:
    from memctx.compress import MaxChars, MaxChunks, TrimToolOutputs

    return st.one_of(
        st.builds(MaxChunks, st.integers(0, 12)),
        st.builds(MaxChars, st.integers(1, 300)),
        st.builds(
            TrimToolOutputs,
            keep_recent=st.integers(0, 4),
            max_chars=st.integers(1, 300),
            tools=st.none() | st.just(("bash",)),
        ),
    )


compressor_chains: Final = st.lists(st.deferred(_compressors), max_size=4)
"""Chains of the built-in compressors with any settings they accept."""

fit_compressors: Final = st.none() | st.deferred(_compressors)
"""A ``compress_to_fit`` value: none, or a built-in compressor."""


@st.composite
def id_options(draw: st.DrawFn, state: MemoryState) -> dict[str, Any]:
    """``include_only_chunk_ids`` / ``pinned_chunk_ids`` naming chunks of ``state`` (rarely one
    it does not hold)."""
    known = list(state.ids)
    pool = st.sampled_from(known) if known else st.just("no-such-chunk")
    pool = st.one_of(pool, st.just("no-such-chunk")) if draw(st.integers(0, 9)) == 0 else pool
    options: dict[str, Any] = {}
    if draw(st.booleans()):
        options["include_only_chunk_ids"] = draw(st.lists(pool, max_size=6))
    if draw(st.booleans()):
        options["pinned_chunk_ids"] = draw(st.lists(pool, max_size=3))
    return options


# -- OpenAI Responses API items ----------------------------------------------------------------

_PLAIN_TEXT: Final = st.text(
    st.characters(categories=("L", "N", "Zs", "Po"), exclude_characters="<>&\"'"),
    min_size=1,
    max_size=30,
).filter(str.strip)
_ARGUMENTS: Final = st.dictionaries(
    st.text("abcdefgh_", min_size=1, max_size=6),
    st.integers(-1000, 1000) | st.booleans() | _PLAIN_TEXT,
    max_size=3,
)


@st.composite
def responses_items(draw: st.DrawFn) -> list[dict[str, Any]]:
    """A valid Responses ``input`` list: a system message, then steps of a user message and
    the assistant's work -- reasoning items (``encrypted_content``, several summary parts,
    always followed by the item they led to), assistant messages with or without an id,
    ``function_call`` items (with ``fc_`` ids or none) answered by ``function_call_output``
    items. Ids are unique; no two assistant messages without an id are adjacent (they would
    be one message)."""
    serial = iter(range(1_000))
    items: list[dict[str, Any]] = []
    if draw(st.booleans()):
        items.append({"role": "system", "content": draw(_PLAIN_TEXT)})
    for _ in range(draw(st.integers(1, 4))):
        items.append({"role": "user", "content": draw(_PLAIN_TEXT)})
        for _ in range(draw(st.integers(1, 3))):
            if draw(st.booleans()):
                n = next(serial)
                reasoning = {
                    "type": "reasoning",
                    "id": f"rs_{n}",
                    "summary": [
                        {"type": "summary_text", "text": text}
                        for text in draw(st.lists(_PLAIN_TEXT, max_size=3))
                    ],
                }
                if draw(st.booleans()):
                    reasoning["encrypted_content"] = f"gAAAA{n}" + draw(_PLAIN_TEXT)
                items.append(reasoning)
            if draw(st.booleans()):
                items.append(_assistant_message(draw, next(serial), items))
                continue
            calls = [next(serial) for _ in range(draw(st.integers(1, 2)))]
            for n in calls:
                call = {
                    "type": "function_call",
                    "call_id": f"call_{n}",
                    "name": draw(st.sampled_from(["read_file", "sh", "search"])),
                    "arguments": json.dumps(draw(_ARGUMENTS)),
                }
                if draw(st.booleans()):
                    call["id"] = f"fc_{n}"
                items.append(call)
            for n in calls:
                output = {"type": "function_call_output", "call_id": f"call_{n}"}
                output["output"] = draw(_PLAIN_TEXT)
                if draw(st.booleans()):
                    output["id"] = f"fco_{n}"
                items.append(output)
    return items


def _assistant_message(draw: st.DrawFn, n: int, items: list[dict[str, Any]]) -> dict[str, Any]:
    text = draw(_PLAIN_TEXT)
    plain_before = items and items[-1].get("role") == "assistant" and "id" not in items[-1]
    if plain_before or draw(st.booleans()):
        return {
            "type": "message",
            "id": f"msg_{n}",
            "role": "assistant",
            "status": "completed",
            "content": [{"type": "output_text", "text": text, "annotations": []}],
        }
    return {"role": "assistant", "content": text}
