"""One huge tool output that cannot fit: what it adds to a cold 8k build.

The generated 100-chunk history is built cold at 8k tokens as it is and
with one unpinned 10 MB tool output (and its call) inserted before its six
newest chunks, where the newest-first walk meets it, finds it cannot fit
and stops. The
difference is what the huge chunk costs the build; rendering it whole is
timed beside it, as what the build would pay without prefix rendering.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

from benchmarks.timing import Timing, measure
from benchmarks.workloads import fresh_copy, generate
from memctx import ContextBuilder, MemoryState, chunks
from memctx._build.builder import counts_of

SIZE_BYTES = 10_000_000
BUDGET = 8_000
NEWER = 6
"""Chunks newer than the huge output: they fit, then the walk meets it."""


@dataclass
class HugeChunkResult:
    without: Timing
    with_huge: Timing
    render_whole: Timing
    excluded: bool
    one_line: Timing | None = None
    """The same with the output as one line (the corpus with its line breaks made spaces)."""
    minified: Timing | None = None
    """The same with the output as 10 MB of minified JSON (no line break at all)."""

    @property
    def added_ms(self) -> float:
        return (self.with_huge.median - self.without.median) * 1000


def huge_output(corpus: str) -> str:
    """About ``SIZE_BYTES`` of real agent output: the corpus repeated."""
    return corpus * (SIZE_BYTES // len(corpus.encode("utf-8")) + 1)


def minified_json() -> str:
    """About ``SIZE_BYTES`` of JSON without a line break or a space."""
    rows = [{"id": i, "path": f"src/module_{i % 97}.py", "ok": i % 3 == 0} for i in range(200_000)]
    text = json.dumps(rows, separators=(",", ":"))
    return (text * (SIZE_BYTES // len(text) + 1))[:SIZE_BYTES]


def with_huge_output(state: MemoryState, output: str) -> MemoryState:
    """``state`` with a call and its huge ``output`` among its newest chunks."""
    items = list(state.chunks)
    cut = len(items) - NEWER
    call = chunks.tool_call("bash", {"cmd": "cat huge.log"}, call_id="huge-call", id="huge-call")
    result = chunks.tool_result("bash", output, call_id="huge-call", id="huge-output")
    return MemoryState([*items[:cut], call, result, *items[cut:]])


def run_huge_chunk(builder: ContextBuilder, corpus: str, *, repeats: int) -> HugeChunkResult:
    base = generate(100, corpus)
    huge = with_huge_output(base, huge_output(corpus))

    def build(state: MemoryState) -> None:
        builder.build(state, max_tokens=BUDGET)

    without = measure(build, lambda: fresh_copy(base), repeats=repeats)
    with_huge = measure(build, lambda: fresh_copy(huge), repeats=repeats)
    render_whole = measure(
        counts_of(builder).render_chunk,
        lambda: fresh_copy(huge).get("huge-output"),
        repeats=repeats,
    )
    one_line = with_huge_output(base, huge_output(corpus).replace("\n", " "))
    minified = with_huge_output(base, minified_json())
    result = builder.build(fresh_copy(huge), max_tokens=BUDGET)
    return HugeChunkResult(
        without,
        with_huge,
        render_whole,
        "huge-output" in result.excluded_chunk_ids,
        measure(build, lambda: fresh_copy(one_line), repeats=repeats),
        measure(build, lambda: fresh_copy(minified), repeats=repeats),
    )


def huge_chunk_section(result: HugeChunkResult | None) -> list[str]:
    if result is None:
        return ["Not run."]
    ms = 1000
    return [
        "The generated 100-chunk history built cold at 8k, as it is and with one unpinned "
        f"{SIZE_BYTES / 1e6:.0f} MB tool output inserted before its {NEWER} newest chunks "
        "(the walk meets it, finds it cannot fit and stops); rendering that output whole, "
        "for comparison.",
        "",
        "| case | ms (median) |",
        "|---|---:|",
        f"| gen 100, 8k | {result.without.median * ms:.2f} |",
        f"| gen 100 + 10 MB output, 8k | {result.with_huge.median * ms:.2f} |",
        f"| added by the huge output | {result.added_ms:.2f} |",
        f"| rendering the 10 MB output whole | {result.render_whole.median * ms:.2f} |",
        *(
            [f"| gen 100 + the output as one 10 MB line, 8k | {result.one_line.median * ms:.2f} |"]
            if result.one_line is not None
            else []
        ),
        *(
            [f"| gen 100 + 10 MB of minified JSON, 8k | {result.minified.median * ms:.2f} |"]
            if result.minified is not None
            else []
        ),
        "",
        f"The huge output was {'left out' if result.excluded else '**included**'}.",
    ]
