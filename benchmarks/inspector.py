"""How long the build report takes to make and to open in headless Chromium.

``uv run python -m benchmarks.inspector`` builds each of the three real
trajectories and a generated 10,000-chunk history (gpt-4o, 8,000 tokens),
writes each report with ``result.to_html``, opens it in a fresh tab and
reads the page's own clock, from the start of the navigation: ``parsed`` is
when the page's script starts (the file is read and its HTML parsed),
``ready`` when it ends (data parsed, tables and the first rows drawn),
``painted`` the first frame after that. ``wall`` is the same
from outside (navigate command to the painted frame, polled every 10 ms).
Then, on the open page: a status filter (until the next frame) and a content
search over all chunks (including the page's 200 ms typing pause above 2,000
chunks).
Each number is the median of ``--repeat`` runs; the table is printed and
written to ``benchmarks/results/inspector.md``.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from benchmarks.workloads import generate, load_corpus, load_trajectories
from memctx import MemoryState, create_builder, create_tokenizer

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
from chromium import Chromium, Page, find_chromium  # the tests' client

RESULTS = Path(__file__).resolve().parent / "results" / "inspector.md"

_TIME_FILTER = """(async () => {
  const select = document.getElementById("filter-status");
  const started = performance.now();
  select.value = "over_budget";
  select.dispatchEvent(new Event("change"));
  await new Promise((r) => requestAnimationFrame(() => setTimeout(r, 0)));
  const took = performance.now() - started;
  select.value = "";
  select.dispatchEvent(new Event("change"));
  return took;
})()"""


def _measure(browser: Chromium, path: Path) -> dict[str, float]:
    page: Page = browser.open(path)
    found = {
        "parsed": float(page.evaluate("performance.getEntriesByName('memctx-start')[0].startTime")),
        "ready": float(page.evaluate("Number(document.body.dataset.ready)")),
        "painted": float(page.evaluate("Number(document.body.dataset.painted)")),
        "wall": page.wall_ms,
        "filter": float(page.evaluate(_TIME_FILTER)),
    }
    errors = page.errors()
    if errors:
        raise RuntimeError(f"{path.name}: console errors: {errors}")
    return found


def _search_ms(browser: Chromium, path: Path) -> float:
    """A search typed into a freshly opened page, until the list shows its result.

    Includes the page's pause for typing (200 ms above 2,000 chunks) and, the
    first time, lower-casing every chunk's content.
    """
    page = browser.open(path)
    took: float = page.evaluate(
        """(async () => {
          const search = document.getElementById("search");
          const shown = document.getElementById("shown-count");
          const done = new Promise((resolve) => new MutationObserver((_, observer) => {
            observer.disconnect();
            resolve(performance.now());
          }).observe(shown, {childList: true, characterData: true, subtree: true}));
          const started = performance.now();
          search.value = "error";
          search.dispatchEvent(new Event("input"));
          return (await done) - started;
        })()"""
    )
    return took


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--size", type=int, default=10_000)
    args = parser.parse_args(argv)
    executable = find_chromium()
    if executable is None:
        print("chromium is not installed (apt-get install chromium)", file=sys.stderr)
        return 1
    workloads: list[tuple[str, MemoryState]] = [(w.name, w.state) for w in load_trajectories()]
    workloads.append((f"generated {args.size:,}", generate(args.size, load_corpus())))
    tokenizer = create_tokenizer("gpt-4o")
    rows: list[dict[str, Any]] = []
    load_before = _load()
    browser = Chromium(executable)
    try:
        with tempfile.TemporaryDirectory() as tmp:
            for name, state in workloads:
                builder = create_builder(tokenizer)
                result = builder.build(state, max_tokens=8000)
                started = time.perf_counter()
                page = result.to_html(builder)
                to_html_ms = (time.perf_counter() - started) * 1000
                path = Path(tmp) / f"{len(rows)}.html"
                path.write_text(page, encoding="utf-8")
                runs = [_measure(browser, path) for _ in range(args.repeat)]
                row: dict[str, Any] = {
                    "name": name,
                    "chunks": len(state),
                    "mb": len(page.encode()) / 1e6,
                    "to_html": to_html_ms,
                }
                for key in ("parsed", "ready", "painted", "wall", "filter"):
                    row[key] = statistics.median(r[key] for r in runs)
                row["search"] = _search_ms(browser, path)
                rows.append(row)
                print(_line(row), flush=True)
    finally:
        browser.close()
    report = "\n".join(
        [
            "# Build report: open time in headless Chromium",
            "",
            f"`uv run python -m benchmarks.inspector` (median of {args.repeat}; "
            "gpt-4o, 8,000-token budget). Times in ms. Load average before and after: "
            f"{load_before} / {_load()} on {os.cpu_count()} CPUs.",
            "",
            "| workload | chunks | HTML MB | to_html | parsed | ready | painted | wall | filter "
            "| search |",
            "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
            *(_line(r) for r in rows),
            "",
        ]
    )
    RESULTS.write_text(report, encoding="utf-8")
    return 0


def _load() -> str:
    return " ".join(f"{x:.1f}" for x in os.getloadavg())


def _line(r: dict[str, Any]) -> str:
    return (
        f"| {r['name']} | {r['chunks']:,} | {r['mb']:.1f} | {r['to_html']:.0f} | "
        f"{r['parsed']:.0f} | {r['ready']:.0f} | {r['painted']:.0f} | {r['wall']:.0f} | "
        f"{r['filter']:.0f} | {r['search']:.0f} |"
    )


if __name__ == "__main__":
    raise SystemExit(main())
