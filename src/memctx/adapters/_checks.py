"""What an adapter is given, checked first: a bad option is an :class:`AdapterError`."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from memctx._build.turns import is_turn_text
from memctx._exceptions import AdapterError

TOOL_MODES = ("text", "native")
"""The ``tools=`` values every adapter takes."""


def check_mode(tools: object) -> None:
    if tools not in TOOL_MODES:
        raise AdapterError(f"tools: must be 'text' or 'native', got {tools!r}")


def check_flag(name: str, value: object, *, optional: bool = False) -> None:
    """``value`` must be a bool (or None when ``optional``)."""
    if type(value) is not bool and not (optional and value is None):
        raise AdapterError(f"{name}: must be True or False, got {value!r}")


def check_turn_text(name: str, value: object) -> None:
    """An added turn's text: None (the default) or a non-blank string."""
    if value is not None and not is_turn_text(value):
        raise AdapterError(f"{name}: must be a non-blank string, got {value!r}")


def checked_tool_definitions(value: object) -> list[dict[str, Any]]:
    """Copies of the definitions: a list of objects, each with a non-empty ``name``."""
    if isinstance(value, str | bytes | Mapping) or not isinstance(value, Sequence):
        raise AdapterError(f"tool_definitions: must be a list of objects, got {value!r}")
    found = []
    for index, item in enumerate(value):
        if not isinstance(item, Mapping):
            raise AdapterError(f"tool_definitions[{index}]: must be an object, got {item!r}")
        name = item.get("name")
        if not isinstance(name, str) or not name:
            raise AdapterError(f"tool_definitions[{index}]: needs a non-empty 'name'")
        found.append(dict(item))
    return found


def config_mapping(value: object) -> dict[str, Any]:
    """A copy of Gemini's ``config`` (None: empty)."""
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        raise AdapterError(f"config: must be a mapping, got {type(value).__name__}")
    return dict(value)
