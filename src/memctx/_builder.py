"""ContextBuilder: a state in, the messages to send and a full report out."""

from __future__ import annotations

import threading
from collections.abc import Iterable, Iterator
from itertools import islice
from typing import Any, Final

from memctx._analysis import StateIndex, state_index
from memctx._budget import CostModel, Selection, pinned_cost, select_greedy, select_recent
from memctx._chunk import Chunk, ChunkType, Role
from memctx._exceptions import BudgetExceededError, BuildOptionError
from memctx._options import BuildOptions
from memctx._rendering import ChunkRenderer, RendererRegistry
from memctx._result import ContextBuildResult, ContextMessage, Exclusion, ExclusionReason
from memctx._state import MemoryState
from memctx._tokens import EstimatingTokenizer, TiktokenTokenizer, Tokenizer
from memctx.xml import SafeXml, count_forbidden, sanitize

SEPARATOR: Final = "\n"
"""Written after every chunk's XML (and after the system prompt) in a message."""

PREFIX_CHARS_PER_TOKEN: Final = 5
"""How many characters per token of budget a too-big chunk's probe prefix gets."""


def safe_split_point(text: str, start: int) -> int | None:
    """The first index ``>= start`` just after a newline that is followed by a
    character other than whitespace and ``/``, or None.

    tiktoken's pre-tokenizers (cl100k_base, o200k_base) always split there:
    no pre-token runs from a newline into such a character. So the tokens of
    ``text`` are the tokens of ``text[:i]`` followed by those of ``text[i:]``.
    """
    index = text.find("\n", start)
    while index != -1 and index + 1 < len(text):
        following = text[index + 1]
        if not following.isspace() and following != "/":
            return index + 1
        index = text.find("\n", index + 1)
    return None


class Rendered:
    """A chunk's memoised rendering: its role and its segment (XML plus newline)."""

    __slots__ = ("replaced", "role", "safe_start", "segment")

    def __init__(self, role: Role, segment: str, replaced: int) -> None:
        self.role = role
        self.segment = segment
        self.replaced = replaced
        # Token counts of segments add up exactly when each segment after the
        # first in a message starts with a character that cannot join the
        # newline before it into one pre-token (see the README, "Exactness").
        first = segment[:1]
        self.safe_start = bool(first) and not first.isspace() and first != "/"


class _ChainToken:
    """Memo key of one renderer chain (identity-hashed, so lookups stay in C)."""

    __slots__ = ("names",)

    def __init__(self, chain: tuple[ChunkRenderer, ...]) -> None:
        self.names = tuple(type(r).__qualname__ for r in chain)

    def __repr__(self) -> str:
        return f"_ChainToken({', '.join(self.names)})"


# Equal chains (the same renderer objects in the same order) share one token,
# so builders made alike share memoised renderings. Holds the renderers alive.
_CHAIN_TOKENS: dict[tuple[ChunkRenderer, ...], _ChainToken] = {}
_CHAIN_LOCK = threading.Lock()


def _chain_token(chain: tuple[ChunkRenderer, ...]) -> _ChainToken:
    with _CHAIN_LOCK:
        token = _CHAIN_TOKENS.get(chain)
        if token is None:
            token = _CHAIN_TOKENS[chain] = _ChainToken(chain)
        return token


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
        self._chain_key: _ChainToken | None = None
        self._chain_generation = -1
        # Per tokenizer cache key: (reply priming, {role: per-message overhead}).
        self._overheads: dict[Any, dict[str, int]] = {}

    def register_renderer(self, renderer: ChunkRenderer) -> None:
        """Register ``renderer`` ahead of all others (see :class:`RendererRegistry`)."""
        self.registry.register(renderer)

    # -- rendering -------------------------------------------------------------

    def _key(self) -> _ChainToken:
        if self._chain_generation != self.registry.generation:
            self._chain_key = _chain_token(self.registry.renderers)
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
            return _BuildRun(self, state, opts).run()


def create_builder(
    tokenizer: Tokenizer | None = None, *, renderers: Iterable[ChunkRenderer] = ()
) -> ContextBuilder:
    """Return a builder with the installed renderer plugins, plus ``renderers`` ahead of them."""
    builder = ContextBuilder(tokenizer)
    for renderer in renderers:
        builder.register_renderer(renderer)
    return builder


class _BuildRun:
    """One build: filters, pins, selection, assembly, report."""

    def __init__(self, builder: ContextBuilder, state: MemoryState, opts: BuildOptions) -> None:
        self.builder = builder
        self.state = state
        self.opts = opts
        self.tokenizer: Tokenizer = opts.tokenizer or builder.tokenizer
        # The state's lineage list: positions past ``self.length`` belong to
        # states appended to this one and are never read here.
        self.chunks: list[Chunk] = state._lineage.items
        self.length = len(state)
        self.index: StateIndex = state_index(state)
        # Memo keys, computed once per build (see ContextBuilder.rendered/tokens).
        self.render_key = builder._key()
        self.count_key = (self.render_key, getattr(self.tokenizer, "cache_key", self.tokenizer))
        self.bound_key = (self.count_key, "at least")
        self.excluded_types = set(opts.exclude_types)
        if not opts.include_system:
            self.excluded_types.add(ChunkType.SYSTEM)
        if not opts.include_environment:
            self.excluded_types.add(ChunkType.ENVIRONMENT)

    # -- per-position accessors ---------------------------------------------------------

    def rendered(self, position: int) -> Rendered:
        chunk = self.chunks[position]
        found: Rendered | None = chunk._memo.get(self.render_key)
        if found is None:
            found = self.builder.rendered(chunk)
        return found

    def role(self, position: int) -> Role:
        return self.rendered(position).role

    def measure(self, position: int) -> int:
        chunk = self.chunks[position]
        found: int | None = chunk._memo.get(self.count_key)
        if found is None:
            found = self.builder.tokens(chunk, self.tokenizer)
        return found

    def measure_within(self, position: int, limit: int) -> int | None:
        """The tokens of ``position`` if at most ``limit``; None if it cannot fit.

        A long chunk that clearly cannot fit is not encoded whole: a prefix
        cut where tiktoken's pre-tokenizer must split has at most as many
        tokens as the whole, so a prefix already over ``limit`` proves it.
        """
        if limit <= 0:
            return None
        chunk = self.chunks[position]
        memo = chunk._memo
        known: int | None = memo.get(self.count_key)
        if known is None and isinstance(self.tokenizer, TiktokenTokenizer):
            # A lower bound from an earlier probe: "this chunk has at least N tokens".
            at_least: int | None = memo.get(self.bound_key)
            if at_least is not None and at_least > limit:
                return None
            segment = self.rendered(position).segment
            probe = PREFIX_CHARS_PER_TOKEN * (limit + 1)
            if len(segment) > 2 * probe:
                cut = safe_split_point(segment, probe)
                if cut is not None:
                    bound = self.tokenizer.count(segment[:cut])
                    if bound > limit:
                        memo[self.bound_key] = max(bound, at_least or 0)
                        return None
        tokens = known if known is not None else self.measure(position)
        return tokens if tokens <= limit else None

    def filter_reason(self, chunk: Chunk) -> ExclusionReason | None:
        ctype = chunk.type
        if ctype in self.excluded_types:
            if ctype is ChunkType.SYSTEM and not self.opts.include_system:
                return ExclusionReason.SYSTEM_EXCLUDED
            if ctype is ChunkType.ENVIRONMENT and not self.opts.include_environment:
                return ExclusionReason.ENVIRONMENT_EXCLUDED
            return ExclusionReason.TYPE_EXCLUDED
        return None

    def candidate_positions_desc(self) -> Iterator[int]:
        """Positions that pass the filters, newest first (lazily)."""
        chunks = self.chunks
        if self.only is not None:
            for position in reversed(self.only):
                if self.filter_reason(chunks[position]) is None:
                    yield position
            return
        if not self.excluded_types:
            yield from range(self.length - 1, -1, -1)
            return
        for position in range(self.length - 1, -1, -1):
            if chunks[position].type not in self.excluded_types:
                yield position

    def is_candidate(self, position: int) -> bool:
        if self.only_set is not None and position not in self.only_set:
            return False
        return self.chunks[position].type not in self.excluded_types

    # -- the build ---------------------------------------------------------------------

    def run(self) -> ContextBuildResult:
        opts, state = self.opts, self.state
        self.only: list[int] | None = None
        self.only_set: set[int] | None = None
        if opts.include_only_chunk_ids is not None:
            self.only = sorted({state.index_of(i) for i in opts.include_only_chunk_ids})
            self.only_set = set(self.only)
        pinned = self.pinned_positions()
        costs = self.cost_model()
        pinned_body = sorted(p for p in pinned if self.role(p) != "system")
        pinned_system = sorted(p for p in pinned if self.role(p) == "system")
        fixed = costs.overhead["priming"] + pinned_cost(costs, pinned_body, pinned_system)
        budget = opts.budget
        if budget is not None and fixed > budget:
            raise BudgetExceededError(
                fixed, budget, f"{len(pinned)} pinned chunks, with tokenizer {self.tokenizer.name}"
            )
        if opts.strategy == "recent":
            selection = select_recent(
                costs,
                self.index,
                self.candidate_positions_desc(),
                pinned,
                pinned_body,
                pinned_system,
                budget,
                fixed,
            )
        else:
            selection = select_greedy(
                costs, self.units(), pinned, pinned_body, pinned_system, budget, fixed
            )
        return self.assemble(selection, pinned)

    def pinned_positions(self) -> set[int]:
        opts, index = self.opts, self.index
        seeds: list[int] = []
        seeds.extend(index.system_positions)
        seeds.extend(index.pinned_positions)
        for chunk_id in opts.pinned_chunk_ids:
            seeds.append(self.state.index_of(chunk_id))
        if opts.pin_newest:
            newest = next(self.candidate_positions_desc(), None)
            if newest is not None:
                seeds.append(newest)
        if opts.pin_pending_calls:
            seeds.extend(index.pending_openers())
        pinned: set[int] = set()
        for position in seeds:
            if position in pinned or not self.is_candidate(position):
                continue
            members = index.unit_members(position)
            if members is None:
                pinned.add(position)
            else:
                pinned.update(m for m in members if self.is_candidate(m))
        return pinned

    def cost_model(self) -> CostModel:
        tokenizer = self.tokenizer
        cache_key = getattr(tokenizer, "cache_key", tokenizer)
        overhead = self.builder._overheads.get(cache_key)
        if overhead is None:
            priming = tokenizer.count_messages([])
            overhead = {"priming": priming}
            for role in ("system", "user", "assistant"):
                with_role = tokenizer.count_messages([{"role": role, "content": ""}])
                overhead[role] = with_role - priming
            self.builder._overheads[cache_key] = overhead
        prompt = self.opts.system_prompt or ""
        self.prompt_segment = prompt if not prompt or prompt.endswith("\n") else prompt + "\n"
        self.prompt_tokens = tokenizer.count(self.prompt_segment) if prompt else 0
        return CostModel(
            role=self.role,
            measure=self.measure,
            measure_within=self.measure_within,
            overhead=overhead,
            system_base=overhead["system"] + self.prompt_tokens,
            has_system_prompt=bool(prompt),
        )

    def units(self) -> list[list[int]]:
        """Every candidate as an atomic unit, in the order the strategy adds them."""
        index, chunks = self.index, self.chunks
        positions = self.only if self.only is not None else range(self.length)
        seen: set[int] = set()
        units: list[list[int]] = []
        for position in positions:
            if position in seen or not self.is_candidate(position):
                continue
            members = index.unit_members(position)
            unit = [position] if members is None else [m for m in members if self.is_candidate(m)]
            seen.update(unit)
            units.append(unit)
        if self.opts.strategy == "priority":
            units.sort(key=lambda u: (-max(chunks[p].priority for p in u), -u[-1]))
        return units

    def messages(self, selection: Selection) -> tuple[list[ContextMessage], bool]:
        """The messages of ``selection``, and whether their counts add up exactly."""
        chunks = self.chunks
        messages: list[ContextMessage] = []
        all_safe = True
        if selection.system or self.prompt_segment:
            parts = [self.prompt_segment] if self.prompt_segment else []
            ids = []
            for position in selection.system:
                found = self.rendered(position)
                all_safe = all_safe and (found.safe_start or not parts)
                parts.append(found.segment)
                ids.append(chunks[position].id)
            messages.append(ContextMessage("system", "".join(parts), tuple(ids)))
        run_role: Role | None = None
        run_parts: list[str] = []
        run_ids: list[str] = []
        for position in selection.body:
            found = self.rendered(position)
            if found.role != run_role:
                if run_role is not None:
                    messages.append(ContextMessage(run_role, "".join(run_parts), tuple(run_ids)))
                run_role, run_parts, run_ids = found.role, [], []
            elif not found.safe_start:
                all_safe = False
            run_parts.append(found.segment)
            run_ids.append(chunks[position].id)
        if run_role is not None:
            messages.append(ContextMessage(run_role, "".join(run_parts), tuple(run_ids)))
        return messages, all_safe

    def assemble(self, selection: Selection, pinned: set[int]) -> ContextBuildResult:
        chunks, tokenizer = self.chunks, self.tokenizer
        messages, all_safe = self.messages(selection)
        token_count = selection.used
        recounted = False
        if not (isinstance(tokenizer, TiktokenTokenizer) and all_safe):
            # Counts of the pieces may not add up to the count of the whole
            # (chars/4 rounds per message; a custom tokenizer or renderer may
            # merge across chunks): count the messages themselves, and drop
            # the oldest unpinned units while that comes out over the budget.
            recounted = True
            budget = self.opts.budget
            token_count = tokenizer.count_messages(messages)
            while budget is not None and token_count > budget:
                selection = self.drop_oldest(selection, pinned, token_count)
                messages, _ = self.messages(selection)
                token_count = tokenizer.count_messages(messages)

        included = sorted(selection.body + selection.system)
        included_ids = tuple(chunks[p].id for p in included)
        chunk_tokens = {chunks[p].id: self.measure(p) for p in included}
        for position in selection.measured_excluded:
            chunk_tokens[chunks[position].id] = self.measure(position)
        replaced = {}
        for position in included:
            count = self.rendered(position).replaced
            if count:
                replaced[chunks[position].id] = count
        return ContextBuildResult(
            messages=tuple(messages),
            token_count=token_count,
            token_count_exact=tokenizer.exact,
            included_chunk_ids=included_ids,
            chunk_tokens=chunk_tokens,
            replaced_characters=replaced,
            tokenizer_name=tokenizer.name,
            strategy=self.opts.strategy,
            max_tokens=self.opts.max_tokens,
            reserve_tokens=self.opts.reserve_tokens,
            recounted=recounted,
            exclusions_source=_ExclusionReport(self, set(included)),
        )

    def drop_oldest(self, selection: Selection, pinned: set[int], needed: int) -> Selection:
        """Remove the oldest unpinned unit (a recount gave ``needed`` tokens, over budget)."""
        for position in sorted(selection.body + selection.system):
            if position in pinned:
                continue
            members = self.index.unit_members(position) or [position]
            drop = set(members)
            return Selection(
                [p for p in selection.body if p not in drop],
                [p for p in selection.system if p not in drop],
                selection.used,
                selection.measured_excluded + sorted(drop),
            )
        raise BudgetExceededError(
            needed, self.opts.budget or 0, f"counted afresh with {self.tokenizer.name}"
        )


class _ExclusionReport:
    """Works out, when first asked, why each left-out chunk was left out."""

    def __init__(self, run: _BuildRun, included: set[int]) -> None:
        self._run = run
        self._included = included

    def __call__(self) -> tuple[tuple[str, ...], dict[str, Exclusion]]:
        run = self._run
        chunks = run.chunks
        excluded: list[str] = []
        exclusions: dict[str, Exclusion] = {}
        for position, chunk in enumerate(islice(chunks, run.length)):
            if position in self._included:
                continue
            if run.only_set is not None and position not in run.only_set:
                reason = ExclusionReason.NOT_SELECTED
            else:
                reason = run.filter_reason(chunk) or ExclusionReason.OVER_BUDGET
            tokens = None
            if reason is ExclusionReason.OVER_BUDGET:
                tokens = _memoised_tokens(run, chunk)
            excluded.append(chunk.id)
            exclusions[chunk.id] = Exclusion(chunk.id, reason, tokens)
        return tuple(excluded), exclusions


def _memoised_tokens(run: _BuildRun, chunk: Chunk) -> int | None:
    return run.builder.cached_tokens(chunk, run.tokenizer)
