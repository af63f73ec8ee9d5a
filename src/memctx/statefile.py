"""The versioned JSON format for states (``memctx render/build STATE.json``).

::

    {
      "version": 1,
      "thread_id": "t1",                      # or null
      "chunks": [
        {
          "id": "chunk_1",
          "type": "WORKFLOW",                 # a ChunkType name
          "role": null,                       # "system" | "user" | "assistant" | null
          "action": "tool_call",              # or null
          "subtype": null,
          "content": {"path": "/src/main.ts"},   # a string or any JSON value
          "metadata": {"tool": "read_file", "call_id": "call_123", "status": "pending"},
          "priority": 0,
          "created_at": "2026-11-22T03:25:56.123456+00:00"
        }
      ]
    }

``id``, ``type`` and ``content`` are required; the other fields default as in
:class:`~memctx.Chunk`. Loading checks everything and raises
:class:`~memctx.StateFileError` naming the index and field of the first bad
item (:class:`~memctx.UnsupportedVersionError` for another version); it never
returns a half-loaded state. :func:`save_state` writes atomically.
"""

from __future__ import annotations

import datetime as _dt
import json
import os
import re
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Final

import attrs

from memctx._chunk import Chunk, ChunkMetadata
from memctx._exceptions import (
    ArgumentError,
    DuplicateChunkError,
    InvalidChunkError,
    StateFileAccessError,
    StateFileError,
    UnsupportedVersionError,
)
from memctx._json import JSONTextError, parse_json_text, thaw_json
from memctx._state import MemoryState
from memctx._validators import non_empty_str, optional, state_file_error

__all__ = [
    "FORMAT_VERSION",
    "chunk_from_dict",
    "chunk_to_dict",
    "dumps_state",
    "load_state",
    "loads_state",
    "parse_json",
    "save_state",
    "state_from_dict",
    "state_to_dict",
]

FORMAT_VERSION: Final = 1

_CHUNK_FIELDS: Final = frozenset(
    {"id", "type", "role", "action", "subtype", "content", "metadata", "priority", "created_at"}
)
_METADATA_FIELDS: Final = frozenset(f.name for f in attrs.fields(ChunkMetadata))
_THREAD_ID: Final = optional(non_empty_str(state_file_error))


def chunk_to_dict(chunk: Chunk) -> dict[str, Any]:
    """Return ``chunk`` as a plain JSON object."""
    return {
        "id": chunk.id,
        "type": chunk.type.value,
        "role": chunk.role,
        "action": chunk.action,
        "subtype": chunk.subtype,
        "content": thaw_json(chunk.content),
        "metadata": chunk.metadata.to_dict(),
        "priority": chunk.priority,
        "created_at": chunk.created_at.isoformat(),
    }


def chunk_from_dict(data: object, index: int | None = None) -> Chunk:
    """Build a chunk from a JSON object, raising :class:`StateFileError` on bad input."""
    if not isinstance(data, Mapping):
        raise StateFileError(f"must be an object, got {_json_type(data)}", index=index)
    unknown = set(data) - _CHUNK_FIELDS
    if unknown:
        raise StateFileError(f"unknown field(s) {sorted(unknown)}", index=index)
    for required in ("id", "type", "content"):
        if required not in data:
            raise StateFileError("missing required field", index=index, field=required)
    metadata = data.get("metadata")
    if metadata is None:
        metadata = {}
    if not isinstance(metadata, Mapping):
        raise StateFileError(
            f"must be an object, got {_json_type(metadata)}", index=index, field="metadata"
        )
    unknown = set(metadata) - _METADATA_FIELDS
    if unknown:
        raise StateFileError(f"unknown field(s) {sorted(unknown)}", index=index, field="metadata")
    kwargs: dict[str, Any] = {}
    created_at = data.get("created_at")
    if created_at is not None:
        if not isinstance(created_at, str):
            raise StateFileError(
                f"must be an ISO 8601 string, got {_json_type(created_at)}",
                index=index,
                field="created_at",
            )
        try:
            kwargs["created_at"] = _dt.datetime.fromisoformat(created_at)
        except ValueError:
            raise StateFileError(
                f"not an ISO 8601 datetime: {created_at!r}", index=index, field="created_at"
            ) from None
    if data.get("priority") is not None:
        kwargs["priority"] = data["priority"]
    try:
        meta = ChunkMetadata(**metadata)
        return Chunk(
            type=data["type"],
            content=data["content"],
            id=data["id"],
            role=data.get("role"),
            action=data.get("action"),
            subtype=data.get("subtype"),
            metadata=meta,
            **kwargs,
        )
    except InvalidChunkError as exc:
        raise StateFileError(str(exc).split(": ", 1)[-1], index=index, field=exc.field) from None


def state_to_dict(state: MemoryState) -> dict[str, Any]:
    """Return ``state`` as a plain JSON document."""
    if not isinstance(state, MemoryState):
        raise StateFileError(f"expected a MemoryState to write, got {type(state).__name__}")
    return {
        "version": FORMAT_VERSION,
        "thread_id": state.thread_id,
        "chunks": [chunk_to_dict(chunk) for chunk in state.chunks],
    }


def state_from_dict(data: object) -> MemoryState:
    """Build a state from a JSON document, raising :class:`StateFileError` on bad input."""
    if not isinstance(data, Mapping):
        raise StateFileError(f"a state document must be an object, got {_json_type(data)}")
    if "version" not in data:
        raise StateFileError("missing required field", field="version")
    version = data["version"]
    if type(version) is not int or version != FORMAT_VERSION:
        raise UnsupportedVersionError(
            f"unsupported state format version {version!r}; this memctx reads version "
            f"{FORMAT_VERSION}",
            field="version",
        )
    thread_id = _THREAD_ID.check(data.get("thread_id"), "thread_id")
    raw_chunks = data.get("chunks")
    if not isinstance(raw_chunks, list):
        raise StateFileError(f"must be an array, got {_json_type(raw_chunks)}", field="chunks")
    chunks = [chunk_from_dict(item, index) for index, item in enumerate(raw_chunks)]
    try:
        return MemoryState(chunks, thread_id=thread_id)
    except DuplicateChunkError as exc:
        index = next(i for i, c in enumerate(chunks) if c.id == exc.chunk_id)
        dup = next(i for i, c in enumerate(chunks) if c.id == exc.chunk_id and i != index)
        raise StateFileError(
            f"duplicate chunk id {exc.chunk_id!r} (first at chunks[{index}])",
            index=dup,
            field="id",
        ) from None


def dumps_state(state: MemoryState, *, indent: int | None = 2) -> str:
    """Serialise ``state`` to JSON text (non-ASCII kept as is).

    Lone surrogates (which chunks may hold, and which UTF-8 cannot encode)
    are written as ``\\uXXXX`` escapes. A high and a low surrogate written
    next to each other load back as the one character they encode.
    """
    return escape_surrogates(json.dumps(state_to_dict(state), ensure_ascii=False, indent=indent))


_SURROGATE = re.compile("[\ud800-\udfff]")


def escape_surrogates(json_text: str) -> str:
    """Replace each lone surrogate in JSON text by its ``\\uXXXX`` escape."""
    if _SURROGATE.search(json_text) is None:
        return json_text
    return _SURROGATE.sub(lambda m: f"\\u{ord(m.group()):04x}", json_text)


def parse_json(text: str | bytes | bytearray) -> Any:
    """Parse JSON text, raising :class:`StateFileError` with the position of a syntax error.

    Bytes that are not UTF-8, nesting too deep to parse and integers too long
    to convert are a :class:`StateFileError` too.
    """
    if not isinstance(text, str | bytes | bytearray):
        raise StateFileError(f"expected JSON text, got {type(text).__name__}")
    try:
        return parse_json_text(text)
    except JSONTextError as exc:
        raise StateFileError(str(exc)) from None


def loads_state(text: str | bytes) -> MemoryState:
    """Parse a state from JSON text."""
    return state_from_dict(parse_json(text))


def _path(path: object) -> Path:
    if not isinstance(path, str | os.PathLike) or isinstance(path, bytes):
        raise ArgumentError(
            f"must be a str or an os.PathLike, got {type(path).__name__}", argument="path"
        )
    return Path(path)


def load_state(path: str | os.PathLike[str]) -> MemoryState:
    """Read a state file; one that cannot be read is a :class:`~memctx.StateFileAccessError`."""
    file = _path(path)
    try:
        raw = file.read_bytes()
    except OSError as exc:
        raise StateFileAccessError("read", exc, os.fspath(file)) from None
    return loads_state(raw)


def save_state(state: MemoryState, path: str | os.PathLike[str]) -> None:
    """Write ``state`` to ``path`` atomically (a temporary file, then a rename).

    A file that cannot be written (a missing directory, no permission, a
    full disk) is a :class:`~memctx.StateFileAccessError` (an ``OSError``
    too), and nothing is left behind.
    """
    file = _path(path)
    text = dumps_state(state) + "\n"
    try:
        write_text_atomic(file, text)
    except OSError as exc:
        raise StateFileAccessError("write", exc, os.fspath(file)) from None


def write_text_atomic(path: Path, text: str) -> None:
    """Write ``text`` to ``path`` so that readers see the old file or the new one, never half.

    An :class:`OSError` names ``path``, not the temporary file it was written through.
    """
    try:
        _write_text_atomic(path, text)
    except OSError as exc:
        if exc.filename is None or exc.errno is None:
            raise
        raise type(exc)(exc.errno, exc.strerror, os.fspath(path)) from None


def _write_text_atomic(path: Path, text: str) -> None:
    directory = path.parent if str(path.parent) else Path(".")
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=directory)
    try:
        # mkstemp makes the file 0600; give it the mode a plain open() would.
        try:
            mode = path.stat().st_mode & 0o777
        except FileNotFoundError:
            umask = os.umask(0)
            os.umask(umask)
            mode = 0o666 & ~umask
        os.chmod(tmp, mode)
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(text)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def _json_type(value: object) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int | float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list | tuple):
        return "array"
    if isinstance(value, Mapping):
        return "object"
    return type(value).__name__
