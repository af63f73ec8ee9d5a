"""The build report in a real headless Chromium: its DOM after the page's script ran.

Skipped without Chromium, except under ``CI`` (see the ``chromium`` fixture).
Set ``MEMCTX_UPDATE_SCREENSHOT=1`` to rewrite ``docs/inspector.png``.
"""

from __future__ import annotations

import json
import os
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from chromium import Chromium, Page
from memctx import (
    Chunk,
    ContextBuilder,
    ContextBuildResult,
    MemoryState,
    TiktokenTokenizer,
    chunks,
    create_builder,
    load_state,
)
from memctx._render.prefix import shared_prefix_tokens
from strategies import adversarial_text, examples

ROOT = Path(__file__).parent.parent
EXAMPLE = ROOT / "examples" / "coding_agent.json"
SCREENSHOT = ROOT / "docs" / "inspector.png"

pytestmark = pytest.mark.slow

# Each would set the title or add an element if it ran, or navigate if followed.
PAYLOADS = (
    "<script>document.title='pwned'</script>",
    "<img src=x onerror=\"document.title='pwned';"
    "document.body.append(document.createElement('mark'))\">",
    "</textarea><script>document.title='pwned'</script><textarea>",
    '<a id="injected" href="javascript:document.title=\'pwned\'">click me</a>',
    "</script><script>document.title='pwned'</script>",
    "<svg onload=\"document.title='pwned'\"></svg>",
    "\u2028\u2029 line separators ]]> <!-- -->",
)
UNSAFE_ELEMENTS = "img, mark, svg, a, iframe, textarea, object, embed"


def open_report(
    chromium: Chromium,
    tmp_path: Path,
    result: ContextBuildResult,
    state: MemoryState,
    builder: ContextBuilder,
    height: int = 900,
    **options: Any,
) -> Page:
    path = tmp_path / f"report-{len(list(tmp_path.iterdir()))}.html"
    path.write_text(result.to_html(builder, **options), encoding="utf-8")
    return chromium.open(path, height=height)


def scrolled_rows(page: Page) -> list[dict[str, str]]:
    """Every row the list shows, collected by scrolling it from top to bottom."""
    rows: list[dict[str, str]] = page.evaluate(
        """(async () => {
          const viewport = document.getElementById("viewport");
          const seen = new Map();
          // The page draws rows in the frame after a scroll event: send one at once.
          const scrollTo = (top) => {
            viewport.scrollTop = top;
            viewport.dispatchEvent(new Event("scroll"));
            return new Promise((r) => requestAnimationFrame(() => r()));
          };
          await scrollTo(0);
          for (;;) {
            for (const row of document.querySelectorAll("#rows .row")) {
              seen.set(Number(row.dataset.pos), {id: row.dataset.id, status: row.dataset.status,
                type: row.querySelector(".c-type").textContent,
                msgStart: row.classList.contains("msg-start")});
            }
            const before = viewport.scrollTop;
            await scrollTo(before + viewport.clientHeight);
            if (viewport.scrollTop === before) break;
          }
          return [...seen.entries()].sort((a, b) => a[0] - b[0]).map((e) => e[1]);
        })()"""
    )
    return rows


def set_filter(page: Page, control: str, value: str) -> None:
    event = "input" if control == "search" else "change"
    page.evaluate(
        f"""(async () => {{
          const c = document.getElementById({json.dumps(control)});
          c.value = {json.dumps(value)};
          c.dispatchEvent(new Event({json.dumps(event)}));
          await new Promise((r) => setTimeout(r, 300));
        }})()"""
    )


def table(page: Page, table_id: str) -> dict[str, list[str]]:
    found: dict[str, list[str]] = page.evaluate(
        f"""Object.fromEntries([...document.querySelectorAll("#{table_id} tbody tr")].map(
              (tr) => [tr.dataset.key, [...tr.cells].slice(1).map((td) => td.textContent)]))"""
    )
    return found


def fmt(n: int) -> str:
    return f"{n:,}"


@pytest.fixture
def exact_builder(gpt4o: TiktokenTokenizer) -> ContextBuilder:
    return create_builder(gpt4o)


@pytest.fixture(scope="module")
def trajectory() -> MemoryState:
    from memctx.importers import load_openai_transcript

    path = ROOT / "examples" / "trajectories" / "astropy__astropy-12907.traj.json"
    state, _ = load_openai_transcript(json.loads(path.read_text(encoding="utf-8")))
    return state


class TestReportInBrowser:
    def test_every_chunk_has_one_row_in_state_order_with_its_status(
        self,
        chromium: Chromium,
        tmp_path: Path,
        trajectory: MemoryState,
        exact_builder: ContextBuilder,
    ) -> None:
        result = exact_builder.build(trajectory, max_tokens=6000)
        page = open_report(chromium, tmp_path, result, trajectory, exact_builder)

        rendered = page.evaluate("document.querySelectorAll('#rows .row').length")
        rows = scrolled_rows(page)

        assert rendered < len(trajectory)  # rows are made only where the list is scrolled to
        assert [r["id"] for r in rows] == [c.id for c in trajectory]
        reasons = {i: e.reason.value for i, e in result.exclusions.items()}
        assert [r["status"] for r in rows] == [reasons.get(c.id, "included") for c in trajectory]
        assert page.evaluate("document.getElementById('shown-count').dataset.shown") == str(
            len(trajectory)
        )
        assert page.errors() == []

    def test_totals_and_budget_match_the_result(
        self,
        chromium: Chromium,
        tmp_path: Path,
        trajectory: MemoryState,
        exact_builder: ContextBuilder,
    ) -> None:
        result = exact_builder.build(trajectory, max_tokens=6000, reserve_tokens=500)
        page = open_report(chromium, tmp_path, result, trajectory, exact_builder)

        by_status = table(page, "totals-status")
        included = result.included_chunk_ids
        assert by_status["included"][:2] == [
            fmt(len(included)),
            fmt(sum(result.chunk_tokens[i] for i in included)),
        ]
        reasons = Counter(e.reason.value for e in result.exclusions.values())
        for reason, count in reasons.items():
            assert by_status[reason][0] == fmt(count)
        assert set(by_status) == {"included", *reasons}
        by_type = table(page, "totals-type")
        types = Counter(c.type.value for c in trajectory)
        assert {t: cells[0] for t, cells in by_type.items()} == {
            t: fmt(n) for t, n in types.items()
        }
        budget = page.evaluate(
            """Object.fromEntries(["used", "free", "reserved"].map(
                 (k) => [k, document.getElementById("budget-" + k).dataset.tokens]))"""
        )
        assert budget == {
            "used": str(result.token_count),
            "free": str(6000 - 500 - result.token_count),
            "reserved": "500",
        }
        assert page.errors() == []

    def test_filters_by_reason_type_and_content(
        self,
        chromium: Chromium,
        tmp_path: Path,
        coding_state: MemoryState,
        exact_builder: ContextBuilder,
    ) -> None:
        result = exact_builder.build(coding_state, max_tokens=150, exclude_types=["DELEGATION"])
        page = open_report(chromium, tmp_path, result, coding_state, exact_builder)

        set_filter(page, "filter-status", "over_budget")
        assert [r["id"] for r in scrolled_rows(page)] == list(result.excluded_for("over_budget"))
        set_filter(page, "filter-status", "excluded")
        assert [r["id"] for r in scrolled_rows(page)] == list(result.excluded_chunk_ids)
        set_filter(page, "filter-status", "")
        set_filter(page, "filter-type", "WORKFLOW")
        assert [r["id"] for r in scrolled_rows(page)] == ["call1", "call2"]
        set_filter(page, "filter-type", "")
        set_filter(page, "search", "MAIN.TS")
        expected = [c.id for c in coding_state if "main.ts" in c.text.lower()]
        assert [r["id"] for r in scrolled_rows(page)] == expected
        assert page.evaluate("document.getElementById('shown-count').textContent") == (
            f"{len(expected)} of {len(coding_state)} chunks"
        )
        assert page.errors() == []

    def test_clicking_a_chunk_shows_its_exact_xml(
        self,
        chromium: Chromium,
        tmp_path: Path,
        coding_state: MemoryState,
        exact_builder: ContextBuilder,
    ) -> None:
        result = exact_builder.build(coding_state, max_tokens=150)
        page = open_report(chromium, tmp_path, result, coding_state, exact_builder)

        for chunk in coding_state:
            shown = page.evaluate(
                f"""(() => {{
                  document.querySelector('#rows .row[data-id={json.dumps(chunk.id)}]').click();
                  return document.getElementById("detail-xml").textContent;
                }})()"""
            )
            assert shown == exact_builder.render(chunk)[1]
        assert page.errors() == []

    def test_arrow_keys_move_the_selection(
        self,
        chromium: Chromium,
        tmp_path: Path,
        coding_state: MemoryState,
        exact_builder: ContextBuilder,
    ) -> None:
        result = exact_builder.build(coding_state)
        page = open_report(chromium, tmp_path, result, coding_state, exact_builder)
        x, y = page.evaluate(
            """(() => { const r = document.querySelector('#rows .row[data-pos="1"]')
                 .getBoundingClientRect(); return [r.x + 200, r.y + r.height / 2]; })()"""
        )
        for kind in ("mousePressed", "mouseReleased"):  # a real click focuses the list
            page.send(
                "Input.dispatchMouseEvent",
                {"type": kind, "x": x, "y": y, "button": "left", "clickCount": 1},
            )

        for key, code in (("ArrowDown", 40), ("ArrowDown", 40), ("ArrowUp", 38)):
            for kind in ("keyDown", "keyUp"):
                page.send(
                    "Input.dispatchKeyEvent",
                    {"type": kind, "key": key, "code": key, "windowsVirtualKeyCode": code},
                )
        shown = page.evaluate(
            """[document.querySelector("#detail dd[data-field='id']").textContent,
                document.querySelector("#rows .row.selected").dataset.id]"""
        )

        assert shown == [coding_state.chunks[2].id] * 2

    def test_units_and_message_boundaries_are_marked(
        self,
        chromium: Chromium,
        tmp_path: Path,
        coding_state: MemoryState,
        exact_builder: ContextBuilder,
    ) -> None:
        result = exact_builder.build(coding_state)
        page = open_report(chromium, tmp_path, result, coding_state, exact_builder)

        colours = page.evaluate(
            """Object.fromEntries([...document.querySelectorAll("#rows .row")].map((row) =>
                 [row.dataset.id, [...row.querySelectorAll(".dot")].map(
                    (d) => getComputedStyle(d).backgroundColor)]))"""
        )
        assert colours["call1"] == colours["res1"] != colours["call2"] == colours["res2"]
        assert colours["spawn"] == colours["sub_res"]
        assert len(colours["call1"]) == 1
        assert colours["think1"] == colours["task"] == []
        starts = [r["id"] for r in scrolled_rows(page) if r["msgStart"]]
        assert starts == [m.chunk_ids[0] for m in result.messages if m.chunk_ids]
        assert page.evaluate("document.querySelectorAll('#message-list li').length") == len(
            result.messages
        )

    def test_comparison_shows_what_entered_left_and_the_shared_prefix(
        self,
        chromium: Chromium,
        tmp_path: Path,
        coding_state: MemoryState,
        exact_builder: ContextBuilder,
        gpt4o: TiktokenTokenizer,
    ) -> None:
        before = exact_builder.build(coding_state, max_tokens=4000)
        after = exact_builder.build(coding_state, max_tokens=150)
        page = open_report(chromium, tmp_path, after, coding_state, exact_builder, previous=before)

        left = [i for i in before.included_chunk_ids if i not in after.included_chunk_ids]
        shown = page.evaluate(
            """({prefix: document.getElementById("compare-prefix").dataset.tokens,
                left: [...document.querySelectorAll("#left-ids button")].map((b) => b.textContent),
                entered: document.getElementById("entered-ids").dataset.count,
                hidden: document.getElementById("compare").hidden})"""
        )
        assert shown == {
            "prefix": str(shared_prefix_tokens(before.messages, after.messages, gpt4o)),
            "left": left,
            "entered": "0",
            "hidden": False,
        }
        set_filter(page, "filter-status", "change:left")
        assert [r["id"] for r in scrolled_rows(page)] == left
        assert page.errors() == []

    def test_screenshot_of_the_bundled_example(
        self, chromium: Chromium, tmp_path: Path, gpt4o: TiktokenTokenizer
    ) -> None:
        state = load_state(EXAMPLE)
        builder = create_builder(gpt4o)
        result = builder.build(state, max_tokens=800)
        previous = builder.build(state, max_tokens=600)
        page = open_report(
            chromium,
            tmp_path,
            result,
            state,
            builder,
            previous=previous,
            previous_label="the build at 600 tokens",
        )
        page.evaluate("document.querySelector('#rows .row[data-id=\"read_result\"]').click()")

        png = page.screenshot()

        assert png.startswith(b"\x89PNG\r\n\x1a\n")
        assert int.from_bytes(png[16:20], "big") == 1400
        assert page.errors() == []
        if os.environ.get("MEMCTX_UPDATE_SCREENSHOT"):
            SCREENSHOT.write_bytes(png)
        assert SCREENSHOT.read_bytes().startswith(b"\x89PNG")


class TestLongHistory:
    def test_every_one_of_hundreds_of_chunks_is_reachable_by_scrolling(
        self, chromium: Chromium, tmp_path: Path
    ) -> None:
        made: list[Chunk] = [chunks.system("rules", id="sys")]
        for n in range(300):
            made += [
                chunks.tool_call("bash", {"n": n}, call_id=f"c{n}", id=f"call{n}"),
                chunks.tool_result("bash", f"output {n}" * (n % 7), call_id=f"c{n}", id=f"res{n}"),
            ]
        state = MemoryState(made)
        builder = create_builder()
        result = builder.build(state, max_tokens=1500)
        page = open_report(chromium, tmp_path, result, state, builder, height=2000)

        assert page.evaluate("document.querySelectorAll('#rows .row').length") < 100
        rows = scrolled_rows(page)

        assert [r["id"] for r in rows] == [c.id for c in state]
        set_filter(page, "filter-status", "over_budget")
        assert [r["id"] for r in scrolled_rows(page)] == list(result.excluded_for("over_budget"))
        assert page.errors() == []


class TestEmptyReport:
    def test_a_state_without_chunks_opens_without_errors(
        self, chromium: Chromium, tmp_path: Path
    ) -> None:
        state = MemoryState([])
        builder = create_builder()
        result = builder.build(state, system_prompt="Be brief.")
        page = open_report(chromium, tmp_path, result, state, builder)

        shown = page.evaluate(
            """[document.getElementById("shown-count").textContent,
                document.querySelectorAll("#message-list li").length,
                document.querySelectorAll("#rows .row").length]"""
        )

        assert shown == ["0 of 0 chunks", 1, 0]
        assert page.errors() == []


class TestChromiumClient:
    def test_reports_console_errors_and_uncaught_exceptions(
        self, chromium: Chromium, tmp_path: Path
    ) -> None:
        path = tmp_path / "errors.html"
        path.write_text(
            "<!DOCTYPE html><body data-painted=1><script>"
            "console.error('boom'); null.x;</script></body>"
        )

        errors = chromium.open(path).errors()

        assert len(errors) == 2
        assert "boom" in errors[0]
        assert "TypeError" in errors[1]


class TestUntrustedContent:
    def test_payloads_do_not_run_and_show_as_text(
        self, chromium: Chromium, tmp_path: Path, exact_builder: ContextBuilder
    ) -> None:
        made = []
        for n, payload in enumerate(PAYLOADS):
            made += [
                chunks.user(payload, id=f"user{n}"),
                chunks.tool_call(payload, {"q": payload}, call_id=payload, id=f"call{n}{payload}"),
                chunks.tool_result(payload, payload, call_id=payload, id=f"res{n}"),
            ]
        state = MemoryState(made, thread_id=PAYLOADS[0])
        result = exact_builder.build(state, max_tokens=900)
        earlier = exact_builder.build(state, max_tokens=600)
        page = open_report(chromium, tmp_path, result, state, exact_builder, previous=earlier)

        shown = page.evaluate(
            f"""(() => {{
              const out = {{}};
              const count = document.querySelectorAll("#rows .row").length;
              for (let pos = 0; pos < count; pos++) {{
                const row = document.querySelector(`#rows .row[data-pos="${{pos}}"]`);
                row.click();  // re-renders the rows: find each one afresh
                out[row.dataset.id] = [row.querySelector(".c-id").textContent,
                  document.getElementById("detail-content").textContent,
                  document.getElementById("detail-xml").textContent];
              }}
              for (const b of document.querySelectorAll("button")) b.click();
              return {{rows: out, title: document.title,
                unsafe: document.querySelectorAll({json.dumps(UNSAFE_ELEMENTS)}).length,
                injected: !!document.getElementById("injected"),
                scripts: document.scripts.length}};
            }})()"""
        )

        assert shown["title"] == "memctx build report: " + PAYLOADS[0]
        assert shown["unsafe"] == 0
        assert shown["injected"] is False
        assert shown["scripts"] == 2
        assert shown["rows"] == {c.id: [c.id, c.text, exact_builder.render(c)[1]] for c in state}
        assert page.evaluate("location.protocol") == "file:"
        assert page.errors() == []

    @settings(
        max_examples=examples(6),
        deadline=None,
        suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
    )
    @given(
        st.lists(
            st.tuples(
                adversarial_text(min_size=1, max_pieces=4).filter(lambda s: s.strip() != ""),
                st.one_of(st.sampled_from(PAYLOADS), adversarial_text()).flatmap(
                    lambda p: adversarial_text(max_pieces=3).map(lambda t: t + p)
                ),
            ),
            min_size=1,
            max_size=6,
            unique_by=lambda pair: pair[0],
        )
    )
    def test_the_dom_holds_each_content_and_its_xml_exactly_as_text(
        self, chromium: Chromium, tmp_path: Path, pairs: list[tuple[str, str]]
    ) -> None:
        state = MemoryState([chunks.tool_result("t", text, id=cid) for cid, text in pairs])
        builder = create_builder()
        result = builder.build(state)
        page = open_report(chromium, tmp_path, result, state, builder)

        code_points = page.evaluate(
            """(() => {
              const points = (s) => Array.from(s, (c) => c.codePointAt(0));
              const count = document.querySelectorAll("#rows .row").length;
              return Array.from({length: count}, (_, pos) => {
                const row = document.querySelector(`#rows .row[data-pos="${pos}"]`);
                row.click();
                const content = document.getElementById("detail-content");
                const xml = document.getElementById("detail-xml").textContent;
                return [points(row.dataset.id), points(row.querySelector(".c-id").textContent),
                        points(content.textContent), content.childElementCount, points(xml)];
              });
            })()"""
        )

        assert code_points == [
            [
                list(map(ord, c.id)),
                list(map(ord, c.id)),
                list(map(ord, c.text)),
                0,
                list(map(ord, builder.render(c)[1])),
            ]
            for c in state
        ]
        assert page.evaluate("document.title") == "memctx build report"
        assert page.errors() == []
