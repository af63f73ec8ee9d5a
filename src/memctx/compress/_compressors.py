"""The built-in compressors: MaxChunks, MaxChars and TrimToolOutputs.

Each is a small frozen value with its settings; calling it with a state
returns the compressed state. None of them drops, changes or moves a
protected chunk (a SYSTEM chunk, a pinned chunk, a call or spawn still
waiting for its result, or any member of their units), and none splits a
unit. A shortened chunk is a new chunk: same type, role, metadata and
creation time, a new id (the old id, a dot and a digest of the new content,
so the same cut always gives the same chunk), text content and
``metadata.derived_from`` naming the chunk it replaces.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable, Mapping
from typing import Any, Final

import attrs

from memctx._chunk import Chunk, ChunkType
from memctx._exceptions import CompressionError
from memctx._json import dumps
from memctx._render.media import is_opaque
from memctx._state import MemoryState
from memctx._units import history_shape

DEFAULT_MAX_CHARS: Final = 4000
_OUTPUT_ACTIONS: Final = frozenset({"tool_result", "skill_result"})


def derived_chunk(chunk: Chunk, text: Any, kind: str) -> Chunk:
    """A new chunk standing for ``chunk``, with ``text`` (or a JSON value) as its content."""
    shown = text if isinstance(text, str) else dumps(text)
    # "surrogatepass": a lone surrogate, which a build renders as U+FFFD, is hashed as is.
    key = f"{chunk.id}\0{kind}\0{shown}".encode("utf-8", "surrogatepass")
    digest = hashlib.sha256(key).hexdigest()[:10]
    metadata = attrs.evolve(chunk.metadata, derived_from=(chunk.id,))
    return attrs.evolve(chunk, id=f"{chunk.id}.{kind}-{digest}", content=text, metadata=metadata)


def _count(name: str, value: object, owner: str, minimum: int = 0) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise CompressionError(
            f"{name} must be an int >= {minimum}, got {value!r}", compressor=owner
        )
    return value


def _replace_some(state: MemoryState, replacements: dict[int, Chunk]) -> MemoryState:
    if not replacements:
        return state
    chunks = [replacements.get(i, chunk) for i, chunk in enumerate(state.chunks)]
    return MemoryState(chunks, thread_id=state.thread_id)


@attrs.frozen
class MaxChunks:
    """Keep the newest ``n`` chunks and drop the older ones.

    Protected chunks are kept wherever they are, and a unit with any member
    among the kept chunks is kept whole, so the result may hold a few more
    than ``n`` chunks; a unit is never split.
    """

    n: int

    def __attrs_post_init__(self) -> None:
        _count("n", self.n, "MaxChunks")

    @property
    def params(self) -> dict[str, Any]:
        return {"name": "MaxChunks", "n": self.n}

    def __call__(self, state: MemoryState) -> MemoryState:
        chunks = state.chunks
        if len(chunks) <= self.n:
            return state
        shape = history_shape(chunks)
        newest = range(len(chunks) - self.n, len(chunks))
        keep = shape.closure(newest) | shape.protected
        if len(keep) == len(chunks):
            return state
        return MemoryState(
            (chunk for i, chunk in enumerate(chunks) if i in keep), thread_id=state.thread_id
        )


_CUT_NUMBERS: Final = re.compile(r"\n\[memctx: cut [\d,]+ of (?P<total>[\d,]+) characters\]\Z")
_TRIMMED: Final = re.compile(r"\n\[memctx: trimmed [\d,]+ of [\d,]+ characters\]\n")


def _trimmed_already(text: str, max_chars: int) -> bool:
    """Whether ``text`` is a preview no longer than ``max_chars`` around the trimmed line."""
    found = _TRIMMED.search(text)
    return found is not None and len(text) - (found.end() - found.start()) <= max_chars


ELLIPSIS: Final = "\u2026"
"""Ends a cut too short to hold the line saying what was cut."""


def cut_text(text: str, max_chars: int) -> str:
    """``text`` cut to at most ``max_chars`` characters, the line saying what was cut included.

    The head of ``text`` is kept, then ``[memctx: cut 1,234 of 5,234
    characters]`` on a line of its own; when ``max_chars`` is too small for
    that line, the first ``max_chars - 1`` characters and ``…``. A text of at
    most ``max_chars`` characters is returned as it is: a cut never makes a
    text longer. Cutting a cut again counts from the original length.
    """
    if len(text) <= max_chars:
        return text
    found = _CUT_NUMBERS.search(text)
    head, total = text, len(text)
    if found is not None:
        head = text[: found.start()]
        total = max(int(found["total"].replace(",", "")), len(head))
    keep = max_chars
    for _ in range(3):  # the line's length depends on the numbers in it
        keep = max_chars - len(_cut_line(total - keep, total))
    if keep < 1:
        return text[: max_chars - 1] + ELLIPSIS
    keep = min(keep, len(head))
    return head[:keep] + _cut_line(total - keep, total)


def _cut_line(cut: int, total: int) -> str:
    return f"\n[memctx: cut {cut:,} of {total:,} characters]"


def preview_text(text: str, max_chars: int) -> str:
    """The head and tail of ``text`` (``max_chars`` in all), with what was left out between."""
    head = (max_chars + 1) // 2
    tail = max_chars - head
    left_out = len(text) - max_chars
    end = text[len(text) - tail :] if tail else ""
    return f"{text[:head]}\n[memctx: trimmed {left_out:,} of {len(text):,} characters]\n{end}"


_JSON_CUT: Final = re.compile(r"\[memctx: cut [\d,]+ of [\d,]+ characters\]\Z")


def _cut_strings(value: Any, cap: int) -> Any:
    """``value`` with every string longer than ``cap`` (and worth cutting) cut, marked."""
    if isinstance(value, str):
        if len(value) <= cap:
            return value
        cut = f"{value[:cap]}…[memctx: cut {len(value) - cap:,} of {len(value):,} characters]"
        return cut if len(cut) < len(value) else value
    if isinstance(value, Mapping):
        return {key: _cut_strings(item, cap) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [_cut_strings(item, cap) for item in value]
    return value


def _has_json_cut(value: Any) -> bool:
    if isinstance(value, str):
        return _JSON_CUT.search(value) is not None
    if isinstance(value, Mapping):
        return any(_has_json_cut(item) for item in value.values())
    if isinstance(value, list | tuple):
        return any(_has_json_cut(item) for item in value)
    return False


def _longest_string(value: Any) -> int:
    if isinstance(value, str):
        return len(value)
    items = value.values() if isinstance(value, Mapping) else value
    if isinstance(value, Mapping | list | tuple):
        return max((_longest_string(item) for item in items), default=0)
    return 0


def shortened_arguments(arguments: Mapping[str, Any], max_chars: int) -> Any:
    """A call's arguments as a JSON object of at most ``max_chars`` characters (serialised)
    where cutting long strings can make it so: each string longer than one cap is cut to
    it and marked, the cap as high as fits; keys and other values are kept."""
    low, high = 0, _longest_string(arguments)
    best = _cut_strings(arguments, 0)
    while low <= high:  # the longest cap whose result fits
        cap = (low + high) // 2
        candidate = _cut_strings(arguments, cap)
        if len(dumps(candidate)) <= max_chars:
            best, low = candidate, cap + 1
        else:
            high = cap - 1
    return best


def _is_call_object(chunk: Chunk) -> bool:
    return (
        chunk.type is ChunkType.WORKFLOW
        and chunk.action in ("tool_call", "skill_call")
        and isinstance(chunk.content, Mapping)
    )


@attrs.frozen
class MaxChars:
    """Cap each chunk's content at ``n`` characters, visibly.

    A longer content keeps its head, followed by a line saying how many
    characters were cut, ``n`` characters in all: that line counts (see
    :func:`cut_text`), so a content never grows. The new content is text; a
    JSON content is cut in its serialised form. A tool or skill call whose
    arguments are a JSON object stays one (so it is still sent as a native
    call): its longest strings are cut, each marked, until the object fits
    (or every string is as short as a cut makes it). Protected chunks are
    left whole, and so are images, documents and signed or redacted
    reasoning (a cut would break them), and a cut made before (compressing
    again changes nothing).
    """

    n: int = DEFAULT_MAX_CHARS

    def __attrs_post_init__(self) -> None:
        _count("n", self.n, "MaxChars", minimum=1)

    @property
    def params(self) -> dict[str, Any]:
        return {"name": "MaxChars", "n": self.n}

    def __call__(self, state: MemoryState) -> MemoryState:
        shape = history_shape(state.chunks)
        replacements = {}
        for position, chunk in enumerate(state.chunks):
            if position in shape.protected or is_opaque(chunk):
                continue
            text = chunk.text
            if _is_call_object(chunk):
                if len(text) > self.n and not _has_json_cut(chunk.content):
                    arguments = shortened_arguments(chunk.content, self.n)
                    replacements[position] = derived_chunk(chunk, arguments, "cut")
            elif len(text) > self.n:
                replacements[position] = derived_chunk(chunk, cut_text(text, self.n), "cut")
        return _replace_some(state, replacements)


def _tool_names(value: Iterable[str] | None) -> frozenset[str] | None:
    if value is None:
        return None
    if isinstance(value, str):
        raise CompressionError(
            "tools must be a list of names, not one string", compressor="TrimToolOutputs"
        )
    if isinstance(value, bytes | Mapping) or not isinstance(value, Iterable):
        raise CompressionError(
            f"tools must be a list of names, got {type(value).__name__}",
            compressor="TrimToolOutputs",
        )
    names = list(value)
    for name in names:
        if not isinstance(name, str) or not name:
            raise CompressionError(
                f"tools must be non-empty strings, got {name!r}", compressor="TrimToolOutputs"
            )
    return frozenset(names)


def is_tool_output(chunk: Chunk) -> bool:
    """Whether ``chunk`` is what a tool or skill returned (a result or an error)."""
    return chunk.type is ChunkType.ENVIRONMENT and chunk.action in _OUTPUT_ACTIONS


@attrs.frozen
class TrimToolOutputs:
    """Shorten old tool and skill outputs to a preview of their head and tail.

    The newest ``keep_recent`` outputs stay whole; each older one longer
    than ``max_chars`` keeps its first and last characters (``max_chars`` in
    all) with a line between saying how much was trimmed; a preview made
    before is left as it is. ``tools``, when given, limits this to the
    outputs of those tools or skills.
    """

    keep_recent: int = 3
    max_chars: int = 500
    tools: frozenset[str] | None = attrs.field(default=None, converter=_tool_names)

    def __attrs_post_init__(self) -> None:
        _count("keep_recent", self.keep_recent, "TrimToolOutputs")
        _count("max_chars", self.max_chars, "TrimToolOutputs", minimum=1)

    @property
    def params(self) -> dict[str, Any]:
        tools = None if self.tools is None else sorted(self.tools)
        return {
            "name": "TrimToolOutputs",
            "keep_recent": self.keep_recent,
            "max_chars": self.max_chars,
            "tools": tools,
        }

    def _wanted(self, chunk: Chunk) -> bool:
        if not is_tool_output(chunk):
            return False
        if self.tools is None:
            return True
        return (chunk.metadata.tool or chunk.metadata.skill) in self.tools

    def __call__(self, state: MemoryState) -> MemoryState:
        chunks = state.chunks
        outputs = [i for i, chunk in enumerate(chunks) if self._wanted(chunk)]
        old = outputs[: max(len(outputs) - self.keep_recent, 0)]
        if not old:
            return state
        shape = history_shape(chunks)
        replacements = {}
        for position in old:
            chunk = chunks[position]
            text = chunk.text
            if (
                position not in shape.protected
                and len(text) > self.max_chars
                and not _trimmed_already(text, self.max_chars)
            ):
                replacements[position] = derived_chunk(
                    chunk, preview_text(text, self.max_chars), "trim"
                )
        return _replace_some(state, replacements)
