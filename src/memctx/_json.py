"""Immutable JSON values.

Chunk content and metadata are JSON values. To keep chunks immutable (and
hashable) they are stored frozen: objects become :class:`FrozenDict`, arrays
become tuples. Both serialise with the standard :mod:`json` module unchanged.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from typing import Any, NoReturn, TypeAlias

JSONValue: TypeAlias = (
    "str | int | float | bool | Mapping[str, JSONValue] | tuple[JSONValue, ...] | list[Any] | None"
)


class FrozenDict(dict[str, Any]):
    """A ``dict`` that cannot be changed after construction.

    It is a real ``dict`` subclass so that :func:`json.dumps` serialises it
    natively; every mutating method raises :class:`TypeError`.
    """

    __slots__ = ("_hash",)
    _hash: int

    def _readonly(self, *args: object, **kwargs: object) -> NoReturn:
        raise TypeError("chunk content and metadata are immutable")

    __setitem__ = _readonly
    __delitem__ = _readonly
    __ior__ = _readonly
    clear = _readonly
    pop = _readonly
    popitem = _readonly
    setdefault = _readonly
    update = _readonly

    def __hash__(self) -> int:  # type: ignore[override]
        try:
            return self._hash
        except AttributeError:  # first call: compute and remember
            h = hash(frozenset(self.items()))
            object.__setattr__(self, "_hash", h)
            return h

    def __repr__(self) -> str:
        return f"FrozenDict({dict.__repr__(self)})"

    def __reduce__(self) -> tuple[type[FrozenDict], tuple[dict[str, Any]]]:
        return (FrozenDict, (dict(self),))


class NotJSONError(ValueError):
    """``value`` at ``path`` (``content.args[2]``) is not a JSON value."""

    def __init__(self, path: str, message: str) -> None:
        self.path = path
        self.message = message
        super().__init__(f"{path}: {message}")


def freeze_json(value: object, path: str) -> Any:
    """Return ``value`` as an immutable JSON value, or raise :class:`NotJSONError`.

    ``path`` names the value in error messages (``content.args[2]``).
    """
    if value is None or isinstance(value, str | bool | int):
        return value
    if isinstance(value, float):
        if not math.isfinite(value):
            raise NotJSONError(path, f"{value!r} is not a JSON number")
        return value
    if isinstance(value, FrozenDict):
        return value
    if isinstance(value, Mapping):
        items: dict[str, Any] = {}
        for key, item in value.items():
            if not isinstance(key, str):
                raise NotJSONError(path, f"object keys must be strings, got {type(key).__name__}")
            items[key] = freeze_json(item, f"{path}.{key}")
        return FrozenDict(items)
    if isinstance(value, list | tuple):
        return tuple(freeze_json(item, f"{path}[{i}]") for i, item in enumerate(value))
    raise NotJSONError(path, f"{type(value).__name__} is not a JSON value")


def thaw_json(value: Any) -> Any:
    """Return a plain, mutable copy (dicts and lists) of a frozen JSON value."""
    if isinstance(value, dict):
        return {key: thaw_json(item) for key, item in value.items()}
    if isinstance(value, tuple | list):
        return [thaw_json(item) for item in value]
    return value


def dumps(value: Any) -> str:
    """Serialise a JSON value the way chunk content is rendered: non-ASCII kept as is."""
    return json.dumps(value, ensure_ascii=False)
