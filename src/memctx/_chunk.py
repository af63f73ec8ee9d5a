"""The chunk, one typed and immutable piece of an agent's memory, and the message
of a build that holds chunks of one role."""

from __future__ import annotations

import datetime as _dt
import enum
import os
from collections.abc import Iterable, Mapping
from typing import Any, Final, Literal, TypeAlias, get_args

import attrs

from memctx._exceptions import InvalidChunkError
from memctx._json import FrozenDict, NotJSONError, dumps, freeze_json
from memctx._validators import (
    MAX_CHUNK_ID_LENGTH,
    MAX_KIND_LENGTH,
    PRIORITY_MAX,
    PRIORITY_MIN,
    describe,
    int_in_range,
    is_bool,
    non_empty_str,
    optional,
)

Role: TypeAlias = Literal["system", "user", "assistant"]
"""A chat role, as chat-completion APIs name them."""

ROLES: Final[frozenset[str]] = frozenset(get_args(Role))


class ChunkType(enum.StrEnum):
    """The family a chunk belongs to; each family has its own renderer.

    ``CUSTOM`` is for kinds memctx does not know: put the kind's name in
    :attr:`Chunk.subtype` (see :func:`memctx.chunks.custom`) and register a
    renderer that claims it, or let the generic fallback render it.
    """

    SYSTEM = "SYSTEM"
    AGENT = "AGENT"
    WORKFLOW = "WORKFLOW"
    DELEGATION = "DELEGATION"
    ENVIRONMENT = "ENVIRONMENT"
    WORKING_FLOW = "WORKING_FLOW"
    OUTPUT = "OUTPUT"
    CUSTOM = "CUSTOM"


def new_chunk_id() -> str:
    """Return a fresh ``chunk_<12 hex digits>`` id (48 random bits)."""
    return "chunk_" + os.urandom(6).hex()


def _utcnow() -> _dt.datetime:
    return _dt.datetime.now(_dt.UTC)


_metadata_str: Final = optional(non_empty_str(InvalidChunkError, prefix="metadata."))
_metadata_bool: Final = is_bool(InvalidChunkError, prefix="metadata.")
_metadata_optional_bool: Final = optional(_metadata_bool)
_metadata_count: Final = optional(int_in_range(InvalidChunkError, 0, prefix="metadata."))


def _convert_derived_from(value: object) -> object:
    # A JSON array (a list) read back from a file or database becomes a tuple.
    return tuple(value) if isinstance(value, list) else value


def _validate_derived_from(
    instance: object, attribute: attrs.Attribute[Any], value: object
) -> None:
    if value is None:
        return
    if not isinstance(value, tuple) or not value:
        raise InvalidChunkError(
            "metadata.derived_from", f"must be a non-empty tuple of chunk ids, got {value!r}"
        )
    for item in value:
        if not isinstance(item, str) or not item:
            raise InvalidChunkError(
                "metadata.derived_from", f"chunk ids must be non-empty strings, got {item!r}"
            )


def _freeze_custom(value: object) -> FrozenDict:
    if value is None:
        return FrozenDict()
    if not isinstance(value, Mapping):
        raise InvalidChunkError("metadata.custom", f"must be a mapping, got {type(value).__name__}")
    try:
        frozen = freeze_json(value, "metadata.custom")
    except NotJSONError as exc:
        raise InvalidChunkError(exc.path, exc.message) from None
    assert isinstance(frozen, FrozenDict)
    return frozen


@attrs.frozen(cache_hash=True)
class ChunkMetadata:
    """Typed details of a chunk, rendered as XML attributes by the built-in renderers.

    Every field is optional; ``custom`` is a free JSON object for your own
    data (renderers may read it; the built-ins do not render it).
    ``derived_from`` names the chunks a compressed or summarised chunk stands
    for (``None`` for a chunk that is not derived).
    """

    tool: str | None = attrs.field(default=None, validator=_metadata_str)
    skill: str | None = attrs.field(default=None, validator=_metadata_str)
    call_id: str | None = attrs.field(default=None, validator=_metadata_str)
    status: str | None = attrs.field(default=None, validator=_metadata_str)
    subagent_id: str | None = attrs.field(default=None, validator=_metadata_str)
    agent_type: str | None = attrs.field(default=None, validator=_metadata_str)
    parent_agent_id: str | None = attrs.field(default=None, validator=_metadata_str)
    success: bool | None = attrs.field(default=None, validator=_metadata_optional_bool)
    error: bool | None = attrs.field(default=None, validator=_metadata_optional_bool)
    reason: str | None = attrs.field(default=None, validator=_metadata_str)
    terminated_by: str | None = attrs.field(default=None, validator=_metadata_str)
    original_count: int | None = attrs.field(default=None, validator=_metadata_count)
    compacted_at: int | None = attrs.field(default=None, validator=_metadata_count)
    pinned: bool = attrs.field(default=False, validator=_metadata_bool)
    custom: FrozenDict = attrs.field(factory=FrozenDict, converter=_freeze_custom)
    derived_from: tuple[str, ...] | None = attrs.field(
        default=None, converter=_convert_derived_from, validator=_validate_derived_from
    )
    signature: str | None = attrs.field(default=None, validator=_metadata_str)
    """A reasoning chunk's proof of origin: Anthropic's thinking ``signature``, or an
    OpenAI reasoning item's ``encrypted_content``. Only a ``thinking`` chunk has one."""
    reasoning_id: str | None = attrs.field(default=None, validator=_metadata_str)
    """The id of the OpenAI reasoning item a ``thinking`` chunk came from."""
    item_id: str | None = attrs.field(default=None, validator=_metadata_str)
    """The id of the OpenAI Responses item a chunk came from: a ``function_call``'s
    (``fc_…``), a ``function_call_output``'s, an assistant message's (``msg_…``).
    ``to_responses`` sends it back (unless ``item_ids=False``); never shown in the XML."""
    media_type: str | None = attrs.field(default=None, validator=_metadata_str)
    width: int | None = attrs.field(default=None, validator=_metadata_count)
    height: int | None = attrs.field(default=None, validator=_metadata_count)
    byte_size: int | None = attrs.field(default=None, validator=_metadata_count)
    detail: str | None = attrs.field(default=None, validator=_metadata_str)
    title: str | None = attrs.field(default=None, validator=_metadata_str)
    pages: int | None = attrs.field(default=None, validator=_metadata_count)

    def to_dict(self) -> dict[str, Any]:
        """Return the fields that are set, as plain JSON (``custom`` thawed)."""
        from memctx._json import thaw_json

        out: dict[str, Any] = {}
        for name in _FIELDS_BEFORE:
            value = getattr(self, name)
            if value is not None:
                out[name] = value
        if self.pinned:
            out["pinned"] = True
        if self.custom:
            out["custom"] = thaw_json(self.custom)
        if self.derived_from is not None:
            out["derived_from"] = list(self.derived_from)
        for name in _FIELDS_AFTER:
            value = getattr(self, name)
            if value is not None:
                out[name] = value
        return out


def _fields_around(special: tuple[str, ...]) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """The metadata fields before and after ``special`` (consecutive, in that order): the
    dict a chunk's metadata becomes keeps the fields' order, which stored rows hold."""
    names = tuple(field.name for field in attrs.fields(ChunkMetadata))
    start = names.index(special[0])
    assert names[start : start + len(special)] == special
    return names[:start], names[start + len(special) :]


_FIELDS_BEFORE, _FIELDS_AFTER = _fields_around(("pinned", "custom", "derived_from"))

_EMPTY_METADATA: Final = ChunkMetadata()


def _convert_type(value: object) -> ChunkType:
    if isinstance(value, ChunkType):
        return value
    if isinstance(value, str):
        try:
            return ChunkType(value)
        except ValueError:
            pass
    known = ", ".join(t.value for t in ChunkType)
    raise InvalidChunkError("type", f"unknown chunk type {describe(value)}; known types: {known}")


def _freeze_content(value: object) -> Any:
    try:
        return freeze_json(value, "content")
    except NotJSONError as exc:
        raise InvalidChunkError(exc.path, exc.message) from None


_check_id: Final = non_empty_str(InvalidChunkError, blank_ok=False, max_length=MAX_CHUNK_ID_LENGTH)
_check_kind: Final = optional(non_empty_str(InvalidChunkError, max_length=MAX_KIND_LENGTH))
_check_priority: Final = int_in_range(InvalidChunkError, PRIORITY_MIN, PRIORITY_MAX)


def _validate_role(instance: object, attribute: attrs.Attribute[Any], value: object) -> None:
    if value is not None and (not isinstance(value, str) or value not in ROLES):
        raise InvalidChunkError(
            "role", f"unknown role {describe(value)}; expected one of {sorted(ROLES)}"
        )


def _validate_metadata(instance: Any, attribute: attrs.Attribute[Any], value: object) -> None:
    if not isinstance(value, ChunkMetadata):
        raise InvalidChunkError("metadata", f"must be a ChunkMetadata, got {type(value).__name__}")
    is_thinking = instance.type is ChunkType.WORKING_FLOW and instance.subtype == "THINKING"
    for name in ("signature", "reasoning_id"):
        if getattr(value, name) is not None and not is_thinking:
            raise InvalidChunkError(
                f"metadata.{name}",
                f"only a thinking chunk carries a {name}, not a {instance.type.value} chunk "
                f"(action={instance.action!r}, subtype={instance.subtype!r})",
            )


def _validate_created_at(instance: object, attribute: attrs.Attribute[Any], value: object) -> None:
    if not isinstance(value, _dt.datetime) or value.tzinfo is None:
        raise InvalidChunkError(
            "created_at", f"must be a timezone-aware datetime, got {describe(value)}"
        )


@attrs.frozen(cache_hash=True)
class Chunk:
    """One immutable piece of memory.

    ``content`` is text or any JSON value (stored frozen: objects become
    :class:`~memctx._json.FrozenDict`, arrays tuples). ``role``, ``action`` and
    ``subtype`` say which kind of chunk of its ``type`` this is (the
    constructors in :mod:`memctx.chunks` set them). Change a chunk with
    :func:`attrs.evolve`, which gives a new chunk.
    """

    type: ChunkType = attrs.field(converter=_convert_type)
    content: Any = attrs.field(converter=_freeze_content)
    id: str = attrs.field(factory=new_chunk_id, validator=_check_id)
    role: Role | None = attrs.field(default=None, validator=_validate_role)
    action: str | None = attrs.field(default=None, validator=_check_kind)
    subtype: str | None = attrs.field(default=None, validator=_check_kind)
    metadata: ChunkMetadata = attrs.field(default=_EMPTY_METADATA, validator=_validate_metadata)
    priority: int = attrs.field(default=0, validator=_check_priority)
    created_at: _dt.datetime = attrs.field(factory=_utcnow, validator=_validate_created_at)

    @property
    def pinned(self) -> bool:
        """Whether budget trimming must always keep this chunk."""
        return self.metadata.pinned

    @property
    def text(self) -> str:
        """The content as the text that is rendered: strings as is, JSON serialised."""
        content = self.content
        if isinstance(content, str):
            return content
        if content is None:
            return ""
        return dumps(content)


def _to_tuple(value: Iterable[str]) -> tuple[str, ...]:
    return tuple(value)


@attrs.frozen
class ContextMessage:
    """One chat message: its ``role``, its ``content`` and the ids of the chunks it holds."""

    role: Role
    content: str
    chunk_ids: tuple[str, ...] = attrs.field(default=(), converter=_to_tuple)

    def to_dict(self) -> dict[str, str]:
        """Return ``{"role": ..., "content": ...}``."""
        return {"role": self.role, "content": self.content}
