"""One build: filters, pins, selection, assembly and the report."""

from __future__ import annotations

from collections.abc import Iterator
from itertools import islice
from typing import TYPE_CHECKING, Any

from memctx._analysis import StateIndex, state_index
from memctx._budget import CostModel, RecentWalk, Selection, pinned_cost, select_greedy
from memctx._chunk import Chunk, ChunkType, Role
from memctx._exceptions import BudgetExceededError
from memctx._incremental import BuildPlan, MessagesByChunks, extend_walk
from memctx._memo import PREFIX_CHARS_PER_TOKEN, Rendered, safe_split_point
from memctx._options import BuildOptions
from memctx._result import ContextBuildResult, ContextMessage, Exclusion, ExclusionReason
from memctx._state import MemoryState
from memctx._tokens import TiktokenTokenizer, Tokenizer

if TYPE_CHECKING:
    from memctx._builder import ContextBuilder


class BuildRun:
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
        self.bound_key = (self.count_key, "counted so far")
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

        A long chunk is counted in pieces cut where tiktoken's pre-tokenizer
        must split (:func:`safe_split_point`), so the pieces' counts add up
        to the whole's: counting stops as soon as they exceed ``limit``, and
        what was counted is kept on the chunk ("its first ``end`` characters
        have ``counted`` tokens"), so a later build with more room goes on
        from there. No character is encoded twice.
        """
        if limit <= 0:
            return None
        chunk = self.chunks[position]
        memo = chunk._memo
        known: int | None = memo.get(self.count_key)
        if known is None and isinstance(self.tokenizer, TiktokenTokenizer):
            known = self.count_within(memo, self.rendered(position).segment, limit)
            if known is None:
                return None
        tokens = known if known is not None else self.measure(position)
        return tokens if tokens <= limit else None

    def count_within(self, memo: dict[Any, Any], segment: str, limit: int) -> int | None:
        """The exact tokens of ``segment``, or None once more than ``limit`` are counted."""
        counted: int
        end: int
        counted, end = memo.get(self.bound_key, (0, 0))
        count = self.tokenizer.count
        rate = float(PREFIX_CHARS_PER_TOKEN)
        while counted <= limit:
            # Enough characters for the tokens still missing, at this text's
            # own rate once known; cut where the pieces' counts must add up.
            target = end + int(rate * (limit + 1 - counted)) + 1
            cut = safe_split_point(segment, target) if 2 * target < len(segment) + end else None
            if cut is None:
                counted += count(segment[end:])
                memo[self.count_key] = counted
                return counted
            tokens = count(segment[end:cut])
            rate = max(1.0, 1.1 * (cut - end) / max(tokens, 1))
            counted += tokens
            end = cut
            memo[self.bound_key] = (counted, end)
        return None

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
        lineage = state._lineage
        plan = lineage.plan if opts.strategy == "recent" and self.only is None else None
        if plan is not None and not plan.applies_to(self):
            plan = None
        if plan is not None and plan.length == self.length:
            return plan.result  # this very history, built the same way: nothing to do
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
        if opts.strategy != "recent":
            selection = select_greedy(
                costs, self.units(), pinned, pinned_body, pinned_system, budget, fixed
            )
            return self.assemble(selection, pinned, None)

        def new_walk() -> RecentWalk:
            return RecentWalk(costs, self.index, pinned, pinned_body, pinned_system, budget, fixed)

        walk: RecentWalk | None = None
        if plan is not None:
            walk = extend_walk(self, plan, pinned, new_walk())
        reuse = plan.messages_by_chunks() if plan is not None and walk is not None else None
        if walk is None:
            walk = new_walk()
            walk.walk(self.candidate_positions_desc())
        result = self.assemble(walk.selection(), pinned, reuse)
        if not result.recounted and self.only is None:
            lineage.plan = BuildPlan(self, walk, result)
        return result

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

    def messages(
        self, selection: Selection, reuse: MessagesByChunks | None = None
    ) -> tuple[list[ContextMessage], bool]:
        """The messages of ``selection``, and whether their counts add up exactly.

        A message of ``reuse`` that holds the very same chunks (the same
        state lineage, so the same ids mean the same chunks) is reused as it is.
        """
        chunks = self.chunks
        messages: list[ContextMessage] = []
        all_safe = True

        def add(role: Role, parts: list[str], ids: list[str]) -> None:
            key = tuple(ids)
            message = reuse.get(key) if reuse is not None else None
            if message is None:
                message = ContextMessage(role, "".join(parts), key)
            messages.append(message)

        if selection.system or self.prompt_segment:
            parts = [self.prompt_segment] if self.prompt_segment else []
            ids = []
            for position in selection.system:
                found = self.rendered(position)
                all_safe = all_safe and (found.safe_start or not parts)
                parts.append(found.segment)
                ids.append(chunks[position].id)
            add("system", parts, ids)
        run_role: Role | None = None
        run_parts: list[str] = []
        run_ids: list[str] = []
        for position in selection.body:
            found = self.rendered(position)
            if found.role != run_role:
                if run_role is not None:
                    add(run_role, run_parts, run_ids)
                run_role, run_parts, run_ids = found.role, [], []
            elif not found.safe_start:
                all_safe = False
            run_parts.append(found.segment)
            run_ids.append(chunks[position].id)
        if run_role is not None:
            add(run_role, run_parts, run_ids)
        return messages, all_safe

    def assemble(
        self, selection: Selection, pinned: set[int], reuse: MessagesByChunks | None
    ) -> ContextBuildResult:
        chunks, tokenizer = self.chunks, self.tokenizer
        messages, all_safe = self.messages(selection, reuse)
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
            exclusions_source=ExclusionReport(self, set(included)),
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


class ExclusionReport:
    """Works out, when first asked, why each left-out chunk was left out."""

    def __init__(self, run: BuildRun, included: set[int]) -> None:
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


def _memoised_tokens(run: BuildRun, chunk: Chunk) -> int | None:
    return run.builder.cached_tokens(chunk, run.tokenizer)
