"""The shape of the code: values stay values, imports go one way, the pipeline is a table."""

from __future__ import annotations

import ast
import gc
import typing
import weakref
from pathlib import Path

import attrs
import pytest

from memctx import MemoryState, chunks, create_builder, create_tokenizer
from memctx._build.options import STRATEGIES, BuildOptions, Strategy
from memctx._build.select import SELECTORS
from memctx.typing import Tokenizer

SRC = Path(__file__).resolve().parent.parent / "src"


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(SRC).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _runtime_nodes(tree: ast.AST) -> list[ast.AST]:
    """Every node of ``tree`` outside ``if TYPE_CHECKING:`` blocks (annotations only)."""
    found: list[ast.AST] = []

    def visit(node: ast.AST) -> None:
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            for child in node.orelse:
                visit(child)
            return
        found.append(node)
        for child in ast.iter_child_nodes(node):
            visit(child)

    visit(tree)
    return found


def _import_graph() -> dict[str, set[str]]:
    """The imports that run, of every module of src/memctx, at module level or in a function.

    Importing ``a.b.c`` runs ``a/__init__`` and ``a/b/__init__`` first, so a module
    also depends on the packages holding what it imports.
    """
    modules = {_module_name(p): p for p in SRC.rglob("*.py")}
    graph: dict[str, set[str]] = {name: set() for name in modules}
    for name, path in modules.items():
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        for node in _runtime_nodes(ast.parse(path.read_text(encoding="utf-8"))):
            targets: list[str] = []
            if isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    anchor = package.split(".")
                    anchor = anchor[: len(anchor) - node.level + 1]
                    base = ".".join([*anchor, base] if base else anchor)
                for alias in node.names:
                    submodule = f"{base}.{alias.name}"
                    targets.append(submodule if submodule in modules else base)
            for target in targets:
                parts = target.split(".")
                for depth in range(2, len(parts) + 1):
                    found = ".".join(parts[:depth])
                    if found in modules and found != name and not name.startswith(found + "."):
                        graph[name].add(found)
    return graph


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    found: list[list[str]] = []
    state: dict[str, int] = {}  # 1: on the stack, 2: done
    stack: list[str] = []

    def visit(node: str) -> None:
        state[node] = 1
        stack.append(node)
        for target in sorted(graph[node]):
            if state.get(target) == 1:
                found.append([*stack[stack.index(target) :], target])
            elif target not in state:
                visit(target)
        stack.pop()
        state[node] = 2

    for node in sorted(graph):
        if node not in state:
            visit(node)
    return found


class TestImports:
    def test_no_module_of_memctx_takes_part_in_an_import_cycle(self) -> None:
        assert _cycles(_import_graph()) == []

    def test_the_cycle_finder_sees_a_cycle_of_three_modules(self) -> None:
        graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": set()}
        assert _cycles(graph) == [["a", "b", "c", "a"]]


def _history() -> MemoryState:
    return MemoryState(
        [
            chunks.system("You are a coding agent.", id="s"),
            *(chunks.user(f"question {i} " + "word " * 40, id=f"u{i}") for i in range(10)),
        ]
    )


class TestValues:
    def test_a_deleted_builder_is_freed_while_its_states_live(self) -> None:
        state = _history()
        builder = create_builder(create_tokenizer("gpt-4o"))
        grown = state.append(chunks.assistant("answer", id="a"))
        builder.build(state, max_tokens=300)
        builder.build(grown, max_tokens=300)
        ref = weakref.ref(builder)

        del builder
        gc.collect()

        assert ref() is None
        assert len(grown) == 12

    def test_a_state_holds_only_its_chunks_its_length_and_its_thread(self) -> None:
        state = _history()
        create_builder().build(state, max_tokens=200)

        assert set(MemoryState.__slots__) == {"_chunks", "_history", "_length", "thread_id"}
        # The shared list's structure (ids, units), derived from the chunks alone, and the
        # builders' caches of it, keyed weakly by builder (so they die with the history).
        history = state.shared_history
        assert set(type(history).__slots__) == {
            "__weakref__",
            "caches",
            "ids",
            "items",
            "lock",
            "units",
        }
        assert isinstance(history.caches, weakref.WeakKeyDictionary)

    def test_the_units_index_of_a_history_is_the_same_whoever_built_it(self) -> None:
        state = _history()
        before = state.shared_history.units
        create_builder().build(state, max_tokens=200)
        create_builder(content="escape").build(state, max_tokens=150)

        assert state.shared_history.units is before
        assert before.length == len(state)

    def test_a_chunk_has_no_field_besides_its_value(self) -> None:
        names = {field.name for field in attrs.fields(type(chunks.user("x")))}
        assert names == {
            "type",
            "content",
            "id",
            "role",
            "action",
            "subtype",
            "metadata",
            "priority",
            "created_at",
        }

    def test_a_result_never_changes_after_later_builds_of_the_same_history(self) -> None:
        tokenizer = create_tokenizer("gpt-4o")
        builder = create_builder(tokenizer)
        state = _history()
        small = builder.build(state, max_tokens=120, pin_newest=False)
        before_fields = attrs.asdict(small, recurse=False)

        for budget in (200, 400, 2_000, None):
            builder.build(state, max_tokens=budget, pin_newest=False)
            builder.build(state.append(chunks.user("more", id=f"m{budget}")), max_tokens=budget)

        assert attrs.asdict(small, recurse=False) == before_fields
        fresh = create_builder(tokenizer).build(
            MemoryState(list(state)), max_tokens=120, pin_newest=False
        )
        assert small.excluded_chunk_ids == fresh.excluded_chunk_ids
        assert dict(small.exclusions) == dict(fresh.exclusions)
        assert any(e.tokens_estimated for e in small.exclusions.values())

    def test_every_left_out_chunk_reports_its_tokens_measured_or_estimated(self) -> None:
        tokenizer = create_tokenizer("gpt-4o")
        state = _history()
        result = create_builder(tokenizer).build(state, max_tokens=150, pin_newest=False)

        left_out = list(result.exclusions.values())
        assert len(left_out) == len(state) - len(result.included_chunk_ids) > 0
        for exclusion in left_out:
            assert exclusion.tokens is not None
            if not exclusion.tokens_estimated:
                segment = create_builder().render(state.get(exclusion.chunk_id))[1] + "\n"
                assert exclusion.tokens == tokenizer.count(segment)

    def test_builds_that_report_alike_compare_equal_and_others_do_not(self) -> None:
        tokenizer = create_tokenizer("gpt-4o")
        state = _history()
        one = create_builder(tokenizer).build(state, max_tokens=200)
        other = create_builder(tokenizer).build(MemoryState(list(state)), max_tokens=200)
        smaller = create_builder(tokenizer).build(state, max_tokens=150)
        filtered = create_builder(tokenizer).build(state, max_tokens=200, include_system=False)

        assert one == other
        assert one != smaller
        assert one.exclusions != filtered.exclusions
        assert one != filtered

    def test_a_result_holds_values_only_and_keeps_its_state(self) -> None:
        state = _history()
        result = create_builder(create_tokenizer("gpt-4o")).build(state, max_tokens=200)

        assert result.state is state
        for field in attrs.fields(type(result)):
            assert not callable(getattr(result, field.name)), field.name
        assert not hasattr(result, "__dict__")
        page = result.to_html()
        assert page.startswith("<!DOCTYPE html>")
        assert "srcdoc=" in result._repr_html_()

    def test_the_exclusion_report_is_the_same_whenever_it_is_first_read(self) -> None:
        tokenizer = create_tokenizer("gpt-4o")
        state = _history()
        first = create_builder(tokenizer)
        early = first.build(state, max_tokens=120, pin_newest=False)
        expected = dict(early.exclusions)
        second = create_builder(tokenizer)
        late = second.build(state, max_tokens=120, pin_newest=False)
        second.build(state, max_tokens=5_000, pin_newest=False)  # counts every chunk

        assert dict(late.exclusions) == expected


class TestSurface:
    def test_src_memctx_has_at_most_30_top_level_entries(self) -> None:
        entries = [p for p in (SRC / "memctx").iterdir() if p.name != "__pycache__"]
        assert len(entries) <= 30, sorted(p.name for p in entries)

    def test_build_options_are_typed_for_type_checkers(self) -> None:
        from memctx import BuildKwargs, ContextBuilder

        hint = typing.get_type_hints(ContextBuilder.build, include_extras=True)["options"]
        assert typing.get_origin(hint) is typing.Unpack
        assert typing.get_args(hint) == (BuildKwargs,)
        assert set(typing.get_type_hints(BuildKwargs)) >= {
            field.name for field in attrs.fields(BuildOptions) if field.name != "max_tokens"
        }

    def test_the_builder_shows_only_build_render_register_renderer_registry_tokenizer(self) -> None:
        builder = create_builder()
        public = {name for name in dir(builder) if not name.startswith("_")}
        assert public == {"build", "render", "register_renderer", "registry", "tokenizer"}


class TestExtensionPoints:
    def test_the_typed_strategy_names_are_the_selector_table_s_names(self) -> None:
        assert typing.get_args(Strategy) == tuple(SELECTORS) == STRATEGIES

    def test_an_unknown_strategy_lists_the_valid_ones(self) -> None:
        from memctx import BuildOptionError

        with pytest.raises(BuildOptionError, match="recent, stable, priority, in_order"):
            create_builder().build(_history(), strategy="newest")

    def test_a_third_party_tokenizer_whose_counts_add_up_is_not_recounted(self) -> None:
        gpt4o = create_tokenizer("gpt-4o")

        class Words:
            name = "mine"
            exact = True
            cache_key = "mine:o200k"
            counts_add_up = True

            def count(self, text: str) -> int:
                return gpt4o.count(text)

            def count_messages(self, messages: object) -> int:
                return gpt4o.count_messages(messages)  # type: ignore[arg-type]

        tokenizer = Words()
        assert isinstance(tokenizer, Tokenizer)
        result = create_builder().build(_history(), max_tokens=300, tokenizer=tokenizer)

        assert result.recounted is False
        assert result.token_count == gpt4o.count_messages(result.messages)

    def test_a_tokenizer_that_does_not_say_its_counts_add_up_is_recounted(self) -> None:
        gpt4o = create_tokenizer("gpt-4o")

        class Plain:
            name = "plain"
            exact = False

            def count(self, text: str) -> int:
                return gpt4o.count(text)

            def count_messages(self, messages: object) -> int:
                return gpt4o.count_messages(messages)  # type: ignore[arg-type]

        result = create_builder().build(_history(), max_tokens=300, tokenizer=Plain())

        assert result.recounted is True
        assert result.token_count <= 300
