"""A store's build options, parsed once per distinct call (an agent loop repeats one).

Validating :class:`~memctx.BuildOptions` runs a validator per field: about a
tenth of a millisecond, cold, of a rebuild that is otherwise a millisecond or
two. A call made of plain values (numbers, strings, booleans, None) and a
tokenizer object is parsed once and its options kept under those values (the
tokenizer under its identity: the kept options hold it, so no other object
takes its place while they are kept). Anything else is parsed each time.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from memctx._build.options import BuildOptions, parse_build_options

_PLAIN: Final = frozenset({int, str, bool, float, type(None)})
KEPT: Final = 32
"""Distinct calls kept; past that the cache starts anew."""


class ParsedOptions:
    """``parse_build_options`` with a cache (see the module docstring)."""

    def __init__(self) -> None:
        self._parsed: dict[tuple[Any, ...], BuildOptions] = {}

    def __call__(self, max_tokens: int | None, options: Mapping[str, Any]) -> BuildOptions:
        key = _key(max_tokens, options)
        if key is None:
            return parse_build_options(max_tokens, options)
        found = self._parsed.get(key)
        if found is None:
            found = parse_build_options(max_tokens, options)
            if len(self._parsed) >= KEPT:
                self._parsed.clear()
            self._parsed[key] = found
        return found


def _key(max_tokens: object, options: Mapping[str, Any]) -> tuple[Any, ...] | None:
    """The call's values with their types (``1 != True``), the tokenizer by identity;
    None when a value is neither."""
    if type(max_tokens) not in _PLAIN:
        return None
    key: list[Any] = [max_tokens, type(max_tokens)]
    for name in sorted(options):
        value = options[name]
        if type(value) in _PLAIN:
            key += (name, type(value), value)
        elif name == "tokenizer":
            key += (name, None, id(value))
        else:
            return None
    return tuple(key)
