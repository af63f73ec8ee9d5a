"""The replay report in a real headless Chromium: the DOM its script draws.

Skipped without Chromium, except under ``CI`` (see the ``chromium`` fixture).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import attrs
import pytest
from replay_runs import BlockPolicy, agent_run

from chromium import Chromium, Page
from memctx.replay import ReplayReport, load_run, render_reports, replay

ROOT = Path(__file__).resolve().parents[2]
TRAJECTORIES = sorted((ROOT / "examples" / "trajectories").glob("*.traj.json"))

pytestmark = pytest.mark.slow


def open_page(chromium: Chromium, tmp_path: Path, page: str) -> Page:
    path = tmp_path / f"replay-{len(list(tmp_path.iterdir()))}.html"
    path.write_text(page, encoding="utf-8")
    return chromium.open(path)


def bars(page: Page) -> list[dict[str, Any]]:
    found: list[dict[str, Any]] = page.evaluate(
        """[...document.querySelectorAll(".report .bar")].map((bar) => ({
             index: Number(bar.dataset.index),
             height: bar.getBoundingClientRect().height,
             segments: Object.fromEntries([...bar.querySelectorAll(".seg")].map((s) => [
               s.classList[1], {tokens: Number(s.dataset.tokens),
                                height: s.getBoundingClientRect().height}])),
             events: [...bar.querySelectorAll(".marker")].map((m) => m.classList[1]),
           }))"""
    )
    return found


@pytest.fixture(scope="module")
def policy_report() -> ReplayReport:
    """Twelve requests with two compactions, four clearings and the breaks they cause."""
    return replay(agent_run(12), BlockPolicy())


class TestBars:
    def test_each_request_is_a_bar_of_read_written_and_uncached_tokens(
        self, chromium: Chromium, tmp_path: Path, policy_report: ReplayReport
    ) -> None:
        page = open_page(chromium, tmp_path, policy_report.to_html())

        drawn = bars(page)

        assert [b["index"] for b in drawn] == list(range(len(policy_report.requests)))
        for bar, request in zip(drawn, policy_report.requests, strict=True):
            segments = bar["segments"]
            assert {k: s["tokens"] for k, s in segments.items()} == {
                "read": request.cache_read_tokens,
                "written": request.cache_write_tokens,
                "uncached": request.uncached_tokens,
            }
        assert page.errors() == []

    def test_a_bars_height_follows_its_tokens(
        self, chromium: Chromium, tmp_path: Path, policy_report: ReplayReport
    ) -> None:
        page = open_page(chromium, tmp_path, policy_report.to_html())
        plot = page.evaluate("document.querySelector('.plot').getBoundingClientRect().height")

        drawn = bars(page)

        top = max(policy_report.peak_tokens, policy_report.budget or 0)
        for bar, request in zip(drawn, policy_report.requests, strict=True):
            filled = sum(s["height"] for s in bar["segments"].values())
            assert filled == pytest.approx(plot * request.input_tokens / top, abs=1.5)

    def test_clearings_compactions_and_cache_breaks_are_marked_on_their_bars(
        self, chromium: Chromium, tmp_path: Path, policy_report: ReplayReport
    ) -> None:
        page = open_page(chromium, tmp_path, policy_report.to_html())

        drawn = bars(page)

        for bar, request in zip(drawn, policy_report.requests, strict=True):
            expected = [*request.events, *(["break"] if request.cache_break else [])]
            assert bar["events"] == expected
        counted = page.evaluate(
            """["compaction", "clearing", "break"].map(
                 (k) => document.querySelectorAll(".report .bar .marker." + k).length)"""
        )
        assert counted == [
            policy_report.compactions,
            policy_report.clearings,
            policy_report.cache_breaks,
        ]
        assert min(policy_report.compactions, policy_report.clearings) > 0
        assert policy_report.cache_breaks > 0

    def test_the_totals_are_shown(
        self, chromium: Chromium, tmp_path: Path, policy_report: ReplayReport
    ) -> None:
        page = open_page(chromium, tmp_path, policy_report.to_html())

        shown = page.evaluate(
            """Object.fromEntries([...document.querySelectorAll(".totals div")].map(
                 (d) => [d.dataset.key, d.querySelector("dd").textContent]))"""
        )

        assert shown["requests"] == str(len(policy_report.requests))
        assert shown["input tokens"] == f"{policy_report.input_tokens:,}"
        assert shown["compactions"] == "2"
        assert shown["cache breaks"] == str(policy_report.cache_breaks)

    def test_the_budget_is_a_line_across_the_chart(
        self, chromium: Chromium, tmp_path: Path, policy_report: ReplayReport
    ) -> None:
        page = open_page(chromium, tmp_path, policy_report.to_html())

        label = page.evaluate("document.querySelector('.budget-line').textContent")

        assert label == f"budget {policy_report.budget:,}"


class TestPage:
    def test_the_bundled_runs_compared_draw_a_chart_each_without_errors(
        self, chromium: Chromium, tmp_path: Path
    ) -> None:
        run = load_run(*TRAJECTORIES)
        reports = [
            replay(run, s, model="claude-sonnet-4-6", max_tokens=8_000)
            for s in ("recent", "stable", "none")
        ]

        page = open_page(chromium, tmp_path, render_reports(reports))

        counts = page.evaluate(
            """[...document.querySelectorAll(".report")].map(
                 (r) => [r.dataset.label, r.querySelectorAll(".bar").length])"""
        )
        assert counts == [["recent", 133], ["stable", 133], ["none", 133]]
        assert page.errors() == []

    def test_markup_in_a_label_or_event_stays_text(
        self, chromium: Chromium, tmp_path: Path
    ) -> None:
        payload = "<img src=x onerror=\"document.title='pwned'\"></script><script>x()</script>"
        base = replay(agent_run(3), "none", model="gpt-4o")
        report = ReplayReport(
            tuple(attrs.evolve(r, events=(payload,)) for r in base.requests),
            model="gpt-4o",
            label=payload,
        )

        page = open_page(chromium, tmp_path, report.to_html())

        assert page.evaluate("document.title").startswith("memctx replay")
        assert page.evaluate("document.querySelectorAll('img').length") == 0
        assert page.evaluate("document.querySelectorAll('script').length") == 2
        assert page.evaluate("document.querySelector('.report h2').textContent").startswith(payload)
        assert page.errors() == []
