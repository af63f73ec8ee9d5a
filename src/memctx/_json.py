"""Immutable JSON values.

Chunk content and metadata are JSON values. To keep chunks immutable (and
hashable) they are stored frozen: objects become :class:`FrozenDict`, arrays
become tuples. Both serialise with the standard :mod:`json` module unchanged.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from typing import Any, ClassVar, NoReturn, TypeAlias

from memctx._validators import MAX_INT_DIGITS, MAX_JSON_DEPTH, int_too_large

JSONValue: TypeAlias = (
    "str | int | float | bool | Mapping[str, JSONValue] | tuple[JSONValue, ...] | list[Any] | None"
)


class ReadOnlyDict(dict[str, Any]):
    """A ``dict`` that cannot be changed after construction.

    It is a real ``dict`` subclass so that :func:`json.dumps` serialises it
    natively; every mutating method raises :class:`TypeError` saying ``changed``.
    """

    __slots__ = ()
    changed: ClassVar[str] = "this mapping cannot be changed"

    def _read_only(self, *args: object, **kwargs: object) -> NoReturn:
        raise TypeError(self.changed)

    __setitem__ = _read_only
    __delitem__ = _read_only
    __ior__ = _read_only
    clear = _read_only
    pop = _read_only
    popitem = _read_only
    setdefault = _read_only
    update = _read_only

    def __reduce__(self) -> tuple[type[ReadOnlyDict], tuple[dict[str, Any]]]:
        return type(self), (dict(self),)


class FrozenDict(ReadOnlyDict):
    """Chunk content and metadata: a :class:`ReadOnlyDict` that is also hashable."""

    __slots__ = ("_depth", "_hash")
    changed = "chunk content and metadata are immutable"
    _hash: int
    _depth: int  # how deep its arrays and objects nest (itself included), set by freeze_json

    def __hash__(self) -> int:  # type: ignore[override]
        try:
            return self._hash
        except AttributeError:  # first call: compute and remember
            h = hash(frozenset(self.items()))
            object.__setattr__(self, "_hash", h)
            return h

    def __repr__(self) -> str:
        return f"FrozenDict({dict.__repr__(self)})"


class NotJSONError(ValueError):
    """``value`` at ``path`` (``content.args[2]``) is not a JSON value."""

    def __init__(self, path: str, message: str) -> None:
        self.path = path
        self.message = message
        super().__init__(f"{path}: {message}")


def freeze_json(value: object, path: str) -> Any:
    """Return ``value`` as an immutable JSON value, or raise :class:`NotJSONError`.

    ``path`` names the value in error messages (``content.args[2]``). Arrays and
    objects may nest at most :data:`~memctx._validators.MAX_JSON_DEPTH` deep, and
    integers have at most :data:`~memctx._validators.MAX_INT_DIGITS` digits.
    """
    try:
        return _freeze(value, path, 0)[0]
    except _TooDeepError:
        raise NotJSONError(
            path, f"arrays and objects nest more than {MAX_JSON_DEPTH} deep"
        ) from None


class _TooDeepError(Exception):
    """Raised where the nesting limit is crossed; reported for the whole value."""


def _freeze(value: object, path: str, level: int) -> tuple[Any, int]:
    """The frozen value and how deep its arrays and objects nest; ``level`` encloses it."""
    if value is None or isinstance(value, str | bool):
        return value, 0
    if isinstance(value, int):
        if int_too_large(value):
            raise NotJSONError(path, f"an integer has more than {MAX_INT_DIGITS} digits")
        return value, 0
    if isinstance(value, float):
        if not math.isfinite(value):
            raise NotJSONError(path, f"{value!r} is not a JSON number")
        return value, 0
    if level >= MAX_JSON_DEPTH:
        raise _TooDeepError
    if isinstance(value, FrozenDict):
        depth = getattr(value, "_depth", None)
        if depth is not None:  # frozen (and measured) already
            if level + depth > MAX_JSON_DEPTH:
                raise _TooDeepError
            return value, depth
    if isinstance(value, Mapping):
        items: dict[str, Any] = {}
        deepest = 0
        for key, item in value.items():
            if not isinstance(key, str):
                raise NotJSONError(path, f"object keys must be strings, got {type(key).__name__}")
            items[key], depth = _freeze(item, f"{path}.{key}", level + 1)
            if depth > deepest:
                deepest = depth
        frozen = FrozenDict(items)
        object.__setattr__(frozen, "_depth", deepest + 1)
        return frozen, deepest + 1
    if isinstance(value, list | tuple):
        elements = []
        deepest = 0
        for i, item in enumerate(value):
            element, depth = _freeze(item, f"{path}[{i}]", level + 1)
            elements.append(element)
            if depth > deepest:
                deepest = depth
        return tuple(elements), deepest + 1
    raise NotJSONError(path, f"{type(value).__name__} is not a JSON value")


def thaw_json(value: Any) -> Any:
    """Return a plain, mutable copy (dicts and lists) of a frozen JSON value."""
    if isinstance(value, dict):
        return {key: thaw_json(item) for key, item in value.items()}
    if isinstance(value, tuple | list):
        return [thaw_json(item) for item in value]
    return value


_ENCODER = json.JSONEncoder(ensure_ascii=False)


def dumps(value: Any) -> str:
    """Serialise a JSON value the way chunk content is rendered: non-ASCII kept as is."""
    return _ENCODER.encode(value)


class JSONTextError(ValueError):
    """JSON text that cannot be parsed; ``message`` says why and where."""


def parse_json_text(text: str | bytes | bytearray) -> Any:
    """Parse JSON text, raising :class:`JSONTextError` (never anything else) when it is bad.

    Besides syntax errors: bytes that are not UTF-8 (strictly: no encoded
    surrogate like ``ED A0 80``, no UTF-16 or UTF-32, which :func:`json.loads`
    would accept; a UTF-8 byte order mark is skipped), nesting too deep for the
    parser (arrays and objects are checked against the limit where the value
    is used), and integers of more than :data:`~memctx._validators.MAX_INT_DIGITS` digits.
    """
    if isinstance(text, bytes | bytearray):
        text = _utf8(bytes(text))
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise JSONTextError(
            f"not valid JSON: {exc.msg} at line {exc.lineno} column {exc.colno}"
        ) from None
    except UnicodeDecodeError as exc:
        raise JSONTextError(f"not valid UTF-8: {exc.reason} at byte {exc.start}") from None
    except RecursionError:
        raise JSONTextError(f"arrays and objects nest more than {MAX_JSON_DEPTH} deep") from None
    except ValueError as exc:  # an integer too long to convert
        if "integer string conversion" in str(exc):
            raise JSONTextError(f"an integer has more than {MAX_INT_DIGITS} digits") from None
        raise JSONTextError(f"not valid JSON: {exc}") from None


_UTF8_BOM = b"\xef\xbb\xbf"


def _utf8(raw: bytes) -> str:
    """``raw`` decoded as strict UTF-8 (a leading byte order mark skipped).

    UTF-16 and UTF-32 (which :func:`json.loads` would guess) are refused by
    name: JSON text never starts with a NUL byte, and their byte order marks
    are not UTF-8.
    """
    if raw.startswith(_UTF8_BOM):
        raw = raw[len(_UTF8_BOM) :]
    head = raw[:4]
    if head in (b"\xff\xfe\x00\x00", b"\x00\x00\xfe\xff") or (
        len(head) == 4 and (head[1:] == b"\x00\x00\x00" or head[:3] == b"\x00\x00\x00")
    ):
        raise JSONTextError("not valid UTF-8: the text is UTF-32; save it as UTF-8")
    if head[:2] in (b"\xff\xfe", b"\xfe\xff") or b"\x00" in head[:2]:
        raise JSONTextError("not valid UTF-8: the text is UTF-16; save it as UTF-8")
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise JSONTextError(f"not valid UTF-8: {exc.reason} at byte {exc.start}") from None


def plain_json(value: object) -> Any:
    """``value`` as plain JSON (what is not JSON becomes its ``str``), or :class:`NotJSONError`.

    For documents of other libraries (a provider's content block, a tool's
    arguments): an integer of more than
    :data:`~memctx._validators.MAX_INT_DIGITS` digits or nesting too deep
    for the parser is refused, never a bare ``ValueError`` or ``RecursionError``.
    """
    try:
        return json.loads(json.dumps(value, default=str))
    except RecursionError:
        raise NotJSONError(
            "value", f"arrays and objects nest more than {MAX_JSON_DEPTH} deep"
        ) from None
    except ValueError as exc:
        if "integer string conversion" in str(exc):
            raise NotJSONError(
                "value", f"an integer has more than {MAX_INT_DIGITS} digits"
            ) from None
        raise NotJSONError("value", str(exc)) from None
