"""The one default builder: what compression, compaction and snapshots use when given none."""

from __future__ import annotations

from memctx._build.builder import ContextBuilder, create_builder

_DEFAULT: list[ContextBuilder] = []


def default_builder() -> ContextBuilder:
    """A builder with the installed renderers, made once per process (renderers are values)."""
    if not _DEFAULT:
        _DEFAULT.append(create_builder())
    return _DEFAULT[0]
