"""Renderer plugins found through the ``memctx.renderers`` entry points, faked here.

Nothing is installed: fake distributions (``importlib.metadata.Distribution``
subclasses that read their metadata from memory) declare entry points whose
modules are put in ``sys.modules`` by the test, or written to ``tmp_path``.
"""

from __future__ import annotations

import ast
import importlib.metadata as importlib_metadata
import sys
import types
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any

import pytest

from memctx import (
    Chunk,
    ChunkRenderer,
    ChunkType,
    PluginLoadError,
    RendererError,
    RendererRegistry,
    Role,
    chunks,
)
from memctx._render.plugins import (
    ENTRY_POINT_GROUP,
    PluginSpec,
    find_renderer_plugins,
    load_plugin,
    load_renderer_plugins,
)
from memctx.xml import parse_element, render_element

FAKE_MODULE = "memctx_tests_fake_plugins"

EntryPoints = Callable[..., Iterable[importlib_metadata.EntryPoint]]


class FakeDistribution(importlib_metadata.Distribution):
    """A distribution whose METADATA and entry_points.txt live in memory."""

    def __init__(self, name: str, renderers: Mapping[str, str], group: str = ENTRY_POINT_GROUP):
        self._name = name
        self._entry_points = f"[{group}]\n" + "".join(f"{k} = {v}\n" for k, v in renderers.items())

    def read_text(self, filename: str) -> str | None:
        if filename == "METADATA":
            return f"Metadata-Version: 2.1\nName: {self._name}\nVersion: 1.0\n"
        if filename == "entry_points.txt":
            return self._entry_points
        return None

    def locate_file(self, path: Any) -> Path:
        raise FileNotFoundError(path)


def entry_points_of(*distributions: importlib_metadata.Distribution) -> EntryPoints:
    """A stand-in for ``importlib.metadata.entry_points`` over ``distributions`` only."""

    def entry_points(*, group: str) -> list[importlib_metadata.EntryPoint]:
        return [ep for dist in distributions for ep in dist.entry_points if ep.group == group]

    return entry_points


class TagRenderer:
    """Claims chunks of one type and renders them as ``<tag>``."""

    def __init__(self, tag: str = "plugin", claims: ChunkType = ChunkType.AGENT) -> None:
        self.tag = tag
        self.claims = claims

    def can_render(self, chunk: Chunk) -> bool:
        return chunk.type is self.claims

    def get_role(self, chunk: Chunk) -> Role:
        return "user"

    def render(self, chunk: Chunk) -> str:
        return render_element(self.tag, [("id", chunk.id)], chunk.text)


class SystemAsNotes(TagRenderer):
    def __init__(self) -> None:
        super().__init__("notes", ChunkType.SYSTEM)


def failing_factory() -> TagRenderer:
    raise RuntimeError("no API key configured")


@pytest.fixture
def fake_module(monkeypatch: pytest.MonkeyPatch) -> types.ModuleType:
    """An importable module holding renderers and things that are not renderers."""
    module = types.ModuleType(FAKE_MODULE)
    module.TagRenderer = TagRenderer  # type: ignore[attr-defined]
    module.SystemAsNotes = SystemAsNotes  # type: ignore[attr-defined]
    module.instance = TagRenderer("instance")  # type: ignore[attr-defined]
    module.factory = lambda: TagRenderer("made")  # type: ignore[attr-defined]
    module.failing_factory = failing_factory  # type: ignore[attr-defined]
    module.not_a_renderer = 42  # type: ignore[attr-defined]
    module.returns_a_number = lambda: 42  # type: ignore[attr-defined]
    module.returns_a_class = lambda: TagRenderer  # type: ignore[attr-defined]
    module.NotARenderer = dict  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, FAKE_MODULE, module)
    return module


def only(value: str, dist: str = "acme-renderers") -> EntryPoints:
    """Entry points of one fake distribution with one plugin ``broken = value``."""
    return entry_points_of(FakeDistribution(dist, {"broken": value}))


class TestFind:
    def test_sorts_third_party_first_then_builtins_each_by_distribution_and_name(self) -> None:
        found = find_renderer_plugins(
            entry_points_of(
                FakeDistribution("memctx", {"system": "b:S", "agent": "b:A"}),
                FakeDistribution("zeta", {"one": "z:One"}),
                FakeDistribution("acme", {"b": "a:B", "a": "a:A"}),
            )
        )

        assert [(s.distribution, s.name) for s in found] == [
            ("acme", "a"),
            ("acme", "b"),
            ("zeta", "one"),
            ("memctx", "agent"),
            ("memctx", "system"),
        ]
        assert [s.builtin for s in found] == [False, False, False, True, True]

    def test_reads_metadata_only_and_imports_nothing(self) -> None:
        found = find_renderer_plugins(only("module_that_does_not_exist:Renderer"))

        assert [(s.name, s.value) for s in found] == [
            ("broken", "module_that_does_not_exist:Renderer")
        ]
        assert "module_that_does_not_exist" not in sys.modules

    def test_asks_only_for_the_memctx_renderers_group(self) -> None:
        asked: list[str] = []

        def entry_points(*, group: str) -> list[importlib_metadata.EntryPoint]:
            asked.append(group)
            return []

        assert find_renderer_plugins(entry_points) == []
        assert asked == ["memctx.renderers"]

    def test_ignores_entry_points_of_other_groups(self) -> None:
        other = FakeDistribution("acme", {"x": "a:X"}, group="flake8.extension")

        assert find_renderer_plugins(entry_points_of(other)) == []

    def test_the_same_plugin_seen_twice_is_kept_once_first_wins(self) -> None:
        found = find_renderer_plugins(
            entry_points_of(
                FakeDistribution("acme", {"r": "new:R"}), FakeDistribution("acme", {"r": "old:R"})
            )
        )

        assert [s.value for s in found] == ["new:R"]

    def test_an_entry_point_without_a_distribution_is_third_party(self) -> None:
        bare = importlib_metadata.EntryPoint("bare", "m:R", ENTRY_POINT_GROUP)

        found = find_renderer_plugins(lambda *, group: [bare])

        assert [(s.distribution, s.builtin) for s in found] == [("unknown", False)]

    def test_a_spec_names_its_distribution_entry_point_and_target(self) -> None:
        (spec,) = find_renderer_plugins(only("pkg.mod:Renderer"))

        assert str(spec) == "acme-renderers:broken = pkg.mod:Renderer"


class TestLoad:
    @pytest.mark.parametrize(
        ("target", "tag"),
        [("TagRenderer", "plugin"), ("instance", "instance"), ("factory", "made")],
        ids=["class", "instance", "factory"],
    )
    def test_accepts_a_class_an_instance_or_a_factory(
        self, fake_module: types.ModuleType, target: str, tag: str
    ) -> None:
        (renderer,) = load_renderer_plugins(only(f"{FAKE_MODULE}:{target}"))

        assert isinstance(renderer, ChunkRenderer)
        assert not isinstance(renderer, type)
        assert parse_element(renderer.render(chunks.user("u", id="c1")))[0] == tag

    def test_loads_in_the_order_found(self, fake_module: types.ModuleType) -> None:
        loaded = load_renderer_plugins(
            entry_points_of(
                FakeDistribution("memctx", {"agent": f"{FAKE_MODULE}:factory"}),
                FakeDistribution("acme", {"inst": f"{FAKE_MODULE}:instance"}),
            )
        )

        assert [r.tag for r in loaded] == ["instance", "made"]  # type: ignore[attr-defined]

    def test_a_third_party_plugin_wins_over_the_builtin_for_what_it_claims(
        self, fake_module: types.ModuleType
    ) -> None:
        builtins = {
            ep.name: ep.value
            for ep in importlib_metadata.entry_points(group=ENTRY_POINT_GROUP)
            if ep.dist is not None and ep.dist.name == "memctx"
        }
        plugins = load_renderer_plugins(
            entry_points_of(
                FakeDistribution("memctx", builtins),
                FakeDistribution("acme", {"notes": f"{FAKE_MODULE}:SystemAsNotes"}),
            )
        )
        registry = RendererRegistry(plugins)

        assert parse_element(registry.render(chunks.system("s"))[1])[0] == "notes"
        assert parse_element(registry.render(chunks.user("u"))[1])[0] == "user_message"

    def test_the_installed_builtins_are_found_through_the_entry_points(self) -> None:
        found = find_renderer_plugins()
        builtins = {s.name: s.value for s in found if s.builtin}

        assert set(builtins) == {
            "system", "agent", "workflow", "delegation", "environment", "working_flow", "output",
        }  # fmt: skip
        assert all(value.startswith("memctx_renderers.") for value in builtins.values())

    def test_the_installed_plugins_are_loaded_once_per_process(self) -> None:
        assert load_renderer_plugins() is load_renderer_plugins()


def assert_names_plugin(error: PluginLoadError, cause: str) -> None:
    assert error.plugin.startswith("acme-renderers:broken = ")
    assert "acme-renderers:broken" in str(error)
    assert cause in error.cause
    assert cause in str(error)


class TestBrokenPlugin:
    def test_a_missing_module_is_a_plugin_load_error_naming_plugin_and_cause(self) -> None:
        with pytest.raises(PluginLoadError) as info:
            load_renderer_plugins(only("memctx_tests_no_such_module:Renderer"))

        assert_names_plugin(info.value, "ModuleNotFoundError")
        assert "memctx_tests_no_such_module" in info.value.cause
        assert isinstance(info.value.__cause__, ModuleNotFoundError)

    def test_a_module_that_fails_on_import_is_a_plugin_load_error(
        self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        (tmp_path / "memctx_tests_exploding.py").write_text(
            "raise RuntimeError('boom at import')\n", encoding="utf-8"
        )
        monkeypatch.syspath_prepend(tmp_path)

        with pytest.raises(PluginLoadError) as info:
            load_renderer_plugins(only("memctx_tests_exploding:Renderer"))

        assert_names_plugin(info.value, "RuntimeError: boom at import")

    def test_a_module_with_a_syntax_error_is_a_plugin_load_error(
        self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        (tmp_path / "memctx_tests_bad_syntax.py").write_text("def (:\n", encoding="utf-8")
        monkeypatch.syspath_prepend(tmp_path)

        with pytest.raises(PluginLoadError) as info:
            load_renderer_plugins(only("memctx_tests_bad_syntax:Renderer"))

        assert_names_plugin(info.value, "SyntaxError")

    def test_a_missing_attribute_is_a_plugin_load_error(
        self, fake_module: types.ModuleType
    ) -> None:
        with pytest.raises(PluginLoadError) as info:
            load_renderer_plugins(only(f"{FAKE_MODULE}:Nowhere"))

        assert_names_plugin(info.value, "AttributeError")

    @pytest.mark.parametrize(
        "target", ["not_a_renderer", "returns_a_number", "returns_a_class", "NotARenderer"]
    )
    def test_something_that_is_not_a_renderer_is_a_plugin_load_error(
        self, fake_module: types.ModuleType, target: str
    ) -> None:
        with pytest.raises(PluginLoadError) as info:
            load_renderer_plugins(only(f"{FAKE_MODULE}:{target}"))

        assert_names_plugin(info.value, "is not a ChunkRenderer")

    def test_a_factory_that_raises_is_a_plugin_load_error(
        self, fake_module: types.ModuleType
    ) -> None:
        with pytest.raises(PluginLoadError) as info:
            load_renderer_plugins(only(f"{FAKE_MODULE}:failing_factory"))

        assert_names_plugin(info.value, "RuntimeError: no API key configured")
        assert isinstance(info.value.__cause__, RuntimeError)

    def test_one_broken_plugin_fails_the_whole_load(self, fake_module: types.ModuleType) -> None:
        with pytest.raises(PluginLoadError, match="acme-renderers:broken"):
            load_renderer_plugins(
                entry_points_of(
                    FakeDistribution("aaa", {"good": f"{FAKE_MODULE}:instance"}),
                    FakeDistribution("acme-renderers", {"broken": "memctx_tests_nope:R"}),
                )
            )

    def test_is_an_import_error_and_a_renderer_error(self) -> None:
        with pytest.raises(PluginLoadError) as info:
            load_renderer_plugins(only("memctx_tests_no_such_module:Renderer"))

        assert isinstance(info.value, ImportError)
        assert isinstance(info.value, RendererError)

    def test_load_plugin_of_one_spec(self, fake_module: types.ModuleType) -> None:
        (spec,) = find_renderer_plugins(only(f"{FAKE_MODULE}:instance"))

        assert isinstance(spec, PluginSpec)
        assert load_plugin(spec) is fake_module.instance


class TestBuiltinsArePlugins:
    def test_src_memctx_never_imports_the_builtin_renderers(self) -> None:
        """DESIGN.md: the built-ins reach the core only through entry points."""
        import memctx

        source_root = Path(memctx.__file__).parent
        offenders: list[str] = []
        for path in sorted(source_root.rglob("*.py")):
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
                names: list[str] = []
                if isinstance(node, ast.Import):
                    names = [alias.name for alias in node.names]
                elif isinstance(node, ast.ImportFrom) and node.module:
                    names = [node.module]
                offenders += [
                    f"{path.name}: {n}" for n in names if n.startswith("memctx_renderers")
                ]

        assert offenders == []
