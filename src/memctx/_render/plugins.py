"""Discovery of renderer plugins through the ``memctx.renderers`` entry points.

Two phases, as flake8 does it: :func:`find_renderer_plugins` reads only
metadata and sorts it (so the order never depends on the file system), then
:func:`load_renderer_plugins` imports each one, wrapping any failure in a
:class:`~memctx.PluginLoadError` that names the plugin.
"""

from __future__ import annotations

import functools
import importlib.metadata as importlib_metadata
from collections.abc import Callable, Iterable

import attrs

from memctx._exceptions import PluginLoadError
from memctx.typing import ChunkRenderer

ENTRY_POINT_GROUP = "memctx.renderers"
BUILTIN_DISTRIBUTION = "memctx"


@attrs.frozen
class PluginSpec:
    """One renderer plugin as its metadata describes it, before it is imported."""

    name: str
    value: str
    distribution: str
    entry_point: importlib_metadata.EntryPoint = attrs.field(eq=False, repr=False)

    @property
    def builtin(self) -> bool:
        """Whether memctx itself ships this plugin."""
        return self.distribution == BUILTIN_DISTRIBUTION

    def __str__(self) -> str:
        return f"{self.distribution}:{self.name} = {self.value}"


def find_renderer_plugins(
    entry_points: Callable[..., Iterable[importlib_metadata.EntryPoint]] | None = None,
) -> list[PluginSpec]:
    """Return the declared renderer plugins, third-party first, each group sorted by name."""
    get = entry_points or importlib_metadata.entry_points
    specs: dict[tuple[str, str], PluginSpec] = {}
    for ep in get(group=ENTRY_POINT_GROUP):
        dist = ep.dist.name if ep.dist is not None else "unknown"
        # The same distribution can be seen twice (e.g. an editable install
        # next to a stale one); the first one found wins.
        specs.setdefault((dist, ep.name), PluginSpec(ep.name, ep.value, dist, ep))
    return sorted(specs.values(), key=lambda s: (s.builtin, s.distribution, s.name))


def load_plugin(spec: PluginSpec) -> ChunkRenderer:
    """Import one plugin and return its renderer instance.

    The entry point may name a renderer instance, or a class or factory that
    is called with no arguments to make one.
    """
    try:
        obj = spec.entry_point.load()
    except Exception as exc:
        raise PluginLoadError(str(spec), f"{type(exc).__name__}: {exc}") from exc
    if isinstance(obj, type) or (not isinstance(obj, ChunkRenderer) and callable(obj)):
        try:
            obj = obj()
        except Exception as exc:
            raise PluginLoadError(str(spec), f"{type(exc).__name__}: {exc}") from exc
    if isinstance(obj, type) or not isinstance(obj, ChunkRenderer):
        raise PluginLoadError(
            str(spec),
            f"{obj!r} is not a ChunkRenderer (needs can_render, get_role and render)",
        )
    return obj


def load_renderer_plugins(
    entry_points: Callable[..., Iterable[importlib_metadata.EntryPoint]] | None = None,
) -> tuple[ChunkRenderer, ...]:
    """Find and load every renderer plugin (cached per process when not faked)."""
    if entry_points is not None:
        return tuple(load_plugin(spec) for spec in find_renderer_plugins(entry_points))
    return _load_installed()


@functools.cache
def _load_installed() -> tuple[ChunkRenderer, ...]:
    return tuple(load_plugin(spec) for spec in find_renderer_plugins())
