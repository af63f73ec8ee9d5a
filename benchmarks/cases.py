"""The measurements: one build case (workload x budget), memory, and what they hold."""

from __future__ import annotations

import tracemalloc
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from benchmarks import peers
from benchmarks.timing import Timing, measure, measure_interleaved, nothing
from benchmarks.workloads import FreshChunks, Workload, fresh_copy
from memctx import Chunk, ContextBuilder, ContextBuildResult, MemoryState, TiktokenTokenizer

if TYPE_CHECKING:
    from langchain_core.messages import BaseMessage


@dataclass
class BuildCase:
    """memctx (cold, warm, incremental), the floor and LangChain on one workload and budget."""

    workload: str
    kind: str
    chunks: int
    budget: int | None
    tokens: int = 0
    messages: int = 0
    included: int = 0
    floor_tokens: int = 0
    floor: Timing = field(default_factory=Timing)
    cold: Timing = field(default_factory=Timing)
    warm: Timing = field(default_factory=Timing)
    incremental: Timing = field(default_factory=Timing)
    langchain: Timing | None = None
    langchain_kept: int | None = None
    langchain_note: str | None = None

    @property
    def cold_over_floor(self) -> float:
        return self.cold.median / self.floor.median

    @property
    def warm_over_cold(self) -> float:
        return self.warm.median / self.cold.median

    @property
    def incremental_over_cold(self) -> float:
        return self.incremental.median / self.cold.median

    @property
    def langchain_over_cold(self) -> float | None:
        return None if self.langchain is None else self.langchain.median / self.cold.median

    @property
    def langchain_over_warm(self) -> float | None:
        return None if self.langchain is None else self.langchain.median / self.warm.median


@dataclass
class MemoryCase:
    """Peak memory (tracemalloc) of one cold build against the state's text size."""

    workload: str
    chunks: int
    budget: int | None
    text_bytes: int
    peak_bytes: int

    @property
    def ratio(self) -> float:
        return self.peak_bytes / self.text_bytes


def budget_label(budget: int | None) -> str:
    if budget is None:
        return "all fits"
    return f"{budget // 1000}k" if budget % 1000 == 0 else str(budget)


class _Last:
    """Keeps the last build (and its state) of a series of timed runs.

    Earlier results and states are kept too, until :meth:`flush` (called
    untimed), so that freeing them never lands in a timed run: a result
    holds its build, and so its whole state.
    """

    def __init__(self) -> None:
        self.result: ContextBuildResult | None = None
        self.state: MemoryState | None = None
        self._kept: list[object] = []

    def keep(self, result: ContextBuildResult, state: MemoryState) -> None:
        self._kept.append((self.result, self.state))
        self.result, self.state = result, state

    def flush(self) -> None:
        self._kept.clear()


def _check_same(first: ContextBuildResult, second: ContextBuildResult, what: str) -> None:
    same = first.token_count == second.token_count and [
        (m.role, m.content) for m in first.messages
    ] == [(m.role, m.content) for m in second.messages]
    if not same:
        raise AssertionError(f"{what}: a rebuild gave other messages than the cold build")


def run_build_case(
    builder: ContextBuilder,
    tokenizer: TiktokenTokenizer,
    workload: Workload,
    budget: int | None,
    fresh: FreshChunks,
    *,
    repeats: int,
    cold_warmup: int,
    verify: bool,
) -> BuildCase:
    """Time cold, warm and incremental builds and the floor of the cold build's output."""
    case = BuildCase(workload.name, workload.kind, workload.size, budget)
    label = f"{workload.name}/{budget_label(budget)}"
    last = _Last()

    def build(state: MemoryState) -> None:
        last.keep(builder.build(state, max_tokens=budget), state)

    def fresh_state() -> MemoryState:
        last.flush()
        return fresh_copy(workload.state)

    # Cold: a fresh copy of every chunk and a fresh state per run (made untimed).
    # The floor is timed right after each cold run, on that run's output.
    encode_all = peers.floor(tokenizer.encoding)
    contents: list[str] = []

    def floor_of_last() -> None:
        if not contents:
            assert last.result is not None
            contents.extend(peers.floor_inputs(last.result))
        encode_all(contents)

    case.cold, case.floor = measure_interleaved(
        build, fresh_state, floor_of_last,
        repeats=repeats, warmup=cold_warmup,
    )  # fmt: skip
    case.floor_tokens = encode_all(contents)
    cold_result, warm_state = last.result, last.state
    assert cold_result is not None
    assert warm_state is not None
    case.tokens = cold_result.token_count
    case.messages = len(cold_result.messages)
    case.included = len(cold_result.included_chunk_ids)
    if verify and tokenizer.count_messages(cold_result.messages) != cold_result.token_count:
        raise AssertionError(f"{label}: token_count differs from a recount")

    # Warm: the state the last cold run built, built again.
    def same_state() -> MemoryState:
        last.flush()
        return warm_state

    case.warm = measure(build, same_state, repeats=repeats, warmup=1)
    assert last.result is not None
    _check_same(cold_result, last.result, label)

    # Incremental: append one chunk to the last built state and build it (the agent loop);
    # the append is timed too, as an index may be extended there rather than in the build.
    def append_and_build(chunk: Chunk) -> None:
        assert last.state is not None
        build(last.state.append(chunk))

    def new_chunk() -> Chunk:
        last.flush()
        return fresh.next()

    case.incremental = measure(append_and_build, new_chunk, repeats=repeats, warmup=1)
    last.flush()

    return case


def run_langchain(
    case: BuildCase,
    messages: list[BaseMessage],
    tokenizer: TiktokenTokenizer,
    *,
    repeats: int,
    warmup: int,
) -> None:
    """Time ``trim_messages(strategy="last")`` on the same messages and budget."""
    trim = peers.langchain_trim(tokenizer.encoding, case.budget)
    kept: list[Any] = []

    def run(_: None) -> None:
        kept[:] = trim(messages)

    case.langchain = measure(run, nothing, repeats=repeats, warmup=warmup)
    case.langchain_kept = len(kept)


def measure_memory(builder: ContextBuilder, workload: Workload, budget: int | None) -> int:
    """Peak bytes traced during one cold build (fresh copy made before tracing starts)."""
    state = fresh_copy(workload.state)
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        result = builder.build(state, max_tokens=budget)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    del result
    return peak - before
