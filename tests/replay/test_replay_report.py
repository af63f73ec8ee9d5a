"""ReplayReport: its totals, its JSON, its summary and its self-contained HTML page."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest
from replay_runs import BlockPolicy, agent_run

from memctx.replay import ReplayReport, RequestCost, render_reports, replay


def embedded(page: str) -> dict[str, Any]:
    found = re.search(
        r'<script type="application/json" id="memctx-replay-data">(.*?)</script>', page
    )
    assert found is not None
    data: dict[str, Any] = json.loads(found.group(1))
    return data


def cost(index: int, read: int, write: int, uncached: int, **extra: Any) -> RequestCost:
    total = read + write + uncached
    return RequestCost(
        index=index,
        input_tokens=total,
        cache_read_tokens=read,
        cache_write_tokens=write,
        uncached_tokens=uncached,
        cost=(0.1 * read + 1.25 * write + uncached) / 1e6,
        cost_without_cache=total / 1e6,
        **extra,
    )


@pytest.fixture
def report() -> ReplayReport:
    return ReplayReport(
        (
            cost(0, 0, 2000, 3),
            cost(1, 2000, 500, 3, events=("clearing",)),
            cost(2, 0, 2400, 3, events=("compaction", "clearing"), cache_break=True),
            cost(3, 2400, 100, 3, budget_violation=True, orphaned_tool_calls=2),
        ),
        model="claude-sonnet-4-6",
        label="policy",
        budget=2_500,
    )


class TestTotals:
    def test_are_the_sums_of_the_requests(self, report: ReplayReport) -> None:
        assert report.totals() == {
            "request_count": 4,
            "input_tokens": 9412,
            "cache_read_tokens": 4400,
            "cache_write_tokens": 5000,
            "uncached_tokens": 12,
            "cache_read_share": 4400 / 9412,
            "cost": pytest.approx((440 + 6250 + 12) / 1e6),
            "cost_without_cache": pytest.approx(9412 / 1e6),
            "cost_ratio": pytest.approx((440 + 6250 + 12) / 9412),
            "cache_breaks": 1,
            "compactions": 1,
            "clearings": 2,
            "peak_tokens": 2503,
            "budget_violations": 1,
            "orphaned_tool_calls": 2,
        }

    def test_a_report_is_a_value(self, report: ReplayReport) -> None:
        again = ReplayReport(
            list(report.requests), model=report.model, label=report.label, budget=report.budget
        )

        assert again == report
        assert hash(again) == hash(report)


class TestToDict:
    def test_is_json_ready_and_holds_every_request(self, report: ReplayReport) -> None:
        data = json.loads(json.dumps(report.to_dict()))

        assert data["model"] == "claude-sonnet-4-6"
        assert data["label"] == "policy"
        assert data["budget"] == 2_500
        assert data["request_count"] == 4
        assert [r["events"] for r in data["requests"]] == [
            [],
            ["clearing"],
            ["compaction", "clearing"],
            [],
        ]

    def test_a_replayed_runs_requests_carry_their_time(self) -> None:
        data = replay(agent_run(2), "none", model="gpt-4o").to_dict()

        assert data["requests"][0]["at"] == "2026-03-01T09:00:10+00:00"


class TestSummary:
    def test_names_the_run_the_cache_the_cost_and_what_went_wrong(
        self, report: ReplayReport
    ) -> None:
        text = report.summary()

        assert "policy on claude-sonnet-4-6 (2,500 tokens): 4 requests" in text
        assert "46.7% read" in text
        assert "1 cache breaks" in text
        assert "1 compactions, 2 clearings; 1 over budget, 2 orphaned tool calls" in text


class TestHtml:
    def test_embeds_the_report_as_inert_json(self, report: ReplayReport) -> None:
        page = report.to_html()

        assert embedded(page)["reports"] == [json.loads(json.dumps(report.to_dict()))]
        assert page == report._repr_html_()

    def test_forbids_every_network_request(self, report: ReplayReport) -> None:
        page = report.to_html()

        assert "default-src 'none'" in page
        assert not re.search(r"""(src|href)=["']?https?:""", page)

    def test_a_label_holding_markup_cannot_end_the_data_block(self) -> None:
        label = "</script><script>document.title='pwned'</script>"
        page = ReplayReport((), model="gpt-4o", label=label).to_html()

        assert page.count("</script>") == 2
        assert embedded(page)["reports"][0]["label"] == label

    def test_several_reports_share_one_page(self) -> None:
        run = agent_run(4)
        reports = [replay(run, s, model="gpt-4o", max_tokens=1_000) for s in ("recent", "stable")]

        page = render_reports(reports, title="two")

        assert [r["label"] for r in embedded(page)["reports"]] == ["recent", "stable"]
        assert "<title>two</title>" in page

    def test_a_policys_events_reach_the_page(self) -> None:
        report = replay(agent_run(10), BlockPolicy())

        requests = embedded(report.to_html())["reports"][0]["requests"]

        assert sum("compaction" in r["events"] for r in requests) == report.compactions == 2
