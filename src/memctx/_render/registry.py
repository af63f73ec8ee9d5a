"""The renderer protocol, the registry that picks a renderer, and the fallback."""

from __future__ import annotations

import itertools
from collections.abc import Hashable, Iterable
from typing import Any, ClassVar

from memctx._chunk import Chunk, Role
from memctx._exceptions import RendererError
from memctx.typing import ChunkRenderer
from memctx.xml import AttributeValue, lean_attributes, render_element, render_element_prefix

_PLAIN_VALUES = (str, int, float, bool, type(None))


def renderer_cache_key(renderer: ChunkRenderer) -> Hashable:
    """The key under which ``renderer``'s renderings and token counts are cached.

    The renderer's own ``cache_key`` when it has one; else its class's full
    name and, when all of them are plain values (str, int, float, bool,
    None), the instance's attributes — so two differently configured
    instances never share cached counts. A renderer with other attributes is
    keyed by the instance itself (cached for the life of the builder only).
    """
    declared = getattr(renderer, "cache_key", None)
    if declared is not None:
        return declared  # type: ignore[no-any-return]
    kind = type(renderer)
    name = f"{kind.__module__}.{kind.__qualname__}"
    attributes = getattr(renderer, "__dict__", {})
    if all(isinstance(v, _PLAIN_VALUES) for v in attributes.values()):
        return (name, *sorted((k, repr(v)) for k, v in attributes.items()))
    return (name, id(renderer))


class GenericRenderer:
    """The fallback: renders any chunk no other renderer claims, safely.

    ``<memory_chunk id=".." type=".." role=".." action=".." subtype="..">``
    around the content. Its role is the chunk's own ``role`` when set, else
    ``user``: text of unknown origin is never given the system role. (The
    ``role`` attribute, the message's role, is left out in the ``"lean"``
    attribute mode.)
    """

    tag = "memory_chunk"
    claims_by_kind: ClassVar[bool] = True
    """Claims a chunk by its type, role, action and subtype alone (here: every chunk)."""

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        cls.claims_by_kind = cls.can_render is GenericRenderer.can_render

    def can_render(self, chunk: Chunk) -> bool:
        return True

    def get_role(self, chunk: Chunk) -> Role:
        return chunk.role or "user"

    def render(self, chunk: Chunk) -> str:
        return render_element(self.tag, self._attributes(chunk), chunk.text)

    def render_prefix(self, chunk: Chunk, chars: int) -> str:
        """A prefix of :meth:`render` covering the first ``chars`` characters of the content."""
        return render_element_prefix(self.tag, self._attributes(chunk), chunk.text, chars)

    @staticmethod
    def _attributes(chunk: Chunk) -> list[tuple[str, AttributeValue]]:
        return [
            ("id", chunk.id),
            ("type", chunk.type.value),
            ("role", None if lean_attributes() else chunk.role),
            ("action", chunk.action),
            ("subtype", chunk.subtype),
        ]

    def __repr__(self) -> str:
        return "GenericRenderer()"


_KINDS_KEPT = 1024
"""Chunk kinds whose renderer a registry remembers."""
_generations = itertools.count(1)


class RendererRegistry:
    """Resolves each chunk to the renderer that renders it.

    The order is: renderers you :meth:`register` (the newest first), then the
    plugins (the ``memctx.renderers`` entry points, third-party plugins
    before memctx's built-ins), then :class:`GenericRenderer`, which takes
    anything. The first whose ``can_render`` says yes wins.
    """

    def __init__(
        self,
        plugins: Iterable[ChunkRenderer] | None = None,
        *,
        fallback: ChunkRenderer | None = None,
    ) -> None:
        if plugins is None:
            from memctx._render.plugins import load_renderer_plugins

            plugins = load_renderer_plugins()
        self._user: list[ChunkRenderer] = []
        self._plugins: tuple[ChunkRenderer, ...] = tuple(
            _check_renderer(p, "plugin") for p in plugins
        )
        self._fallback = fallback if fallback is not None else GenericRenderer()
        self._chain: tuple[ChunkRenderer, ...] = ()
        self._by_kind: dict[tuple[object, ...], ChunkRenderer] = {}
        self.generation = 0
        self._rebuild()

    def _rebuild(self) -> None:
        self._chain = (*reversed(self._user), *self._plugins, self._fallback)
        self._by_kind = {}
        # A fresh process-wide token: memoised renderings keyed by it can
        # never be confused with those of another registry or configuration.
        self.generation = next(_generations)

    def register(self, renderer: ChunkRenderer) -> None:
        """Add ``renderer`` ahead of every renderer registered before it and of all plugins."""
        self._user.append(_check_renderer(renderer, "registered renderer"))
        self._rebuild()

    @property
    def renderers(self) -> tuple[ChunkRenderer, ...]:
        """All renderers in the order they are asked, the fallback last."""
        return self._chain

    def resolve(self, chunk: Chunk) -> ChunkRenderer:
        """Return the first renderer that claims ``chunk``.

        When every renderer asked claims by the chunk's kind alone (type,
        role, action, subtype: a :class:`DeclaredRenderer` or the fallback), the
        answer is remembered for that kind.
        """
        kind = (chunk.type, chunk.role, chunk.action, chunk.subtype)
        found = self._by_kind.get(kind)
        if found is not None:
            return found
        by_kind = True
        for renderer in self._chain:
            by_kind = by_kind and getattr(type(renderer), "claims_by_kind", False) is True
            try:
                claims = renderer.can_render(chunk)
            except Exception as exc:
                raise RendererError(
                    f"{type(renderer).__name__}.can_render failed on chunk {chunk.id!r}: {exc}"
                ) from exc
            if claims:
                if by_kind and len(self._by_kind) < _KINDS_KEPT:
                    self._by_kind[kind] = renderer
                return renderer
        raise RendererError(f"no renderer claims chunk {chunk.id!r}")  # pragma: no cover

    def render(self, chunk: Chunk) -> tuple[Role, str]:
        """Return ``(role, xml)`` for ``chunk``, checking what the renderer returns."""
        renderer = self.resolve(chunk)
        role = self._role(renderer, chunk)
        try:
            text = renderer.render(chunk)
        except Exception as exc:
            raise RendererError(
                f"{type(renderer).__name__} failed on chunk {chunk.id!r}: {exc}"
            ) from exc
        return role, _checked_text(text, renderer, chunk, "render")

    def role(self, chunk: Chunk) -> Role:
        """Return the role ``chunk`` is rendered with, without rendering it."""
        return self._role(self.resolve(chunk), chunk)

    def render_prefix(self, chunk: Chunk, chars: int) -> str | None:
        """A prefix of ``render(chunk)``'s XML covering the first ``chars`` characters of the
        content, when the renderer can make one (a ``render_prefix`` method); else None."""
        renderer = self.resolve(chunk)
        method = getattr(renderer, "render_prefix", None)
        if method is None:
            return None
        try:
            text = method(chunk, chars)
        except Exception as exc:
            raise RendererError(
                f"{type(renderer).__name__}.render_prefix failed on chunk {chunk.id!r}: {exc}"
            ) from exc
        return _checked_text(text, renderer, chunk, "render_prefix")

    @staticmethod
    def _role(renderer: ChunkRenderer, chunk: Chunk) -> Role:
        try:
            role = renderer.get_role(chunk)
        except Exception as exc:
            raise RendererError(
                f"{type(renderer).__name__} failed on chunk {chunk.id!r}: {exc}"
            ) from exc
        if role not in ("system", "user", "assistant"):
            raise RendererError(
                f"{type(renderer).__name__}.get_role returned {role!r} for chunk "
                f"{chunk.id!r}; expected 'system', 'user' or 'assistant'"
            )
        return role


def _checked_text(text: object, renderer: ChunkRenderer, chunk: Chunk, method: str) -> str:
    if not isinstance(text, str):
        raise RendererError(
            f"{type(renderer).__name__}.{method} returned {type(text).__name__} "
            f"for chunk {chunk.id!r}; expected str"
        )
    return text


def _check_renderer(renderer: object, what: str) -> ChunkRenderer:
    if isinstance(renderer, type):
        raise RendererError(f"{what} {renderer.__name__} is a class; pass an instance")
    if not isinstance(renderer, ChunkRenderer):
        missing = [
            name
            for name in ("can_render", "get_role", "render")
            if not callable(getattr(renderer, name, None))
        ]
        raise RendererError(
            f"{what} {renderer!r} is not a ChunkRenderer: missing {', '.join(missing)}"
        )
    return renderer
