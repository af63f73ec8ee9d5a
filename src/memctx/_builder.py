"""ContextBuilder: a state in, the messages to send and a full report out."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from memctx._build_run import BuildRun
from memctx._chunk import Chunk, Role
from memctx._exceptions import BuildOptionError
from memctx._memo import SEPARATOR, ChainToken, Rendered, chain_token
from memctx._options import BuildOptions
from memctx._rendering import ChunkRenderer, RendererRegistry
from memctx._result import ContextBuildResult
from memctx._state import MemoryState
from memctx._tokens import EstimatingTokenizer, Tokenizer
from memctx.xml import SafeXml, count_forbidden, sanitize


class ContextBuilder:
    """Builds the messages for a model call from a :class:`MemoryState`.

    Renderings and token counts are memoised on the chunks themselves (they
    are immutable), keyed by the renderer chain and the encoding, so a
    rebuild renders and counts only chunks it has not seen.
    """

    def __init__(
        self, tokenizer: Tokenizer | None = None, *, registry: RendererRegistry | None = None
    ) -> None:
        self.registry = registry if registry is not None else RendererRegistry()
        self.tokenizer: Tokenizer = tokenizer if tokenizer is not None else EstimatingTokenizer()
        self._chain_key: ChainToken | None = None
        self._chain_generation = -1
        # Per tokenizer cache key: (reply priming, {role: per-message overhead}).
        self._overheads: dict[Any, dict[str, int]] = {}

    def register_renderer(self, renderer: ChunkRenderer) -> None:
        """Register ``renderer`` ahead of all others (see :class:`RendererRegistry`)."""
        self.registry.register(renderer)

    # -- rendering -------------------------------------------------------------

    def _key(self) -> ChainToken:
        if self._chain_generation != self.registry.generation:
            self._chain_key = chain_token(self.registry.renderers)
            self._chain_generation = self.registry.generation
        assert self._chain_key is not None
        return self._chain_key

    def rendered(self, chunk: Chunk) -> Rendered:
        """Return ``chunk``'s role and segment, rendering it only the first time."""
        key = self._key()
        memo = chunk._memo
        found: Rendered | None = memo.get(key)
        if found is None:
            role, xml = self.registry.render(chunk)
            if type(xml) is SafeXml:
                replaced = xml.replaced
            else:  # a renderer that did not use render_element: check its output
                replaced = count_forbidden(xml)
                if replaced:
                    xml = sanitize(xml)
            found = Rendered(role, xml + SEPARATOR, replaced)
            memo[key] = found
        return found

    def render(self, chunk: Chunk) -> tuple[Role, str]:
        """Return ``(role, xml)`` for one chunk, as a build would render it."""
        found = self.rendered(chunk)
        return found.role, found.segment[: -len(SEPARATOR)]

    @property
    def renderer_fingerprint(self) -> str:
        """Names the renderer chain; persisted token counts are only valid under the same one."""
        return "|".join(
            f"{type(r).__module__}.{type(r).__qualname__}" for r in self.registry.renderers
        )

    def cached_tokens(self, chunk: Chunk, tokenizer: Tokenizer) -> int | None:
        """The memoised token count of ``chunk``'s segment, or None when not counted yet."""
        cache_key = getattr(tokenizer, "cache_key", tokenizer)
        found: int | None = chunk._memo.get((self._key(), cache_key))
        return found

    def seed_tokens(self, chunk: Chunk, tokenizer: Tokenizer, count: int) -> None:
        """Record a token count known from elsewhere (a store's cache) so it is not recounted.

        Only seed counts that were measured under the same
        :attr:`renderer_fingerprint` and tokenizer ``cache_key``.
        """
        cache_key = getattr(tokenizer, "cache_key", tokenizer)
        chunk._memo[(self._key(), cache_key)] = count

    def tokens(self, chunk: Chunk, tokenizer: Tokenizer) -> int:
        """Tokens of ``chunk``'s segment (its XML and the newline after it)."""
        cache_key = getattr(tokenizer, "cache_key", tokenizer)
        key = (self._key(), cache_key)
        memo = chunk._memo
        count: int | None = memo.get(key)
        if count is None:
            count = tokenizer.count(self.rendered(chunk).segment)
            memo[key] = count
        return count

    # -- building --------------------------------------------------------------------

    def build(
        self, state: MemoryState, max_tokens: int | None = None, **options: Any
    ) -> ContextBuildResult:
        """Build the messages for ``state`` within ``max_tokens``.

        Takes the fields of :class:`BuildOptions` as keyword arguments, or
        ``options=BuildOptions(...)``.
        """
        given = options.pop("options", None)
        if given is not None:
            if options or max_tokens is not None:
                raise BuildOptionError("options", "pass BuildOptions or keywords, not both")
            if not isinstance(given, BuildOptions):
                raise BuildOptionError("options", f"must be BuildOptions, got {given!r}")
            opts = given
        else:
            try:
                opts = BuildOptions(max_tokens=max_tokens, **options)
            except TypeError as exc:
                raise BuildOptionError("build", str(exc)) from None
        if not isinstance(state, MemoryState):
            raise BuildOptionError("state", f"must be a MemoryState, got {type(state).__name__}")
        # Appending to this state's history extends shared indexes in place;
        # hold them still while this build reads them.
        with state._lineage.lock:
            return BuildRun(self, state, opts).run()


def create_builder(
    tokenizer: Tokenizer | None = None, *, renderers: Iterable[ChunkRenderer] = ()
) -> ContextBuilder:
    """Return a builder with the installed renderer plugins, plus ``renderers`` ahead of them."""
    builder = ContextBuilder(tokenizer)
    for renderer in renderers:
        builder.register_renderer(renderer)
    return builder
