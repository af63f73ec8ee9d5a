"""DeclaredRenderer: renderers made of a chunk type and a table of elements."""

from __future__ import annotations

import pytest

from memctx import (
    ChunkType,
    DeclaredRenderer,
    Element,
    MemoryState,
    chunks,
    create_builder,
    create_tokenizer,
    renderer_cache_key,
)
from memctx.xml import parse_element


class ReviewRenderer(DeclaredRenderer):
    chunk_type = ChunkType.CUSTOM
    key_fields = ("subtype",)
    elements = {  # noqa: RUF012
        "review": Element("code_review", "user", ("id", "subtype", "status", "error?")),
    }


class TestDeclaredRenderer:
    def test_claims_only_chunks_of_its_type_whose_key_has_a_row(self) -> None:
        renderer = ReviewRenderer()

        assert renderer.can_render(chunks.custom("review", "looks good"))
        assert not renderer.can_render(chunks.custom("other", "x"))
        assert not renderer.can_render(chunks.user("review"))

    def test_renders_the_declared_tag_role_and_attributes_in_order(self) -> None:
        chunk = chunks.custom("review", "a < b", id="r1")
        renderer = ReviewRenderer()

        xml = renderer.render(chunk)

        assert renderer.get_role(chunk) == "user"
        assert xml.startswith('<code_review id="r1" subtype="review">')
        assert parse_element(xml) == ("code_review", {"id": "r1", "subtype": "review"}, "a < b")

    def test_a_flag_attribute_is_written_true_or_left_out(self) -> None:
        error = chunks.tool_error("sh", "boom", call_id="c1", id="e")
        fine = chunks.tool_result("sh", "ok", call_id="c1", id="f")
        builder = create_builder()

        assert 'error="true"' in builder.render(error)[1]
        assert "error=" not in builder.render(fine)[1]
        assert 'success="false"' in builder.render(error)[1]

    def test_a_declared_renderer_registered_by_a_user_wins_over_the_fallback(self) -> None:
        builder = create_builder(renderers=[ReviewRenderer()])
        state = MemoryState([chunks.custom("review", "ok", id="r")])

        result = builder.build(state)

        assert result.messages[0].content.startswith('<code_review id="r"')

    def test_every_built_in_renderer_is_declared(self) -> None:
        renderers = create_builder().registry.renderers
        builtins = [r for r in renderers if type(r).__module__.startswith("memctx_renderers")]

        assert len(builtins) == 7
        assert all(isinstance(r, DeclaredRenderer) for r in builtins)


class TestRendererCacheKeys:
    def test_a_declared_renderers_key_includes_its_declaration(self) -> None:
        class Other(ReviewRenderer):
            elements = {"review": Element("review", "assistant")}  # noqa: RUF012

        assert renderer_cache_key(ReviewRenderer()) == renderer_cache_key(ReviewRenderer())
        assert renderer_cache_key(Other()) != renderer_cache_key(ReviewRenderer())

    def test_two_differently_configured_instances_never_share_cached_counts(self) -> None:
        class Tagged:
            def __init__(self, tag: str) -> None:
                self.tag = tag

            def can_render(self, chunk: object) -> bool:
                return True

            def get_role(self, chunk: object) -> str:
                return "user"

            def render(self, chunk: chunks.Chunk) -> str:  # type: ignore[name-defined]
                from memctx.xml import render_element

                return render_element(self.tag, [("id", chunk.id)], chunk.text)

        short, long = Tagged("a"), Tagged("a_much_longer_tag_name")
        assert renderer_cache_key(short) != renderer_cache_key(long)
        tokenizer = create_tokenizer("gpt-4o")
        state = MemoryState([chunks.user("hello", id="u")])

        first = create_builder(tokenizer, renderers=[short]).build(state)
        second = create_builder(tokenizer, renderers=[long]).build(state)

        assert first.token_count < second.token_count
        assert second.token_count == tokenizer.count_messages(second.messages)

    @pytest.mark.parametrize("value", [1, "x", None, 2.5, True])
    def test_plain_attributes_make_a_stable_key(self, value: object) -> None:
        class Configured:
            def __init__(self) -> None:
                self.setting = value

        assert renderer_cache_key(Configured()) == renderer_cache_key(Configured())  # type: ignore[arg-type]
