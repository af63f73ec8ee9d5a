"""The public surface: what ``import memctx`` offers is exactly what ``__all__`` declares."""

from __future__ import annotations

import importlib
import inspect
import pkgutil
import types

import pytest

import memctx
from memctx import adapters, chunks, importers, statefile, team, xml

DESIGN_MD_NAMES = {
    "Chunk",
    "ChunkType",
    "MemoryState",
    "ContextBuilder",
    "create_builder",
    "BuildOptions",
    "ContextBuildResult",
    "ContextMessage",
    "ChunkRenderer",
    "RendererRegistry",
    "Tokenizer",
    "create_tokenizer",
}

DESIGN_MD_CONSTRUCTORS = {
    "system", "user", "assistant", "clarification", "tool_call", "skill_call",
    "spawn_subagent", "message_to_subagent", "subagent_result", "parent_agent_message",
    "tool_result", "tool_error", "skill_result", "progress_summary", "todo_update", "thinking",
    "user_intervention", "task_completed", "task_abandoned", "task_terminated",
}  # fmt: skip
# Part three (provider fidelity): reasoning the provider signed or encrypted, and media.
PART_THREE_CONSTRUCTORS = {"redacted_thinking", "image", "document"}


def is_public_submodule(name: str, value: object) -> bool:
    return isinstance(value, types.ModuleType) and value.__name__ == f"memctx.{name}"


class TestAll:
    def test_is_sorted_without_duplicates(self) -> None:
        assert memctx.__all__ == sorted(set(memctx.__all__))

    def test_every_name_exists(self) -> None:
        missing = [name for name in memctx.__all__ if not hasattr(memctx, name)]

        assert missing == []

    def test_holds_no_private_name(self) -> None:
        assert [name for name in memctx.__all__ if name.startswith("_")] == []

    def test_holds_the_public_names_of_design_md(self) -> None:
        assert set(memctx.__all__) >= DESIGN_MD_NAMES

    def test_star_import_gives_exactly_all(self) -> None:
        namespace: dict[str, object] = {}
        exec("from memctx import *", namespace)

        assert sorted(set(namespace) - {"__builtins__"}) == memctx.__all__


class TestNoLeaks:
    """Names that are not identifiers (pytest's assertion rewriting adds ``@py_builtins``) are
    ignored: no user can reach them with attribute access."""

    def test_every_public_attribute_is_exported_or_a_public_submodule(self) -> None:
        """A name a user can reach without an underscore is a promise; it must be declared."""
        undeclared = [
            name
            for name, value in vars(memctx).items()
            if name.isidentifier()
            and not name.startswith("_")
            and name not in memctx.__all__
            and not is_public_submodule(name, value)
        ]

        assert undeclared == []

    def test_no_private_module_is_reachable_under_a_public_name(self) -> None:
        leaked = [
            name
            for name, value in vars(memctx).items()
            if name.isidentifier()
            and not name.startswith("_")
            and isinstance(value, types.ModuleType)
            and any(part.startswith("_") for part in value.__name__.split("."))
        ]

        assert leaked == []

    def test_exported_objects_come_from_memctx(self) -> None:
        """Re-exports of other libraries' objects would tie our API to theirs."""
        foreign = [
            name
            for name in memctx.__all__
            if (inspect.isclass(obj := getattr(memctx, name)) or inspect.isfunction(obj))
            and not obj.__module__.startswith("memctx")
        ]

        assert foreign == []

    def test_every_exported_exception_is_a_memctx_error(self) -> None:
        errors = [
            getattr(memctx, name)
            for name in memctx.__all__
            if inspect.isclass(getattr(memctx, name))
            and issubclass(getattr(memctx, name), BaseException)
        ]

        assert errors
        assert [e.__name__ for e in errors if not issubclass(e, memctx.MemctxError)] == []


class TestPublicSubmodules:
    @pytest.mark.parametrize(
        "module", [chunks, importers, statefile, xml], ids=lambda m: m.__name__
    )
    def test_all_is_sorted_and_every_name_exists(self, module: types.ModuleType) -> None:
        assert module.__all__ == sorted(set(module.__all__))
        assert [name for name in module.__all__ if not hasattr(module, name)] == []

    def test_team_exports_the_names_of_design_md_and_nothing_undeclared(self) -> None:
        assert len(set(team.__all__)) == len(team.__all__)
        assert [name for name in team.__all__ if not hasattr(team, name)] == []
        assert set(team.__all__) >= {
            "TeamConversation", "Speaker", "normalize_agent_type", "strip_markers",
            "PromptMessage", "AgentContext", "AssembledPrompt",
        }  # fmt: skip
        undeclared = [
            name
            for name in vars(team)
            if name.isidentifier()
            and not name.startswith("_")
            and name not in team.__all__
            and not is_public_submodule(name, vars(team)[name])
        ]
        assert undeclared == []

    def test_chunks_exports_the_constructors_of_design_md_and_custom(self) -> None:
        expected = DESIGN_MD_CONSTRUCTORS | PART_THREE_CONSTRUCTORS | {"custom"}
        assert set(chunks.__all__) == expected

    def test_chunks_exports_every_public_function_its_modules_define(self) -> None:
        defined = {
            name
            for module in _submodules(chunks)
            for name, value in vars(module).items()
            if inspect.isfunction(value)
            and value.__module__ == module.__name__
            and not name.startswith("_")
            and module.__name__ != "memctx.chunks._base"  # the constructors' shared helpers
        }

        assert defined == set(chunks.__all__)


class TestChatModule:
    """``memctx.chat`` offers the names DESIGN.md fixes for chat routing, and no other."""

    DESIGN_MD_CHAT_NAMES = frozenset(
        {
            "ChatAgent",
            "AgentLookup",
            "parse_mentions",
            "select_targets",
            "workflow_task_prompt",
            "prompt_history",
            "build_chat_context",
            "ChatMessage",
            "ChatContext",
            "Mentions",
            "Targets",
        }
    )

    def test_holds_the_names_of_design_md(self) -> None:
        from memctx import chat

        assert set(chat.__all__) >= self.DESIGN_MD_CHAT_NAMES

    def test_every_name_exists_once_and_comes_from_memctx(self) -> None:
        from memctx import chat

        assert len(chat.__all__) == len(set(chat.__all__))
        assert [name for name in chat.__all__ if not hasattr(chat, name)] == []
        foreign = [
            name
            for name in chat.__all__
            if (inspect.isclass(obj := getattr(chat, name)) or inspect.isfunction(obj))
            and not obj.__module__.startswith("memctx")
        ]
        assert foreign == []

    def test_every_public_attribute_is_exported(self) -> None:
        from memctx import chat

        undeclared = [
            name
            for name in vars(chat)
            if name.isidentifier() and not name.startswith("_") and name not in chat.__all__
        ]
        assert undeclared == []


@pytest.mark.parametrize("name", ["langchain", "openai_agents", "pydantic_ai"])
def test_integration_modules_declare_what_they_offer(name: str) -> None:
    import importlib

    module = importlib.import_module(f"memctx.integrations.{name}")

    assert module.__all__ == sorted(set(module.__all__))
    assert [n for n in module.__all__ if not hasattr(module, n)] == []


class TestAdapters:
    def test_all_holds_each_name_once_and_every_name_exists(self) -> None:
        assert len(adapters.__all__) == len(set(adapters.__all__))
        assert [name for name in adapters.__all__ if not hasattr(adapters, name)] == []

    def test_offers_the_adapters_design_md_names(self) -> None:
        assert {"to_openai", "to_anthropic", "to_gemini", "to_langchain", "to_text"} <= set(
            adapters.__all__
        )

    def test_importers_offer_the_design_md_names(self) -> None:
        assert {"load_openai_transcript", "load_anthropic_messages", "from_langchain"} <= set(
            importers.__all__
        )


class TestCompressionModules:
    """The compression, compaction and typing modules offer the names DESIGN.md fixes."""

    def test_all_is_sorted_and_every_name_exists(self) -> None:
        from memctx import compaction, compress
        from memctx import typing as memctx_typing

        for module in (compress, compaction, memctx_typing):
            assert module.__all__ == sorted(set(module.__all__)), module.__name__
            assert [n for n in module.__all__ if not hasattr(module, n)] == []

    def test_they_hold_the_names_design_md_fixes(self) -> None:
        from memctx import compaction, compress
        from memctx import typing as memctx_typing

        assert {"compress", "MaxChunks", "MaxChars", "TrimToolOutputs"} <= set(compress.__all__)
        assert {"compact", "ExtractiveSummarizer", "LLMSummarizer", "CompactionPolicy"} <= set(
            compaction.__all__
        )
        assert {"Compressor", "Summarizer"} <= set(memctx_typing.__all__)


def _submodules(package: types.ModuleType) -> list[types.ModuleType]:
    """``package`` and every module under it."""
    names = [info.name for info in pkgutil.walk_packages(package.__path__, f"{package.__name__}.")]
    return [package, *(importlib.import_module(name) for name in names)]
