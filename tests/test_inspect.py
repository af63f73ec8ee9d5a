"""The build report's data and HTML, without a browser (see test_inspect_browser.py)."""

from __future__ import annotations

import base64
import hashlib
import json
import re
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from histories import agent_histories, build_options
from memctx import (
    BudgetExceededError,
    ContextBuilder,
    InspectError,
    MemoryState,
    TiktokenTokenizer,
    chunks,
    create_builder,
)
from memctx._render.prefix import shared_prefix_tokens
from memctx.inspect._data import report_data, row_xml, unit_key
from memctx.inspect._page import embed_json
from strategies import examples, texts


def page_data(page: str) -> dict[str, Any]:
    found = re.search(r'<script type="application/json" id="memctx-data">(.*?)</script>', page)
    assert found is not None
    data: dict[str, Any] = json.loads(found.group(1))
    return data


@pytest.fixture
def exact_builder(gpt4o: TiktokenTokenizer) -> ContextBuilder:
    return create_builder(gpt4o)


class TestReportData:
    def test_has_one_row_per_chunk_in_state_order_with_its_status(
        self, coding_state: MemoryState, exact_builder: ContextBuilder
    ) -> None:
        result = exact_builder.build(coding_state, max_tokens=150)
        data = report_data(result, coding_state, exact_builder, title="t")

        assert [row["id"] for row in data["chunks"]] == [c.id for c in coding_state]
        for row in data["chunks"]:
            if row["id"] in result.included_chunk_ids:
                assert row["status"] == "included"
                assert row["tokens"] == result.chunk_tokens[row["id"]]
            else:
                assert row["status"] == result.exclusions[row["id"]].reason.value

    def test_row_xml_is_the_chunk_as_rendered_and_sent(
        self, coding_state: MemoryState, exact_builder: ContextBuilder
    ) -> None:
        result = exact_builder.build(coding_state, max_tokens=4000)
        data = report_data(result, coding_state, exact_builder, title="t")

        for row, chunk in zip(data["chunks"], coding_state, strict=True):
            role, xml = exact_builder.render(chunk)
            assert (row["role"], row_xml(row), row["content"]) == (role, xml, chunk.text)
            message = result.messages[row["message"]]
            assert chunk.id in message.chunk_ids
            assert xml in message.content

    def test_a_call_and_its_result_form_one_unit(
        self, coding_state: MemoryState, exact_builder: ContextBuilder
    ) -> None:
        result = exact_builder.build(coding_state)
        data = report_data(result, coding_state, exact_builder, title="t")
        ids = [c.id for c in coding_state]

        members = {(u["kind"], u["key"]): [ids[p] for p in u["members"]] for u in data["units"]}
        assert members == {
            ("call", "c1"): ["call1", "res1"],
            ("subagent", "r1"): ["spawn", "sub_res"],
            ("call", "c2"): ["call2", "res2"],
        }
        rows = {row["id"]: row for row in data["chunks"]}
        assert rows["call1"]["unit"] == rows["res1"]["unit"] != rows["call2"]["unit"]
        assert rows["think1"]["unit"] is None

    def test_totals_per_type_and_status_add_up_to_the_result(
        self, coding_state: MemoryState, exact_builder: ContextBuilder
    ) -> None:
        result = exact_builder.build(coding_state, max_tokens=150, exclude_types=["DELEGATION"])
        totals = report_data(result, coding_state, exact_builder, title="t")["totals"]

        assert totals["by_status"]["included"] == {
            "chunks": len(result.included_chunk_ids),
            "tokens": sum(result.chunk_tokens[i] for i in result.included_chunk_ids),
            "unmeasured": 0,
        }
        assert totals["by_status"]["exclude_types"]["chunks"] == 2
        over = result.excluded_for("over_budget")
        assert totals["by_status"]["over_budget"]["chunks"] == len(over)
        assert sum(t["chunks"] for t in totals["by_type"].values()) == len(coding_state)
        assert totals["by_type"]["DELEGATION"] == {
            "chunks": 2,
            "included": 0,
            "excluded": 2,
            "tokens": 0,
        }

    def test_comparison_lists_what_entered_and_left_and_the_shared_prefix(
        self, coding_state: MemoryState, exact_builder: ContextBuilder, gpt4o: TiktokenTokenizer
    ) -> None:
        before = exact_builder.build(coding_state, max_tokens=4000)
        after = exact_builder.build(coding_state, max_tokens=150)
        data = report_data(after, coding_state, exact_builder, title="t", previous=before)
        compare = data["compare"]
        ids = [c.id for c in coding_state]

        left = set(before.included_chunk_ids) - set(after.included_chunk_ids)
        assert left
        assert [ids[p] for p in compare["left"]] == [i for i in ids if i in left]
        assert compare["entered"] == []
        assert compare["shared_prefix_tokens"] == shared_prefix_tokens(
            before.messages, after.messages, gpt4o
        )
        assert {row["id"] for row in data["chunks"] if row["change"] == "left"} == left

    def test_a_chunk_that_left_the_state_is_named_from_the_previous_state(
        self, coding_state: MemoryState, exact_builder: ContextBuilder
    ) -> None:
        before = exact_builder.build(coding_state)
        later = MemoryState(list(coding_state)[2:], thread_id=coding_state.thread_id)
        after = exact_builder.build(later)
        data = report_data(after, later, exact_builder, title="t", previous=before)

        gone = data["compare"]["left_elsewhere"]
        assert [(g["id"], g["type"]) for g in gone] == [("sys", "SYSTEM"), ("task", "AGENT")]

    @pytest.mark.parametrize(
        ("arguments", "message"),
        [
            ({"builder": 5}, "builder: must be a ContextBuilder"),
            ({"previous": 5}, "previous: must be a build result"),
            ({"title": 5}, "title: must be text"),
            ({"previous_label": 5}, "previous_label: must be text"),
            ({"tokenizer": "gpt-4o"}, "tokenizer: must be a Tokenizer"),
        ],
    )
    def test_an_argument_of_the_wrong_kind_is_an_inspect_error(
        self,
        coding_state: MemoryState,
        exact_builder: ContextBuilder,
        arguments: dict[str, Any],
        message: str,
    ) -> None:
        result = exact_builder.build(coding_state)
        given: dict[str, Any] = {"builder": exact_builder, **arguments}

        with pytest.raises(InspectError, match=message):
            result.to_html(**given)

    def test_a_result_of_another_state_is_refused(
        self, coding_state: MemoryState, exact_builder: ContextBuilder
    ) -> None:
        result = exact_builder.build(coding_state)
        other = MemoryState([chunks.user("hi", id="x")])

        with pytest.raises(InspectError, match="not built from this state"):
            report_data(result, other, exact_builder, title="t")

    def test_comparing_with_another_tokenizer_is_refused(
        self, coding_state: MemoryState, exact_builder: ContextBuilder
    ) -> None:
        result = exact_builder.build(coding_state)

        with pytest.raises(InspectError, match="pass that tokenizer"):
            report_data(result, coding_state, create_builder(), title="t", previous=result)


class TestReportDataProperties:
    @settings(max_examples=examples(150), deadline=None)
    @given(st.data())
    def test_rows_statuses_units_and_totals_agree_with_any_build(self, data: st.DataObject) -> None:
        state = data.draw(agent_histories())
        options = data.draw(build_options(state))
        builder = create_builder()
        try:
            result = builder.build(state, **options)
        except BudgetExceededError:
            return
        report = report_data(result, state, builder, title="t")
        rows = report["chunks"]

        assert [r["id"] for r in rows] == list(state.ids)
        assert [r["id"] for r in rows if r["status"] == "included"] == list(
            result.included_chunk_ids
        )
        for row in rows:
            if row["status"] != "included":
                assert row["status"] == result.exclusions[row["id"]].reason.value
        for unit in report["units"]:
            keys = {unit_key(state.chunks[p]) for p in unit["members"]}
            assert keys == {(unit["kind"], unit["key"])}
        in_units = sorted(p for u in report["units"] for p in u["members"])
        assert in_units == [p for p, c in enumerate(state) if unit_key(c) is not None]
        by_status = report["totals"]["by_status"]
        assert sum(t["chunks"] for t in by_status.values()) == len(state)
        assert by_status.get("included", {"tokens": 0})["tokens"] == sum(
            result.chunk_tokens[i] for i in result.included_chunk_ids
        )
        for n, message in enumerate(report["messages"]):
            assert [rows[p]["id"] for p in message["chunks"]] == list(result.messages[n].chunk_ids)


class TestXmlFields:
    def test_the_xml_of_a_built_in_chunk_is_stored_around_its_content(
        self, coding_state: MemoryState, exact_builder: ContextBuilder
    ) -> None:
        result = exact_builder.build(coding_state)
        rows = report_data(result, coding_state, exact_builder, title="t")["chunks"]

        assert all("xml" not in row for row in rows)
        assert rows[0]["xml_head"] == '<system_context id="sys" priority="1000">\n'
        assert rows[0]["xml_tail"] == "\n</system_context>"

    def test_xml_that_does_not_hold_the_content_is_stored_whole(
        self, exact_builder: ContextBuilder
    ) -> None:
        state = MemoryState([chunks.user("bad \x00 byte", id="u")])
        result = exact_builder.build(state)
        row = report_data(result, state, exact_builder, title="t")["chunks"][0]

        assert row["xml"] == exact_builder.render(state.chunks[0])[1]
        assert "\ufffd" in row["xml"]


class TestPage:
    def test_to_html_embeds_the_report_data(
        self, coding_state: MemoryState, exact_builder: ContextBuilder
    ) -> None:
        result = exact_builder.build(coding_state, max_tokens=150)
        page = result.to_html(exact_builder)

        assert page.startswith("<!DOCTYPE html>")
        data = page_data(page)
        assert data == json.loads(
            json.dumps(report_data(result, coding_state, exact_builder, title=data["title"]))
        )
        assert data["title"] == "memctx build report: t-coding"

    def test_loads_nothing_from_the_network(
        self, coding_state: MemoryState, exact_builder: ContextBuilder
    ) -> None:
        page = exact_builder.build(coding_state).to_html(exact_builder)

        assert not re.search(r"\b(src|href)\s*=", page)
        assert "@import" not in page
        assert "url(" not in page
        assert "default-src 'none'" in page

    def test_csp_allows_exactly_the_page_script_and_style(
        self, coding_state: MemoryState, exact_builder: ContextBuilder
    ) -> None:
        page = exact_builder.build(coding_state).to_html(exact_builder)
        script = re.findall(r"<script>(.*?)</script>", page, re.S)
        style = re.findall(r"<style>(.*?)</style>", page, re.S)

        def digest(text: str) -> str:
            return base64.b64encode(hashlib.sha256(text.encode()).digest()).decode()

        assert len(script) == len(style) == 1
        assert f"script-src 'sha256-{digest(script[0])}'" in page
        assert f"style-src 'sha256-{digest(style[0])}'" in page

    def test_the_title_is_escaped(self, exact_builder: ContextBuilder) -> None:
        state = MemoryState([chunks.user("x", id="a")], thread_id="</title><script>x()</script>")
        page = exact_builder.build(state).to_html(exact_builder)

        assert "<title>memctx build report: &lt;/title&gt;&lt;script&gt;" in page
        assert "<script>x()" not in page


class TestEmbedJson:
    @settings(max_examples=examples(300))
    @given(texts)
    def test_no_text_can_end_the_script_block_and_it_reads_back_exactly(self, text: str) -> None:
        embedded = embed_json({"content": text, "payload": "</script><!--" + text})

        assert not set(embedded) & {"<", ">", "&", "\u2028", "\u2029"}
        assert embedded.isascii()
        assert json.loads(embedded) == {"content": text, "payload": "</script><!--" + text}
