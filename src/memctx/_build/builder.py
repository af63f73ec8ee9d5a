"""ContextBuilder: a state in, the messages to send and a full report out.

:meth:`ContextBuilder.build` runs the stages in order, each a module of this
package: filter, pin, cost, select (one selector per strategy), group, recount
(only when counts of pieces may not add up) and report.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Hashable, Iterable, Mapping
from typing import Any, Unpack

from memctx._build.cache import BuildCaches, CountKey, HashedKey, HistoryCache, LastBuild
from memctx._build.chunk_costs import ChunkCosts
from memctx._build.compressed import build_compressed
from memctx._build.cost import (
    CostModel,
    Overheads,
    cost_model,
    message_overheads,
    pinned_cost,
    prompt_segment,
)
from memctx._build.counts import BuilderCounts
from memctx._build.filter import Candidates, filter_candidates
from memctx._build.group import Grouped, RequestCount, group
from memctx._build.incremental import LastWalk
from memctx._build.options import BuildKwargs, BuildOptions, ParsedOptions, check_tokenizer
from memctx._build.pin import pin
from memctx._build.recount import recount
from memctx._build.report import report, shared_with
from memctx._build.select import selector_for
from memctx._build.selection import Selection, SelectionProblem
from memctx._build.turns import added_turn_tokens, reserved_turn_tokens
from memctx._chunk import Chunk, ContextMessage, Role
from memctx._exceptions import BudgetExceededError, BuildOptionError
from memctx._render.prefix import EncodingMemo
from memctx._render.registry import RendererRegistry, renderer_cache_key
from memctx._render.rendering import XmlRendering
from memctx._render.tokens import EstimatingTokenizer, tokenizer_traits
from memctx._render.xml_modes import (
    DEFAULT_ATTRIBUTE_MODE,
    DEFAULT_CONTENT_MODE,
    XmlAttributeMode,
    XmlContentMode,
    check_attribute_mode,
    check_content_mode,
)
from memctx._result import ContextBuildResult
from memctx._state import MemoryState
from memctx._units import UnitsIndex
from memctx.adapters._openai_tokens import openai_request_tokens
from memctx.typing import ChunkRenderer, Compressor, Tokenizer

_log = logging.getLogger(__name__)


class ContextBuilder:
    """Builds the messages for a model call from a :class:`MemoryState`.

    The builder remembers what it rendered and counted, per shared history
    (the chunk list a state shares with the states appended to it), renderer
    chain and tokenizer, so a rebuild renders and counts only chunks it has
    not seen; and the last walk per set of options, so a build after an
    append walks only the new chunks. All of it is held weakly by history: a
    state never keeps a builder alive, and a builder's memory of a history
    goes with the history's last state.
    """

    def __init__(
        self,
        tokenizer: Tokenizer | None = None,
        *,
        registry: RendererRegistry | None = None,
        content: XmlContentMode = DEFAULT_CONTENT_MODE,
        attributes: XmlAttributeMode = DEFAULT_ATTRIBUTE_MODE,
    ) -> None:
        try:
            checked: XmlContentMode = check_content_mode(content)
        except ValueError as exc:
            raise BuildOptionError("content", str(exc)) from None
        try:
            lean: XmlAttributeMode = check_attribute_mode(attributes)
        except ValueError as exc:
            raise BuildOptionError("attributes", str(exc)) from None
        check_tokenizer(tokenizer)
        self.registry = registry if registry is not None else RendererRegistry()
        """The renderers, in the order they are asked (see :class:`RendererRegistry`)."""
        self.tokenizer: Tokenizer = tokenizer if tokenizer is not None else EstimatingTokenizer()
        """Counts tokens when a build is given no ``tokenizer``."""
        self._rendering = XmlRendering(self.registry, checked, lean)
        self._caches = BuildCaches()
        self._lock = threading.Lock()
        self._chain_key: tuple[Hashable, ...] = ()
        self._hashed_chain_key = HashedKey(())
        self._fingerprint: tuple[tuple[Hashable, ...], str] | None = None
        self._chain_generation = -1
        self._parse_options = ParsedOptions()
        self._overheads: dict[Hashable, Overheads] = {}
        self._counts = BuilderCounts(
            self._caches, self._rendering, self._count_key, self._renderer_fingerprint
        )

    def register_renderer(self, renderer: ChunkRenderer) -> None:
        """Register ``renderer`` ahead of all others (see :class:`RendererRegistry`)."""
        self.registry.register(renderer)

    def render(self, chunk: Chunk) -> tuple[Role, str]:
        """Return ``(role, xml)`` for one chunk, as a build would render it."""
        return self._rendering.render(chunk)

    # -- the build ------------------------------------------------------------------------

    def build(
        self, state: MemoryState, max_tokens: int | None = None, **options: Unpack[BuildKwargs]
    ) -> ContextBuildResult:
        """Build the messages for ``state`` within ``max_tokens``.

        Takes the fields of :class:`BuildOptions` as keyword arguments, or
        ``options=BuildOptions(...)``. ``compressors`` are applied first;
        ``compress_to_fit`` gives old chunks a cheaper rendition rather than
        leaving them out for the budget (see :mod:`memctx.compress`).
        """
        given: Mapping[str, Any] = options
        if "compressors" in given or "compress_to_fit" in given:  # copied only then
            rest = dict(given)
            compressors = rest.pop("compressors", None)
            compress_to_fit = rest.pop("compress_to_fit", None)
            if compressors is not None or compress_to_fit is not None:
                return self._build_compressed(state, max_tokens, rest, compressors, compress_to_fit)
            given = rest
        opts = self._parse_options(max_tokens, given)
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

    def _build(
        self, state: MemoryState, opts: BuildOptions, tokenizer: Tokenizer, cache: HistoryCache
    ) -> ContextBuildResult:
        items, length = state.shared_history.items, len(state)
        count_key, adds_up = self._count_key(tokenizer)
        key = (opts, count_key)
        last = cache.by_options.get(key)
        if last is not None and last.length == length:  # this state, built this way before
            return self._again(last, opts, tokenizer)
        if last is not None and last.length > length:
            last = None
        units = cache.units_index(state.shared_history, length)
        costs = ChunkCosts(
            cache,
            items,
            renderer=self._rendering,
            tokenizer=tokenizer,
            count_key=count_key,
            adds_up=adds_up,
            media_provider=opts.provider,
            media_positions=units.media,
        )
        prompt = prompt_segment(opts.system_prompt)
        prompt_tokens = tokenizer.count(prompt) if prompt else 0

        candidates = filter_candidates(items, length, opts, state.index_of)  # 1. filter
        pinned = pin(candidates, units, opts, state.index_of)  # 2. pin
        model = cost_model(  # 3. cost
            costs,
            overhead=self._message_overheads(tokenizer, count_key[1]),
            prompt_tokens=prompt_tokens,
            has_system_prompt=bool(prompt),
        )
        problem = self._problem(candidates, units, model, pinned, opts, tokenizer)
        remembered = last.memory if last is not None and candidates.only is None else None
        selected = selector_for(opts.strategy)(problem, remembered)  # 4. select
        messages, safe = group(  # 5. group by role
            selected.selection, items, costs.rendered, prompt, reuse=selected.reusable_messages
        )

        native = opts.counted_tools == "native"
        if costs.adds_up and safe and not native:
            used = selected.selection.used - problem.reserved
            if opts.turn_options is not None:
                used += added_turn_tokens(messages, opts.turn_options, tokenizer)
            grouped = Grouped(tuple(messages), selected.selection, used, recounted=False)
        else:  # 6. recount: the pieces' counts may not add up to the request's
            grouped = recount(
                selected.selection,
                messages,
                items=items,
                rendered=costs.rendered,
                prompt_segment=prompt,
                tokenizer=tokenizer,
                budget=opts.budget,
                pinned=pinned,
                units=units,
                count=_request_count(state, costs, tokenizer, opts, native=native),
            )
        exact = (
            tokenizer.exact
            and opts.provider in (None, "openai")
            and grouped.exact
            and (native or not units.media or not _has_documents(grouped.selection, items, units))
        )
        encode = getattr(getattr(tokenizer, "encoding", None), "encode_ordinary", None)
        memo = (
            EncodingMemo(encode, last.encoded if last is not None else None)
            if last is not None and callable(encode)
            else None
        )
        result = report(  # 7. report
            grouped,
            state=state,
            candidates=candidates,
            opts=opts,
            tokenizer=tokenizer,
            exact=exact,
            measure=costs.measure_all,
            known=costs.known_tokens,
            rendered=costs.rendered_all,
            previous=last.result if last is not None else None,
            prompt_tokens=prompt_tokens,
            overheads=model.overhead,
            memo=memo,
        )
        memory = selected.memory
        if selected.walk is not None and not grouped.recounted:
            memory = LastWalk(length, selected.walk, result)
        encoded = memo.encoded if memo is not None else None
        cache.remember(key, LastBuild(length, result, memory, encoded))
        return result

    def _problem(
        self,
        candidates: Candidates,
        units: UnitsIndex,
        model: CostModel,
        pinned: set[int],
        opts: BuildOptions,
        tokenizer: Tokenizer,
    ) -> SelectionProblem:
        """What the selector is given: the candidates, their costs, and what is fixed."""
        pinned_body = sorted(p for p in pinned if model.role(p) != "system")
        pinned_system = sorted(p for p in pinned if model.role(p) == "system")
        reserved = reserved_turn_tokens(opts.turn_options, tokenizer)  # turns an adapter adds
        fixed = model.overhead["priming"] + pinned_cost(model, pinned_body, pinned_system)
        fixed += reserved
        if opts.budget is not None and fixed > opts.budget:
            raise BudgetExceededError(
                fixed, opts.budget, f"{len(pinned)} pinned chunks, with tokenizer {tokenizer.name}"
            )
        return SelectionProblem(
            items=candidates.items,
            candidates=candidates,
            units=units,
            costs=model,
            pinned=pinned,
            pinned_body=pinned_body,
            pinned_system=pinned_system,
            budget=opts.budget,
            fixed=fixed,
            pinned_ids=frozenset(opts.pinned_chunk_ids),
            reserved=reserved,
        )

    def _again(
        self, last: LastBuild, opts: BuildOptions, tokenizer: Tokenizer
    ) -> ContextBuildResult:
        """The result of building the same state the same way again: its whole request is
        shared with the build before."""
        if not last.again:
            prompt = prompt_segment(opts.system_prompt)
            prompt_tokens = tokenizer.count(prompt) if prompt else 0
            last.result = shared_with(last.result, last.result, tokenizer, prompt_tokens)
            last.again = True
        return last.result

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
        result = build_compressed(
            self, self._counts, state, max_tokens, options, compressors, compress_to_fit
        )
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
                prompt_tokens = tokenizer.count(prompt) if prompt else 0
                result = shared_with(result, last.result, tokenizer, prompt_tokens)
            cache.remember(key, LastBuild(length, result, None))
        return result

    # -- what the caches are keyed by ------------------------------------------------------

    def _chain_keys(self) -> tuple[tuple[Hashable, ...], HashedKey]:
        """The renderer chain's key (see ``ChunkRenderer.cache_key``), and the same wrapped
        with its hash (a cache key hashed per build)."""
        with self._lock:
            if self._chain_generation != self.registry.generation:
                key = tuple(renderer_cache_key(r) for r in self.registry.renderers)
                if self._rendering.content != "escape":  # renderings differ per content mode
                    key += (("content", self._rendering.content),)
                if self._rendering.attributes != "seed":  # and per attribute mode
                    key += (("attributes", self._rendering.attributes),)
                self._chain_key, self._hashed_chain_key = key, HashedKey(key)
                self._chain_generation = self.registry.generation
            return self._chain_key, self._hashed_chain_key

    def _renderer_fingerprint(self) -> str:
        """The chain key as text; persisted token counts are only valid under the same one."""
        key = self._chain_keys()[0]
        made = self._fingerprint
        if made is None or made[0] is not key:  # written anew when the chain key is
            made = self._fingerprint = (key, "|".join(map(repr, key)))
        return made[1]

    def _count_key(self, tokenizer: Tokenizer) -> tuple[CountKey, bool]:
        """The key of counts by this renderer chain and ``tokenizer``; whether they add up."""
        tokenizer_key, adds_up = tokenizer_traits(tokenizer)
        return (self._chain_keys()[1], tokenizer_key), adds_up

    def _message_overheads(self, tokenizer: Tokenizer, key: Hashable) -> Overheads:
        found = self._overheads.get(key)
        if found is None:
            found = self._overheads[key] = message_overheads(tokenizer)
        return found


def counts_of(builder: ContextBuilder) -> BuilderCounts:
    """``builder``'s renderings and counts, as the store, compression and compaction use
    them (the one way in to a builder's caches from outside the build)."""
    return builder._counts


def create_builder(
    tokenizer: Tokenizer | None = None,
    *,
    renderers: Iterable[ChunkRenderer] = (),
    content: XmlContentMode = DEFAULT_CONTENT_MODE,
    attributes: XmlAttributeMode = DEFAULT_ATTRIBUTE_MODE,
) -> ContextBuilder:
    """Return a builder with the installed renderer plugins, plus ``renderers`` ahead of them.

    ``content`` is how chunk content is written in the XML: ``"cdata"`` (the
    default: code as it is) or ``"escape"`` (entities). ``attributes``:
    ``"seed"`` (the default) writes every attribute of the reference XML;
    ``"lean"`` leaves out those the tag or the message already say
    (``role="user"`` in a user message, ``action="tool_call"`` on ``<tool_call>``).
    See :mod:`memctx.xml`.
    """
    builder = ContextBuilder(tokenizer, content=content, attributes=attributes)
    for renderer in renderers:
        builder.register_renderer(renderer)
    return builder


def _request_count(
    state: MemoryState, costs: ChunkCosts, tokenizer: Tokenizer, opts: BuildOptions, *, native: bool
) -> RequestCount:
    """How the recount stage counts messages whole: with the adapter's turns and the media
    they hold, or as the native OpenAI request they stand for."""
    if native:
        return _native_openai(state, tokenizer)

    def count(messages: list[ContextMessage]) -> tuple[int, bool]:
        tokens = tokenizer.count_messages(messages)
        tokens += added_turn_tokens(messages, opts.turn_options, tokenizer)
        return tokens + _media_in(messages, costs, state), True

    return count


def _media_in(messages: list[ContextMessage], costs: ChunkCosts, state: MemoryState) -> int:
    """The media cost of the chunks ``messages`` hold."""
    return sum(costs.media(state.index_of(i)) for m in messages for i in m.chunk_ids)


def _has_documents(selection: Selection, items: list[Chunk], units: UnitsIndex) -> bool:
    """Whether a selected chunk is a document (priced by an estimate)."""
    chosen = set(selection.body)
    return any(items[p].action == "document" for p in units.media if p in chosen)


def _native_openai(state: MemoryState, tokenizer: Tokenizer) -> RequestCount:
    """Counts the native ``to_openai()`` request of a build's messages."""

    def count(messages: list[ContextMessage]) -> tuple[int, bool]:
        chunks = [state[state.index_of(i)] for m in messages for i in m.chunk_ids]
        return openai_request_tokens(messages, chunks, tokenizer)

    return count
