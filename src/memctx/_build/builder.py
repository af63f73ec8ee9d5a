"""ContextBuilder: a state in, the messages to send and a full report out."""

from __future__ import annotations

import logging
import threading
import warnings
from collections.abc import Hashable, Iterable, Mapping
from typing import Any

from memctx._build.cache import (
    BuildCaches,
    ChunkCosts,
    CountKey,
    HashedKey,
    HistoryCache,
    LastBuild,
)
from memctx._chunk import Chunk, ContextMessage, Role
from memctx._build.compressed import build_compressed
from memctx._build.cost import Overheads, cost_model, message_overheads, pinned_cost, prompt_segment
from memctx._exceptions import BudgetExceededError, BuildOptionError
from memctx._build.filter import filter_candidates
from memctx._build.group import RequestCount, group
from memctx._build.incremental import LastWalk
from memctx._build.options import BuildOptions, check_tokenizer, parse_build_options
from memctx._build.pin import pin
from memctx._build.turns import added_turn_tokens, reserved_turn_tokens
from memctx._render.registry import RendererRegistry, renderer_cache_key
from memctx._build.report import report, shared_with
from memctx._result import ContextBuildResult
from memctx._render.segments import SEPARATOR, RenderedChunk
from memctx._build.select import selector_for
from memctx._build.selection import Selection, SelectionProblem
from memctx._state import MemoryState
from memctx.adapters._openai_tokens import openai_request_tokens
from memctx._render.tokens import EstimatingTokenizer, tokenizer_traits
from memctx.typing import ChunkRenderer, Compressor, Tokenizer
from memctx.xml import (
    DEFAULT_CONTENT_MODE,
    SafeXml,
    XmlContentMode,
    check_content_mode,
    content_mode,
    count_forbidden,
    sanitize,
)

_log = logging.getLogger(__name__)


class ContextBuilder:
    """Builds the messages for a model call from a :class:`MemoryState`.

    The builder remembers what it rendered and counted, per shared history
    (the chunk list a state shares with the states appended to it), renderer
    chain and tokenizer, so a rebuild renders and counts only chunks it has
    not seen; and the last newest-first walk per set of options, so a build
    after an append walks only the new chunks. All of it is held weakly by
    history: a state never keeps a builder alive, and a builder's memory of
    a history goes with the history's last state.
    """

    def __init__(
        self,
        tokenizer: Tokenizer | None = None,
        *,
        registry: RendererRegistry | None = None,
        content: XmlContentMode = DEFAULT_CONTENT_MODE,
    ) -> None:
        try:
            self.content: XmlContentMode = check_content_mode(content)
        except ValueError as exc:
            raise BuildOptionError("content", str(exc)) from None
        check_tokenizer(tokenizer)
        self.registry = registry if registry is not None else RendererRegistry()
        self.tokenizer: Tokenizer = tokenizer if tokenizer is not None else EstimatingTokenizer()
        self._caches = BuildCaches()
        self._lock = threading.Lock()
        self._chain_key: tuple[Hashable, ...] = ()
        self._hashed_chain_key = HashedKey(())
        self._fingerprint: tuple[tuple[Hashable, ...], str] | None = None
        self._chain_generation = -1
        self._parsed_options: dict[tuple[Any, ...], BuildOptions] = {}
        self._overheads: dict[Hashable, Overheads] = {}

    def register_renderer(self, renderer: ChunkRenderer) -> None:
        """Register ``renderer`` ahead of all others (see :class:`RendererRegistry`)."""
        self.registry.register(renderer)

    # -- the build ------------------------------------------------------------------------

    def build(
        self,
        state: MemoryState,
        max_tokens: int | None = None,
        *,
        compressors: Iterable[Compressor] | None = None,
        compress_to_fit: Compressor | None = None,
        **options: Any,
    ) -> ContextBuildResult:
        """Build the messages for ``state`` within ``max_tokens``.

        Takes the fields of :class:`BuildOptions` as keyword arguments, or
        ``options=BuildOptions(...)``. ``compressors`` are applied first;
        ``compress_to_fit`` gives old chunks a cheaper rendition rather than
        leaving them out for the budget (see :mod:`memctx.compress`).
        """
        if compressors is not None or compress_to_fit is not None:
            return self._build_compressed(state, max_tokens, options, compressors, compress_to_fit)
        opts = self._parse_options(max_tokens, options)
        if not isinstance(state, MemoryState):
            raise BuildOptionError("state", f"must be a MemoryState, got {type(state).__name__}")
        tokenizer = opts.tokenizer or self.tokenizer
        history = state.shared_history
        cache = self._caches.for_history(history)
        with history.lock:  # appends to this history wait while the build reads it
            result = self._build(state, opts, tokenizer, cache)
        if _log.isEnabledFor(logging.DEBUG):
            _log.debug("build: %s", result.summary().replace("\n", "; "))
        return result

    def _build_compressed(
        self,
        state: MemoryState,
        max_tokens: int | None,
        options: dict[str, Any],
        compressors: Iterable[Compressor] | None,
        compress_to_fit: Compressor | None,
    ) -> ContextBuildResult:
        """A build with compression, reporting the prefix it shares with the last one of
        this history with these options and compressors (compressed states are new)."""
        if isinstance(compressors, Iterable) and not isinstance(compressors, str):
            compressors = tuple(compressors)  # read once, and part of the key
        result = build_compressed(self, state, max_tokens, options, compressors, compress_to_fit)
        opts = self._parse_options(max_tokens, options)
        tokenizer = opts.tokenizer or self.tokenizer
        steps = (compressors, compress_to_fit)
        try:
            hash(steps)
        except TypeError:  # a compressor that is not hashable: no previous build to find
            return result
        key = ("compressed", opts, self._count_key(tokenizer)[0], steps)
        history, length = state.shared_history, len(state)
        cache = self._caches.for_history(history)
        with history.lock:
            last = cache.by_options.get(key)
            if last is not None and last.length <= length:
                prompt = prompt_segment(opts.system_prompt)
                result = shared_with(result, last.result, tokenizer, prompt)
            cache.remember(key, LastBuild(length, result, None))
        return result

    def _build(
        self, state: MemoryState, opts: BuildOptions, tokenizer: Tokenizer, cache: HistoryCache
    ) -> ContextBuildResult:
        items, length = state.shared_history.items, len(state)
        count_key, adds_up = self._count_key(tokenizer)
        key = (opts, count_key)
        last = cache.by_options.get(key)
        if last is not None and last.length == length:  # this state, built this way before
            if not last.again:
                prompt = prompt_segment(opts.system_prompt)
                last.result = shared_with(last.result, last.result, tokenizer, prompt)
                last.again = True
            return last.result
        if last is not None and last.length > length:
            last = None
        costs = ChunkCosts(
            cache,
            items,
            count_key[0],
            _Rendering(self),
            tokenizer,
            count_key,
            adds_up,
            media_provider=opts.provider,
        )
        candidates = filter_candidates(items, length, opts, state.index_of)  # 1. filter
        units = cache.units_index(state.shared_history, length)
        pinned = pin(candidates, units, opts, state.index_of)  # 2. pin
        prompt = prompt_segment(opts.system_prompt)
        prompt_tokens = tokenizer.count(prompt) if prompt else 0
        model = cost_model(  # 3. cost
            costs.role,
            costs.measure,
            costs.measure_within,
            costs.known_tokens,
            self._message_overheads(tokenizer, count_key[1]),
            prompt_tokens,
            has_system_prompt=bool(prompt),
        )
        pinned_body = sorted(p for p in pinned if costs.role(p) != "system")
        pinned_system = sorted(p for p in pinned if costs.role(p) == "system")
        fixed = model.overhead["priming"] + pinned_cost(model, pinned_body, pinned_system)
        reserved = reserved_turn_tokens(opts.turn_options, tokenizer)  # turns an adapter adds
        fixed += reserved
        if opts.budget is not None and fixed > opts.budget:
            raise BudgetExceededError(
                fixed, opts.budget, f"{len(pinned)} pinned chunks, with tokenizer {tokenizer.name}"
            )
        problem = SelectionProblem(
            items,
            candidates,
            units,
            model,
            pinned,
            pinned_body,
            pinned_system,
            opts.budget,
            fixed,
            frozenset(opts.pinned_chunk_ids),
            reserved,
        )
        remembered = last.memory if last is not None and candidates.only is None else None
        selected = selector_for(opts.strategy)(problem, remembered)  # 4. select
        grouped = group(  # 5. group by role
            selected.selection,
            items,
            costs.rendered,
            prompt,
            counts_add_up=costs.adds_up,
            tokenizer=tokenizer,
            budget=opts.budget,
            pinned=pinned,
            units=units,
            reuse=selected.reusable_messages,
            added_tokens=lambda messages: added_turn_tokens(messages, opts.turn_options, tokenizer),
            reserved=reserved,
            media_tokens=lambda messages: _media_in(messages, costs, state),
            request_count=_native_openai(state, tokenizer) if opts.counted_tools == "native" else None,
        )
        result = report(  # 6. report
            grouped,
            items,
            candidates,
            opts,
            tokenizer.name,
            tokenizer.exact
            and opts.provider in (None, "openai")
            and grouped.exact
            and (opts.counted_tools == "native" or not _has_documents(grouped.selection, items)),
            costs.measure,
            costs.known_tokens,
            costs.rendered,
            previous=last.result if last is not None else None,
            tokenizer=tokenizer,
            prompt_tokens=prompt_tokens,
        )
        memory = selected.memory
        if selected.walk is not None and not grouped.recounted:
            memory = LastWalk(length, selected.walk, result)
        cache.remember(key, LastBuild(length, result, memory))
        return result

    def _parse_options(self, max_tokens: int | None, options: dict[str, Any]) -> BuildOptions:
        """Options parsed once per distinct call of plain values (an agent loop repeats one)."""
        key = _plain_options_key(max_tokens, options)
        if key is None:
            return parse_build_options(max_tokens, options)
        found = self._parsed_options.get(key)
        if found is None:
            found = parse_build_options(max_tokens, options)
            if len(self._parsed_options) >= _OPTIONS_PARSED_KEPT:
                self._parsed_options.clear()
            self._parsed_options[key] = found
        return found

    # -- rendering and counting ------------------------------------------------------------

    def render_chunk(self, chunk: Chunk) -> RenderedChunk:
        """Render ``chunk`` with the registry: its role, segment and replaced characters."""
        with content_mode(self.content):  # how render_element writes content
            role, xml = self.registry.render(chunk)
        if type(xml) is SafeXml:
            replaced = xml.replaced
        else:  # a renderer that did not use render_element: check its output
            replaced = count_forbidden(xml)
            if replaced:
                xml = sanitize(xml)
        return RenderedChunk(role, xml + SEPARATOR, replaced)

    def render(self, chunk: Chunk) -> tuple[Role, str]:
        """Return ``(role, xml)`` for one chunk, as a build would render it."""
        found = self.render_chunk(chunk)
        return found.role, found.segment[: -len(SEPARATOR)]

    def rendered(self, chunk: Chunk) -> RenderedChunk:
        """Deprecated alias of :meth:`render_chunk`."""
        warnings.warn(
            "ContextBuilder.rendered is deprecated; use render_chunk",
            DeprecationWarning,
            stacklevel=2,
        )
        return self.render_chunk(chunk)

    @property
    def chain_key(self) -> tuple[Hashable, ...]:
        """Names the renderer chain and its configuration (see ``ChunkRenderer.cache_key``)."""
        return self._chain_keys()[0]

    def _chain_keys(self) -> tuple[tuple[Hashable, ...], HashedKey]:
        """The chain key, and the same wrapped with its hash (a cache key hashed per build)."""
        with self._lock:
            if self._chain_generation != self.registry.generation:
                key = tuple(renderer_cache_key(r) for r in self.registry.renderers)
                if self.content != "escape":  # renderings differ per content mode
                    key += (("content", self.content),)
                self._chain_key, self._hashed_chain_key = key, HashedKey(key)
                self._chain_generation = self.registry.generation
            return self._chain_key, self._hashed_chain_key

    @property
    def renderer_fingerprint(self) -> str:
        """The chain key as text; persisted token counts are only valid under the same one."""
        key = self.chain_key
        made = self._fingerprint
        if made is None or made[0] is not key:  # written anew when the chain key is
            made = self._fingerprint = (key, "|".join(map(repr, key)))
        return made[1]

    def _count_key(self, tokenizer: Tokenizer) -> tuple[CountKey, bool]:
        """The key of counts by this renderer chain and ``tokenizer``; whether they add up."""
        tokenizer_key, adds_up = tokenizer_traits(tokenizer)
        return (self._chain_keys()[1], tokenizer_key), adds_up

    def _chunk_costs(
        self, cache: HistoryCache, items: list[Chunk], tokenizer: Tokenizer
    ) -> tuple[ChunkCosts, CountKey]:
        count_key, adds_up = self._count_key(tokenizer)
        costs = ChunkCosts(
            cache, items, count_key[0], _Rendering(self), tokenizer, count_key, adds_up
        )
        return costs, count_key

    def _message_overheads(self, tokenizer: Tokenizer, key: Hashable) -> Overheads:
        found = self._overheads.get(key)
        if found is None:
            found = self._overheads[key] = message_overheads(tokenizer)
        return found

    def token_counts(self, state: MemoryState, tokenizer: Tokenizer) -> dict[int, int]:
        """Token counts of ``state``'s chunks this builder knows, by position."""
        history = state.shared_history
        with history.lock:
            costs, _ = self._chunk_costs(
                self._caches.for_history(history), history.items, tokenizer
            )
            return costs.known_counts(len(state))

    def seed_token_counts(
        self, state: MemoryState, tokenizer: Tokenizer, counts: Mapping[int, int]
    ) -> None:
        """Record counts known from elsewhere (a store's cache), by position, so they are
        not counted again. Only seed counts measured under the same
        :attr:`renderer_fingerprint` and tokenizer ``cache_key``.
        """
        history = state.shared_history
        with history.lock:
            costs, _ = self._chunk_costs(
                self._caches.for_history(history), history.items, tokenizer
            )
            for position, tokens in counts.items():
                if 0 <= position < len(state):
                    costs.seed(position, tokens)

    def seed_tokens(self, chunk: Chunk, tokenizer: Tokenizer, count: int) -> None:
        """Deprecated: use :meth:`seed_token_counts`, which takes the state.

        Seeds ``count`` where a live state this builder built holds ``chunk``.
        """
        warnings.warn(
            "ContextBuilder.seed_tokens is deprecated; use seed_token_counts(state, ...)",
            DeprecationWarning,
            stacklevel=2,
        )
        for history, cache in self._caches.histories():
            position = history.ids.get(chunk.id)
            if position is None or history.items[position] is not chunk:
                continue
            with history.lock:
                costs, _ = self._chunk_costs(cache, history.items, tokenizer)
                costs.seed(position, count)

    def tokens(self, chunk: Chunk, tokenizer: Tokenizer) -> int:
        """Tokens of ``chunk``'s segment (its XML and the newline after it)."""
        return tokenizer.count(self.render_chunk(chunk).segment)

    def cached_tokens(self, chunk: Chunk, tokenizer: Tokenizer) -> int | None:
        """The count of ``chunk``'s segment if a build of a live state holding it counted it."""
        for history, _ in self._caches.histories():
            position = history.ids.get(chunk.id)
            if position is None or history.items[position] is not chunk:
                continue
            with history.lock:
                costs, _ = self._chunk_costs(
                    self._caches.for_history(history), history.items, tokenizer
                )
                found = costs.known_tokens(position)
            if found is not None:
                return found
        return None


def create_builder(
    tokenizer: Tokenizer | None = None,
    *,
    renderers: Iterable[ChunkRenderer] = (),
    content: XmlContentMode = DEFAULT_CONTENT_MODE,
) -> ContextBuilder:
    """Return a builder with the installed renderer plugins, plus ``renderers`` ahead of them.

    ``content`` is how chunk content is written in the XML: ``"cdata"`` (the
    default: code as it is) or ``"escape"`` (entities); see :mod:`memctx.xml`.
    """
    builder = ContextBuilder(tokenizer, content=content)
    for renderer in renderers:
        builder.register_renderer(renderer)
    return builder


_OPTIONS_PARSED_KEPT = 32
_PLAIN_TYPES = frozenset({int, str, bool, float, type(None)})


def _plain_options_key(max_tokens: object, options: dict[str, Any]) -> tuple[Any, ...] | None:
    """A key for build options made only of plain values (types included: ``1 != True``)."""
    if type(max_tokens) not in _PLAIN_TYPES:
        return None
    key: list[Any] = [max_tokens, type(max_tokens)]
    for name in sorted(options):
        value = options[name]
        if type(value) not in _PLAIN_TYPES:
            return None
        key += (name, type(value), value)
    return tuple(key)


def _media_in(messages: list[ContextMessage], costs: ChunkCosts, state: MemoryState) -> int:
    """The media cost of the chunks ``messages`` hold."""
    return sum(costs.media(state.index_of(i)) for m in messages for i in m.chunk_ids)


def _has_documents(selection: Selection, items: list[Chunk]) -> bool:
    """Whether a selected chunk is a document (priced by an estimate)."""
    return any(items[p].action == "document" for p in selection.body)


def _native_openai(state: MemoryState, tokenizer: Tokenizer) -> RequestCount:
    """Counts the native ``to_openai()`` request of a build's messages."""

    def count(messages: list[ContextMessage]) -> tuple[int, bool]:
        chunks = [state[state.index_of(i)] for m in messages for i in m.chunk_ids]
        return openai_request_tokens(messages, chunks, tokenizer)

    return count


class _Rendering:
    """A builder's rendering, as its chunk costs use it (see :class:`ChunkRendering`)."""

    __slots__ = ("_builder",)

    def __init__(self, builder: ContextBuilder) -> None:
        self._builder = builder

    def render(self, chunk: Chunk) -> RenderedChunk:
        return self._builder.render_chunk(chunk)

    def role(self, chunk: Chunk) -> Role:
        return self._builder.registry.role(chunk)

    def render_prefix(self, chunk: Chunk, chars: int) -> str | None:
        with content_mode(self._builder.content):
            text = self._builder.registry.render_prefix(chunk, chars)
        return None if text is None else sanitize(text)
