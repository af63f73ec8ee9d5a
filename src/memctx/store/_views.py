"""What each view operation computes: the new visible list from the current one (no I/O).

The operations that store the result as a batch are in :mod:`memctx.store._view_ops`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any, Final, TypeAlias

from memctx._chunk import ROLES, Chunk, ChunkType, Role
from memctx._exceptions import ViewOperationError
from memctx._validators import describe, int_in_range, message_error, non_empty_str

Visible: TypeAlias = list[tuple[int, Chunk]]
"""The visible chunks with their sequence numbers, in view order."""

Compute: TypeAlias = Callable[[Visible, list[int]], list[int]]
"""Computes the new view from the visible chunks and the sequence numbers of new chunks."""

TRUNCATIONS: Final = ("keep_first", "keep_last", "remove_first", "remove_last", "range")

FILTER_ROLES: Final = frozenset({*ROLES, "tool"})
"""The roles ``filter`` knows: the chat roles, and ``tool`` for tool and skill results."""


def filter_role(chunk: Chunk, role_of: Callable[[Chunk], Role]) -> str:
    """The role ``filter`` sees: ``tool`` for a tool or skill result (an ENVIRONMENT chunk,
    as the providers' native form sends it), else the role the chunk is rendered under."""
    return "tool" if chunk.type is ChunkType.ENVIRONMENT else role_of(chunk)


_error: Final = message_error(ViewOperationError)
_COUNT: Final = int_in_range(_error, 0)
_INT: Final = int_in_range(_error)
_NON_EMPTY: Final = non_empty_str(_error)


def _count(name: str, value: object) -> int:
    return _COUNT.check(value, name)


def truncation(**given: Any) -> tuple[str, Any]:
    """The one truncation asked for, checked: ``(name, value)``; ``range`` is ``[start, end]``."""
    chosen = [(name, value) for name, value in given.items() if value is not None]
    if len(chosen) != 1:
        names = ", ".join(TRUNCATIONS)
        got = ", ".join(name for name, _ in chosen) or "none"
        raise ViewOperationError(f"truncate takes exactly one of {names}; got {got}")
    name, value = chosen[0]
    if name != "range":
        return name, _count(name, value)
    if isinstance(value, str) or not isinstance(value, Sequence) or len(value) != 2:
        raise ViewOperationError(f"range must be (start, end), got {describe(value)}")
    start, end = value
    for bound in (start, end):
        if bound is not None and (isinstance(bound, bool) or not isinstance(bound, int)):
            raise ViewOperationError(f"range bounds must be ints or None, got {describe(value)}")
    return name, [start, end]


def truncate_view(view: list[int], name: str, value: Any) -> list[int]:
    """Apply one truncation (slice semantics) to ``view``."""
    if name == "keep_first":
        return view[:value]
    if name == "keep_last":
        return view[len(view) - value :] if value else []
    if name == "remove_first":
        return view[value:]
    if name == "remove_last":
        return view[: max(len(view) - value, 0)]
    start, end = value
    return view[start:end]


def check_position(position: object) -> int:
    """An insert position: an int, ``-1`` (the end) or not negative."""
    position = _INT.check(position, "position")
    if position < -1:
        raise ViewOperationError(f"position must be -1 (the end) or from 0 on, got {position}")
    return position


def insert_position(position: object, length: int) -> int:
    """Where to insert: ``-1`` is the end; otherwise ``0 <= position <= length``."""
    position = check_position(position)
    if position == -1:
        return length
    if not 0 <= position <= length:
        raise ViewOperationError(
            f"position {describe(position)} is outside the visible chunks "
            f"(0..{length}, or -1 for the end)"
        )
    return position


def replace_index(target: object, visible: Visible) -> int:
    """The visible index ``target`` names: an index (negative from the end) or a chunk id."""
    if isinstance(target, str):
        for index, (_, chunk) in enumerate(visible):
            if chunk.id == target:
                return index
        raise ViewOperationError(
            f"chunk {target!r} is not visible; only visible chunks can be replaced"
        )
    if isinstance(target, bool) or not isinstance(target, int):
        raise ViewOperationError(
            f"replace takes a visible index or a chunk id, got {describe(target)}"
        )
    if not -len(visible) <= target < len(visible):
        raise ViewOperationError(
            f"index {describe(target)} is outside the {len(visible)} visible chunks"
        )
    return target % len(visible)


def _items(name: str, value: object, kind: str) -> tuple[object, ...]:
    """``value`` as a tuple: one item of ``kind`` alone, or an iterable of them."""
    if not isinstance(value, Iterable):
        raise ViewOperationError(f"{name} takes {kind} or a list of them, got {describe(value)}")
    return tuple(value)


def _strings(name: str, value: str | Iterable[str] | None) -> tuple[str, ...]:
    if value is None:
        return ()
    items = (value,) if isinstance(value, str) else _items(name, value, "a string")
    return tuple(_NON_EMPTY.check(item, f"{name}[{i}]") for i, item in enumerate(items))


def chunk_ids(name: str, value: object) -> tuple[str, ...]:
    """Chunk ids given as one id or a list of them, each once."""
    items = (value,) if isinstance(value, str) else _items(name, value, "a chunk id")
    ids = tuple(_NON_EMPTY.check(item, f"{name}[{i}]") for i, item in enumerate(items))
    return tuple(dict.fromkeys(ids))


def filter_params(
    roles: str | Iterable[str] | None,
    types: ChunkType | str | Iterable[ChunkType | str] | None,
    contains: str | Iterable[str] | None,
    excludes: str | Iterable[str] | None,
) -> dict[str, list[str]]:
    """The filter's criteria, checked, as JSON; at least one must be given."""
    role_list = _strings("roles", roles)
    for role in role_list:
        if role not in FILTER_ROLES:
            raise ViewOperationError(f"unknown role {role!r}; roles are {sorted(FILTER_ROLES)}")
    if types is None:
        type_list: tuple[str, ...] = ()
    else:
        given: list[Any] = (
            [types] if isinstance(types, str) else list(_items("types", types, "a type"))
        )
        try:
            type_list = tuple(ChunkType(t).value for t in given)
        except ValueError:
            known = ", ".join(t.value for t in ChunkType)
            raise ViewOperationError(
                f"unknown chunk type in {describe(given)}; known: {known}"
            ) from None
    params = {
        "roles": list(role_list),
        "types": list(type_list),
        "contains": list(_strings("contains", contains)),
        "excludes": list(_strings("excludes", excludes)),
    }
    params = {name: values for name, values in params.items() if values}
    if not params:
        raise ViewOperationError("filter needs at least one of roles, types, contains, excludes")
    return params


def filter_predicate(
    params: Mapping[str, list[str]], role_of: Callable[[Chunk], Role]
) -> Callable[[Chunk], bool]:
    """True for a chunk that meets every criterion (AND)."""
    roles = set(params.get("roles", ()))
    types = set(params.get("types", ()))
    contains = params.get("contains", ())
    excludes = params.get("excludes", ())

    def keep(chunk: Chunk) -> bool:
        if types and chunk.type.value not in types:
            return False
        if roles and filter_role(chunk, role_of) not in roles:
            return False
        text = chunk.text
        return all(s in text for s in contains) and not any(s in text for s in excludes)

    return keep
