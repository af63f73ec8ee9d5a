"""RendererRegistry: which renderer renders a chunk, and what it may return."""

from __future__ import annotations

from typing import Any, ClassVar

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import memctx
from memctx import (
    Chunk,
    ChunkRenderer,
    ChunkType,
    DeclaredRenderer,
    Element,
    GenericRenderer,
    MemoryState,
    RendererError,
    RendererRegistry,
    Role,
    chunks,
)
from memctx.xml import parse_element, render_element
from strategies import examples


class Claiming:
    """A renderer that claims chunks of ``types`` and renders them as ``<tag>``."""

    def __init__(
        self, tag: str, *types: ChunkType, role: Role = "user", claim_all: bool = False
    ) -> None:
        self.tag = tag
        self.types = types
        self.role = role
        self.claim_all = claim_all

    def can_render(self, chunk: Chunk) -> bool:
        return self.claim_all or chunk.type in self.types

    def get_role(self, chunk: Chunk) -> Role:
        return self.role

    def render(self, chunk: Chunk) -> str:
        return render_element(self.tag, [("id", chunk.id)], chunk.text)

    def __repr__(self) -> str:
        return f"Claiming({self.tag!r})"


class Misbehaving:
    """A renderer that claims everything and returns ``role`` and ``output`` as given."""

    def __init__(self, role: Any = "user", output: Any = "<x>\n\n</x>") -> None:
        self.role = role
        self.output = output

    def can_render(self, chunk: Chunk) -> bool:
        return True

    def get_role(self, chunk: Chunk) -> Any:
        return self.role

    def render(self, chunk: Chunk) -> Any:
        if isinstance(self.output, BaseException):
            raise self.output
        return self.output


def tag_of(registry: RendererRegistry, chunk: Chunk) -> str:
    return parse_element(registry.render(chunk)[1])[0]


USER = chunks.user("hello", id="u1")
SYSTEM = chunks.system("be brief", id="s1")
TOOL = chunks.tool_call("read_file", {"path": "/a"}, "call_1", id="t1")


class TestResolutionOrder:
    def test_user_renderers_newest_first_then_plugins_then_the_fallback(self) -> None:
        plugin_a, plugin_b = Claiming("pa"), Claiming("pb")
        first, second = Claiming("first"), Claiming("second")
        registry = RendererRegistry([plugin_a, plugin_b])

        registry.register(first)
        registry.register(second)

        chain = registry.renderers
        assert chain[:4] == (second, first, plugin_a, plugin_b)
        assert isinstance(chain[-1], GenericRenderer)
        assert len(chain) == 5

    def test_the_newest_registered_renderer_wins(self) -> None:
        registry = RendererRegistry([])
        registry.register(Claiming("older", ChunkType.AGENT))
        registry.register(Claiming("newer", ChunkType.AGENT))

        assert tag_of(registry, USER) == "newer"

    def test_a_registered_renderer_comes_before_the_plugins(self) -> None:
        registry = RendererRegistry([Claiming("plugin", ChunkType.AGENT)])
        registry.register(Claiming("mine", ChunkType.AGENT))

        assert tag_of(registry, USER) == "mine"

    def test_the_first_plugin_that_claims_wins(self) -> None:
        registry = RendererRegistry(
            [Claiming("first", ChunkType.AGENT), Claiming("second", ChunkType.AGENT)]
        )

        assert tag_of(registry, USER) == "first"

    def test_a_renderer_that_declines_passes_the_chunk_on(self) -> None:
        registry = RendererRegistry([Claiming("plugin", ChunkType.AGENT)])
        registry.register(Claiming("mine", ChunkType.SYSTEM))

        assert (tag_of(registry, USER), tag_of(registry, SYSTEM)) == ("plugin", "mine")

    def test_resolve_returns_the_renderer(self) -> None:
        mine = Claiming("mine", ChunkType.AGENT)
        registry = RendererRegistry([])
        registry.register(mine)

        assert registry.resolve(USER) is mine
        assert isinstance(registry.resolve(SYSTEM), GenericRenderer)

    def test_a_custom_fallback_replaces_the_generic_one(self) -> None:
        fallback = Claiming("other", claim_all=True)

        registry = RendererRegistry([], fallback=fallback)

        assert registry.renderers == (fallback,)
        assert tag_of(registry, USER) == "other"

    def test_the_default_registry_holds_the_installed_builtins(self) -> None:
        registry = RendererRegistry()

        modules = {type(r).__module__ for r in registry.renderers[:-1]}
        assert {module.split(".")[0] for module in modules} == {"memctx_renderers"}
        assert len(registry.renderers) == 8
        assert tag_of(registry, TOOL) == "tool_call"


class TestFallback:
    def test_renders_a_chunk_nobody_claims_as_memory_chunk(self) -> None:
        chunk = chunks.custom("note", {"k": "v"}, id="n1")

        role, xml = RendererRegistry([]).render(chunk)

        assert role == "user"
        assert parse_element(xml) == (
            "memory_chunk",
            {"id": "n1", "type": "CUSTOM", "role": "user", "subtype": "note"},
            '{"k": "v"}',
        )

    def test_renders_an_unknown_kind_of_a_known_type(self) -> None:
        chunk = Chunk(type=ChunkType.AGENT, content="x", id="a1", action="shrug")

        role, xml = RendererRegistry().render(chunk)

        assert (role, parse_element(xml)[0]) == ("user", "memory_chunk")

    def test_takes_the_chunks_own_role(self) -> None:
        chunk = chunks.custom("note", "n", role="assistant")

        assert RendererRegistry([]).render(chunk)[0] == "assistant"

    def test_never_gives_a_chunk_without_a_role_the_system_role(self) -> None:
        chunk = Chunk(type=ChunkType.SYSTEM, content="x")

        assert RendererRegistry([]).render(chunk)[0] == "user"

    def test_is_a_chunk_renderer(self) -> None:
        assert isinstance(GenericRenderer(), ChunkRenderer)


class TestCustomRendererOverridesBuiltin:
    class LoudSystem:
        """Claims only system chunks; renders them as ``<rules>``."""

        def can_render(self, chunk: Chunk) -> bool:
            return chunk.type is ChunkType.SYSTEM

        def get_role(self, chunk: Chunk) -> Role:
            return "system"

        def render(self, chunk: Chunk) -> str:
            return render_element("rules", [("id", chunk.id)], chunk.text.upper())

    def test_through_the_registry_for_the_chunks_it_claims_only(self) -> None:
        registry = RendererRegistry()
        registry.register(self.LoudSystem())

        assert registry.render(SYSTEM) == ("system", '<rules id="s1">\nBE BRIEF\n</rules>')
        assert tag_of(registry, USER) == "user_message"
        assert tag_of(registry, TOOL) == "tool_call"

    def test_through_create_builder_register_renderer(self) -> None:
        builder = memctx.create_builder()
        builder.register_renderer(self.LoudSystem())

        assert builder.render(SYSTEM) == ("system", '<rules id="s1">\nBE BRIEF\n</rules>')
        assert parse_element(builder.render(USER)[1])[0] == "user_message"

    def test_in_the_messages_of_a_build(self) -> None:
        builder = memctx.create_builder()
        builder.register_renderer(self.LoudSystem())

        result = builder.build(MemoryState([SYSTEM, USER]))

        system, user = result.messages
        assert system.content.startswith('<rules id="s1">\nBE BRIEF\n</rules>')
        assert user.content.startswith('<user_message id="u1" role="user">')

    def test_after_a_first_build_with_the_builtin(self) -> None:
        """Renderings are memoised per chunk; registering must not serve the stale one."""
        builder = memctx.create_builder()
        assert parse_element(builder.render(SYSTEM)[1])[0] == "system_context"

        builder.register_renderer(self.LoudSystem())

        assert parse_element(builder.render(SYSTEM)[1])[0] == "rules"

    def test_through_create_builder_renderers(self) -> None:
        builder = memctx.create_builder(renderers=[self.LoudSystem()])

        assert parse_element(builder.render(SYSTEM)[1])[0] == "rules"


class TestRegisteringSomethingElse:
    def test_a_class_instead_of_an_instance_is_a_renderer_error(self) -> None:
        registry = RendererRegistry([])

        with pytest.raises(RendererError, match="Claiming is a class; pass an instance"):
            registry.register(Claiming)  # type: ignore[arg-type]

    def test_a_class_as_a_plugin_is_a_renderer_error(self) -> None:
        with pytest.raises(RendererError, match="is a class"):
            RendererRegistry([Claiming])  # type: ignore[list-item]

    def test_a_class_through_the_builder_is_a_renderer_error(self) -> None:
        with pytest.raises(RendererError, match="is a class"):
            memctx.create_builder().register_renderer(Claiming)  # type: ignore[arg-type]

    def test_an_object_without_the_methods_names_what_is_missing(self) -> None:
        class HalfRenderer:
            def can_render(self, chunk: Chunk) -> bool:
                return True

        with pytest.raises(RendererError, match="missing get_role, render"):
            RendererRegistry([]).register(HalfRenderer())  # type: ignore[arg-type]

    def test_a_rejected_registration_changes_nothing(self) -> None:
        registry = RendererRegistry([])
        before = registry.renderers

        with pytest.raises(RendererError):
            registry.register(object())  # type: ignore[arg-type]

        assert registry.renderers == before


class TestRendererReturningWrongTypes:
    @pytest.mark.parametrize("output", [b"<x/>", None, 42, ["<x/>"]], ids=repr)
    def test_render_returning_a_non_str_is_a_renderer_error(self, output: Any) -> None:
        registry = RendererRegistry([Misbehaving(output=output)])

        with pytest.raises(RendererError, match=r"render returned .* for chunk 'u1'; expected str"):
            registry.render(USER)

    @pytest.mark.parametrize("role", ["tool", "System", None, 1, ["user"]], ids=repr)
    def test_get_role_returning_an_unknown_role_is_a_renderer_error(self, role: Any) -> None:
        registry = RendererRegistry([Misbehaving(role=role)])

        with pytest.raises(RendererError, match=r"get_role returned .* for chunk 'u1'"):
            registry.render(USER)

    def test_render_raising_is_a_renderer_error_naming_renderer_chunk_and_cause(self) -> None:
        cause = KeyError("tool")
        registry = RendererRegistry([Misbehaving(output=cause)])

        with pytest.raises(RendererError, match="Misbehaving failed on chunk 'u1'") as info:
            registry.render(USER)

        assert info.value.__cause__ is cause

    def test_can_render_raising_is_a_renderer_error(self) -> None:
        class Picky(Misbehaving):
            def can_render(self, chunk: Chunk) -> bool:
                return bool(chunk.metadata.custom["flag"])

        registry = RendererRegistry([Picky()])

        with pytest.raises(RendererError, match="Picky"):
            registry.render(USER)

    def test_a_build_surfaces_the_renderer_error(self) -> None:
        builder = memctx.create_builder(renderers=[Misbehaving(output=None)])

        with pytest.raises(RendererError):
            builder.build(MemoryState([USER]))


class TestResolveByKind:
    """A registry remembers the renderer per chunk kind only where the kind decides."""

    def test_a_renderer_claiming_by_content_is_asked_for_every_chunk(self) -> None:
        class ByContent:
            def can_render(self, chunk: Chunk) -> bool:
                return chunk.content == "mine"

            def get_role(self, chunk: Chunk) -> Role:
                return "assistant"

            def render(self, chunk: Chunk) -> str:
                return render_element("mine", [("id", chunk.id)], chunk.text)

        registry = RendererRegistry()
        registry.register(ByContent())

        assert registry.render(chunks.user("other"))[1].startswith("<user_message")
        assert registry.render(chunks.user("mine"))[1].startswith("<mine")
        assert registry.render(chunks.user("other again"))[1].startswith("<user_message")

    def test_a_declared_subclass_overriding_can_render_is_asked_for_every_chunk(self) -> None:
        class Picky(DeclaredRenderer):
            chunk_type = ChunkType.AGENT
            key_fields = ()
            elements: ClassVar[dict[Any, Element]] = {(): Element("picky", "user")}

            def can_render(self, chunk: Chunk) -> bool:
                return super().can_render(chunk) and chunk.text.startswith("!")

        class Pickier(Picky):
            pass

        registry = RendererRegistry()
        registry.register(Pickier())

        assert not Pickier.claims_by_kind
        assert registry.render(chunks.user("plain"))[1].startswith("<user_message")
        assert registry.render(chunks.user("!bang"))[1].startswith("<picky")

    def test_registering_a_renderer_forgets_what_was_remembered(self) -> None:
        class Shout(DeclaredRenderer):
            chunk_type = ChunkType.AGENT
            key_fields = ()
            elements: ClassVar[dict[Any, Element]] = {(): Element("shout", "user")}

        registry = RendererRegistry()
        first = registry.render(chunks.user("hi"))[1]
        registry.register(Shout())

        assert first.startswith("<user_message")
        assert registry.render(chunks.user("hi"))[1].startswith("<shout")

    def test_a_renderer_keyed_on_role_is_remembered_per_role(self) -> None:
        class UserOnly(DeclaredRenderer):
            chunk_type = ChunkType.AGENT
            key_fields = ("role",)
            elements: ClassVar[dict[Any, Element]] = {"user": Element("mine", "user")}

        registry = RendererRegistry()
        registry.register(UserOnly())

        assert UserOnly.claims_by_kind
        assert registry.render(chunks.user("a"))[1].startswith("<mine")
        assert registry.render(chunks.assistant("b"))[1].startswith("<assistant_response")
        assert registry.render(chunks.user("c"))[1].startswith("<mine")
        assert registry.render(chunks.assistant("d"))[1].startswith("<assistant_response")

    def test_the_built_in_chain_asks_its_renderers_once_per_kind(
        self, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        asked: list[str] = []
        claims = DeclaredRenderer.can_render

        def counting(self: DeclaredRenderer, chunk: Chunk) -> bool:
            asked.append(chunk.id)
            return claims(self, chunk)

        monkeypatch.setattr(DeclaredRenderer, "can_render", counting)
        registry = RendererRegistry()
        kinds = [chunks.user, chunks.assistant, chunks.thinking, chunks.system]
        for number, make in enumerate(kinds * 2):
            registry.render(make("text", id=f"c{number}"))

        assert asked
        assert not {f"c{n}" for n in range(len(kinds), 2 * len(kinds))} & set(asked)


_KIND_FIELDS = ("role", "action", "subtype")
_KIND_VALUES: dict[str, list[str | None]] = {
    "role": [None, "user", "assistant"],
    "action": [None, "call"],
    "subtype": [None, "a"],
}


@st.composite
def declared_renderers(draw: st.DrawFn) -> DeclaredRenderer:
    """A DeclaredRenderer keyed on some of role, action and subtype, claiming some keys."""
    fields = tuple(f for f in _KIND_FIELDS if draw(st.booleans()))
    keys = draw(
        st.lists(
            st.tuples(*(st.sampled_from(_KIND_VALUES[f]) for f in fields)),
            min_size=1,
            max_size=4,
            unique=True,
        )
    )
    elements = {
        (key[0] if len(fields) == 1 else key): Element(f"r{n}", "user")
        for n, key in enumerate(keys)
    }
    kind = type(
        "Drawn",
        (DeclaredRenderer,),
        {
            "chunk_type": draw(st.sampled_from([ChunkType.AGENT, ChunkType.CUSTOM])),
            "key_fields": fields,
            "elements": elements,
        },
    )
    return kind()  # type: ignore[no-any-return]


drawn_chunks = st.builds(
    Chunk,
    type=st.sampled_from([ChunkType.AGENT, ChunkType.CUSTOM]),
    content=st.just("text"),
    role=st.sampled_from(_KIND_VALUES["role"]),
    action=st.sampled_from(_KIND_VALUES["action"]),
    subtype=st.sampled_from(_KIND_VALUES["subtype"]),
)


@settings(max_examples=examples(200), deadline=None)
@given(
    renderers=st.lists(declared_renderers(), max_size=4),
    sequence=st.lists(drawn_chunks, min_size=2, max_size=16),
)
def test_remembering_per_kind_never_changes_which_renderer_claims_a_chunk(
    renderers: list[DeclaredRenderer], sequence: list[Chunk]
) -> None:
    registry = RendererRegistry()
    for renderer in renderers:
        registry.register(renderer)

    for chunk in sequence:
        first = next(r for r in registry.renderers if r.can_render(chunk))
        assert registry.resolve(chunk) is first
