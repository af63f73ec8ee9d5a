"""The builder compression and compaction use when you do not pass one."""

from __future__ import annotations

from memctx._builder import ContextBuilder, create_builder

_DEFAULT: list[ContextBuilder] = []


def default_builder() -> ContextBuilder:
    """A builder with the installed renderers, made once per process (renderers are values)."""
    if not _DEFAULT:
        _DEFAULT.append(create_builder())
    return _DEFAULT[0]
