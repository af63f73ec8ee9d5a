"""Invalid option values, one row each: every one is refused with one clear MemctxError.

The audit of issue 27 found option values accepted silently (``unknown_roles="foo"``,
``pin_task="yes"``, ``Speaker("")``, ...). This table lists each option of the
public entry points that takes a closed set of values or a range, with a value
outside it; the store's and the command line's are in
``tests/store/test_store_invalid_options.py``, and the issue's own examples in
``BAD_CALLS`` of ``tests/test_bad_inputs.py``. These entry points write nothing,
so "nothing written" is the state or object they were given, unchanged.
"""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Callable
from typing import Any

import pytest

from memctx import (
    AdapterError,
    ArgumentError,
    BuildOptionError,
    BuildOptions,
    ChatError,
    CompactionError,
    CompressionError,
    ContextBuilder,
    InvalidChunkError,
    MemctxError,
    MemoryState,
    PolicyError,
    ReplayError,
    TeamMessageError,
    TokenizerError,
    TranscriptError,
    UnknownModelError,
    chunks,
    create_builder,
    create_tokenizer,
)
from memctx.adapters import added_turns, to_anthropic, to_gemini, to_openai, to_responses
from memctx.chat import ChatAgent, ChatMessage, build_chat_context, prompt_history, select_targets
from memctx.compaction import CompactionPolicy, ExtractiveSummarizer, LLMSummarizer, compact
from memctx.compress import MaxChars, MaxChunks, TrimToolOutputs, compress
from memctx.importers import (
    from_langchain,
    import_openai_messages,
    load_anthropic_messages,
    load_openai_transcript,
    load_responses_items,
)
from memctx.policy import ClearToolUses, ContextPolicy, model_profile
from memctx.replay import replay
from memctx.team import Speaker, TeamConversation


def _state() -> MemoryState:
    return MemoryState(
        [
            chunks.system("Be brief.", id="s"),
            chunks.user("one " * 40, id="u1"),
            chunks.assistant("two " * 40, id="a1"),
            chunks.user("three", id="u2"),
        ]
    )


def _build(**options: Any) -> Any:
    return create_builder().build(_state(), **options)


def _result() -> Any:
    return _build(max_tokens=1000)


def _agents() -> list[ChatAgent]:
    return [ChatAgent("coder"), ChatAgent("reviewer")]


Case = tuple[Callable[[], object], type[MemctxError], str]

INVALID: dict[str, Case] = {
    # chunk constructors
    "user(priority='high')": (
        lambda: chunks.user("x", priority="high"),
        InvalidChunkError,
        "priority",
    ),
    "user(priority=True)": (lambda: chunks.user("x", priority=True), InvalidChunkError, "priority"),
    "user(pinned='yes')": (lambda: chunks.user("x", pinned="yes"), InvalidChunkError, "pinned"),
    "user(created_at='now')": (
        lambda: chunks.user("x", created_at="now"),
        InvalidChunkError,
        "created_at",
    ),
    "user(created_at=naive)": (
        lambda: chunks.user("x", created_at=dt.datetime(2026, 1, 1)),
        InvalidChunkError,
        "created_at",
    ),
    "user(custom=5)": (lambda: chunks.user("x", custom=5), InvalidChunkError, "custom"),
    "tool_call(status='')": (
        lambda: chunks.tool_call("t", {}, status=""),
        InvalidChunkError,
        "status",
    ),
    "tool_call(tool='')": (lambda: chunks.tool_call("", {}), InvalidChunkError, "tool"),
    "tool_result(success='no')": (
        lambda: chunks.tool_result("t", "x", success="no"),
        InvalidChunkError,
        "success",
    ),
    "skill_call(status=5)": (
        lambda: chunks.skill_call("s", {}, status=5),
        InvalidChunkError,
        "status",
    ),
    "skill_result(success=1)": (
        lambda: chunks.skill_result("s", "x", success=1),
        InvalidChunkError,
        "success",
    ),
    "subagent_result(success='yes')": (
        lambda: chunks.subagent_result("a", "x", success="yes"),
        InvalidChunkError,
        "success",
    ),
    "progress_summary(original_count=-1)": (
        lambda: chunks.progress_summary("x", original_count=-1),
        InvalidChunkError,
        "original_count",
    ),
    "progress_summary(original_count='3')": (
        lambda: chunks.progress_summary("x", original_count="3"),
        InvalidChunkError,
        "original_count",
    ),
    "image(detail='ultra')": (
        lambda: chunks.image(url="https://x/a.png", detail="ultra"),
        InvalidChunkError,
        "detail",
    ),
    "image(width=-1)": (
        lambda: chunks.image(url="https://x/a.png", width=-1),
        InvalidChunkError,
        "width",
    ),
    "image() with neither data nor url": (lambda: chunks.image(), InvalidChunkError, "data"),
    "document(pages=0)": (
        lambda: chunks.document(url="https://x/a.pdf", pages=0),
        InvalidChunkError,
        "pages",
    ),
    "document(pages='2')": (
        lambda: chunks.document(url="https://x/a.pdf", pages="2"),
        InvalidChunkError,
        "pages",
    ),
    "custom(role='robot')": (
        lambda: chunks.custom("k", "x", role="robot"),
        InvalidChunkError,
        "role",
    ),
    "custom(kind='')": (lambda: chunks.custom("", "x"), InvalidChunkError, "kind"),
    "todo_update(todos='x')": (lambda: chunks.todo_update("x"), InvalidChunkError, "todos"),
    # build options
    "max_tokens=-1": (lambda: _build(max_tokens=-1), BuildOptionError, "max_tokens"),
    "max_tokens='100'": (lambda: _build(max_tokens="100"), BuildOptionError, "max_tokens"),
    "max_tokens=1.5": (lambda: _build(max_tokens=1.5), BuildOptionError, "max_tokens"),
    "reserve_tokens=-5": (
        lambda: _build(max_tokens=100, reserve_tokens=-5),
        BuildOptionError,
        "reserve_tokens",
    ),
    "strategy='newest'": (
        lambda: _build(max_tokens=100, strategy="newest"),
        BuildOptionError,
        "strategy",
    ),
    "strategy=''": (lambda: _build(max_tokens=100, strategy=""), BuildOptionError, "strategy"),
    "include_system='no'": (
        lambda: _build(include_system="no"),
        BuildOptionError,
        "include_system",
    ),
    "include_environment=0": (
        lambda: _build(include_environment=0),
        BuildOptionError,
        "include_environment",
    ),
    "exclude_types=['NOPE']": (
        lambda: _build(exclude_types=["NOPE"]),
        BuildOptionError,
        "exclude_types",
    ),
    "exclude_types='USER'": (
        lambda: _build(exclude_types="USER"),
        BuildOptionError,
        "exclude_types",
    ),
    "pinned_chunk_ids=5": (
        lambda: _build(pinned_chunk_ids=5),
        BuildOptionError,
        "pinned_chunk_ids",
    ),
    "pinned_chunk_ids='u1'": (
        lambda: _build(pinned_chunk_ids="u1"),
        BuildOptionError,
        "pinned_chunk_ids",
    ),
    "include_only_chunk_ids=[1]": (
        lambda: _build(include_only_chunk_ids=[1]),
        BuildOptionError,
        "include_only_chunk_ids",
    ),
    "pin_newest='yes'": (lambda: _build(pin_newest="yes"), BuildOptionError, "pin_newest"),
    "pin_pending_calls=1": (
        lambda: _build(pin_pending_calls=1),
        BuildOptionError,
        "pin_pending_calls",
    ),
    "provider='bedrock'": (lambda: _build(provider="bedrock"), BuildOptionError, "provider"),
    "prefill='yes'": (
        lambda: _build(provider="anthropic", prefill="yes"),
        BuildOptionError,
        "prefill",
    ),
    "opening_turn=5": (
        lambda: _build(provider="anthropic", opening_turn=5),
        BuildOptionError,
        "opening_turn",
    ),
    "closing_turn=''": (
        lambda: _build(provider="anthropic", closing_turn=""),
        BuildOptionError,
        "closing_turn",
    ),
    "an unknown build option": (lambda: _build(max_token=10), BuildOptionError, "max_token"),
    "BuildOptions(strategy='x')": (
        lambda: BuildOptions(strategy="x"),
        BuildOptionError,
        "strategy",
    ),
    # builders and tokenizers
    "ContextBuilder(content='html')": (
        lambda: ContextBuilder(content="html"),
        ArgumentError,
        "content",
    ),
    "create_builder(content='')": (lambda: create_builder(content=""), ArgumentError, "content"),
    "create_tokenizer('')": (lambda: create_tokenizer(""), TokenizerError, "model"),
    "create_tokenizer(5)": (lambda: create_tokenizer(5), TokenizerError, "model"),
    # compressors
    "MaxChars(0)": (lambda: MaxChars(0), CompressionError, "n"),
    "MaxChars('10')": (lambda: MaxChars("10"), CompressionError, "n"),
    "MaxChunks(-1)": (lambda: MaxChunks(-1), CompressionError, "n"),
    "TrimToolOutputs(keep_recent=-1)": (
        lambda: TrimToolOutputs(keep_recent=-1),
        CompressionError,
        "keep_recent",
    ),
    "TrimToolOutputs(max_chars=0)": (
        lambda: TrimToolOutputs(max_chars=0),
        CompressionError,
        "max_chars",
    ),
    "TrimToolOutputs(tools='bash')": (
        lambda: TrimToolOutputs(tools="bash"),
        CompressionError,
        "tools",
    ),
    "compress(compressors=[5])": (lambda: compress(_state(), [5]), CompressionError, "compressor"),
    # compaction
    "CompactionPolicy(trigger=-1)": (
        lambda: CompactionPolicy(trigger=-1),
        CompactionError,
        "trigger",
    ),
    "CompactionPolicy(trigger=1.5)": (
        lambda: CompactionPolicy(trigger=1.5),
        CompactionError,
        "trigger",
    ),
    "CompactionPolicy(keep_recent=-0.1)": (
        lambda: CompactionPolicy(keep_recent=-0.1),
        CompactionError,
        "keep_recent",
    ),
    "CompactionPolicy(trigger='0.8')": (
        lambda: CompactionPolicy(trigger="0.8"),
        CompactionError,
        "trigger",
    ),
    "CompactionPolicy.apply(budget=0)": (
        lambda: CompactionPolicy().apply(_state(), ExtractiveSummarizer(), budget=0),
        CompactionError,
        "budget",
    ),
    "CompactionPolicy.apply(budget='5')": (
        lambda: CompactionPolicy(100, 10).apply(_state(), ExtractiveSummarizer(), budget="5"),
        CompactionError,
        "budget",
    ),
    "ExtractiveSummarizer(max_chars=0)": (
        lambda: ExtractiveSummarizer(max_chars=0),
        CompactionError,
        "max_chars",
    ),
    "ExtractiveSummarizer(max_done=-1)": (
        lambda: ExtractiveSummarizer(max_done=-1),
        CompactionError,
        "max_done",
    ),
    "ExtractiveSummarizer(recall_hint='yes')": (
        lambda: ExtractiveSummarizer(recall_hint="yes"),
        CompactionError,
        "recall_hint",
    ),
    "LLMSummarizer(complete=5)": (lambda: LLMSummarizer(5), CompactionError, "complete"),
    "LLMSummarizer(max_tokens=0)": (
        lambda: LLMSummarizer(lambda m: "x", max_tokens=0),
        CompactionError,
        "max_tokens",
    ),
    "compact(keep_recent_tokens=-1)": (
        lambda: compact(_state(), ExtractiveSummarizer(), keep_recent_tokens=-1),
        CompactionError,
        "keep_recent_tokens",
    ),
    "compact(keep_recent_tokens='10')": (
        lambda: compact(_state(), ExtractiveSummarizer(), keep_recent_tokens="10"),
        CompactionError,
        "keep_recent_tokens",
    ),
    "compact(summarizer=5)": (
        lambda: compact(_state(), 5, keep_recent_tokens=0),
        CompactionError,
        "summarizer",
    ),
    # adapters
    "to_openai(tools='both')": (lambda: to_openai(_result(), tools="both"), AdapterError, "tools"),
    "to_responses(tools='')": (lambda: to_responses(_result(), tools=""), AdapterError, "tools"),
    "to_anthropic(cache='yes')": (
        lambda: to_anthropic(_result(), cache="yes"),
        AdapterError,
        "cache",
    ),
    "to_anthropic(prefill=1)": (
        lambda: to_anthropic(_result(), prefill=1),
        AdapterError,
        "prefill",
    ),
    "to_anthropic(tool_definitions='x')": (
        lambda: to_anthropic(_result(), tool_definitions="x"),
        AdapterError,
        "tool_definitions",
    ),
    "to_gemini(opening_turn=5)": (
        lambda: to_gemini(_result(), opening_turn=5),
        AdapterError,
        "opening_turn",
    ),
    "to_gemini(config=5)": (lambda: to_gemini(_result(), config=5), AdapterError, "config"),
    "added_turns(provider='x')": (lambda: added_turns(["user"], "x"), AdapterError, "provider"),
    "added_turns(prefill='yes')": (
        lambda: added_turns(["user"], "anthropic", prefill="yes"),
        AdapterError,
        "prefill",
    ),
    "added_turns(closing_turn=' ')": (
        lambda: added_turns(["user"], "gemini", closing_turn=" "),
        AdapterError,
        "closing_turn",
    ),
    # importers
    "anthropic unknown_roles='drop'": (
        lambda: load_anthropic_messages([], unknown_roles="drop"),
        ArgumentError,
        "unknown_roles",
    ),
    "import_openai_messages(unknown_roles=None)": (
        lambda: import_openai_messages([], unknown_roles=None),
        ArgumentError,
        "unknown_roles",
    ),
    "responses pin_task='no'": (
        lambda: load_responses_items([], pin_task="no"),
        ArgumentError,
        "pin_task",
    ),
    "langchain pin_task=None": (
        lambda: from_langchain([], pin_task=None),
        ArgumentError,
        "pin_task",
    ),
    "importer thread_id=''": (
        lambda: load_openai_transcript([], thread_id=""),
        ArgumentError,
        "thread_id",
    ),
    # team
    "Speaker('')": (lambda: Speaker(""), TeamMessageError, "roleId"),
    "Speaker(type='robot')": (lambda: Speaker("u", type="robot"), TeamMessageError, "type"),
    "TeamConversation(window_size=-1)": (
        lambda: TeamConversation(window_size=-1),
        BuildOptionError,
        "window_size",
    ),
    "TeamConversation(max_bytes=-1)": (
        lambda: TeamConversation(max_bytes=-1),
        BuildOptionError,
        "max_bytes",
    ),
    "TeamConversation(window_size='5')": (
        lambda: TeamConversation(window_size="5"),
        BuildOptionError,
        "window_size",
    ),
    # chat
    "ChatAgent('')": (lambda: ChatAgent(""), ChatError, "id"),
    "ChatMessage(role='robot')": (lambda: ChatMessage("robot", "x"), ChatError, "role"),
    "prompt_history(window=-1)": (lambda: prompt_history([], window=-1), ChatError, "window"),
    "build_chat_context(mode='party')": (
        lambda: build_chat_context("hi", [], _agents(), "party"),
        ChatError,
        "mode",
    ),
    "build_chat_context(window='20')": (
        lambda: build_chat_context("hi", [], _agents(), "free_chat", window="20"),
        ChatError,
        "window",
    ),
    "select_targets(mode='')": (lambda: select_targets("", None, _agents()), ChatError, "mode"),
    # policy
    "ContextPolicy(model='gpt-9')": (lambda: ContextPolicy("gpt-9"), UnknownModelError, "gpt-9"),
    "ContextPolicy(reserve_tokens=-1)": (
        lambda: ContextPolicy(reserve_tokens=-1),
        PolicyError,
        "reserve_tokens",
    ),
    "ContextPolicy(max_tokens=0)": (lambda: ContextPolicy(max_tokens=0), PolicyError, "max_tokens"),
    "ContextPolicy(strategy='x')": (lambda: ContextPolicy(strategy="x"), PolicyError, "strategy"),
    "ContextPolicy(tools='x')": (lambda: ContextPolicy(tools="x"), PolicyError, "tools"),
    "ContextPolicy(compaction=5)": (lambda: ContextPolicy(compaction=5), PolicyError, "compaction"),
    "ClearToolUses(keep_recent=-1)": (
        lambda: ClearToolUses(keep_recent=-1),
        PolicyError,
        "keep_recent",
    ),
    "ClearToolUses(clear_inputs='yes')": (
        lambda: ClearToolUses(clear_inputs="yes"),
        PolicyError,
        "clear_inputs",
    ),
    "ClearToolUses(trigger=0)": (lambda: ClearToolUses(trigger=0), PolicyError, "trigger"),
    "ClearToolUses(exclude_tools='bash')": (
        lambda: ClearToolUses(exclude_tools="bash"),
        PolicyError,
        "exclude_tools",
    ),
    "model_profile('nope')": (lambda: model_profile("nope"), UnknownModelError, "nope"),
    # replay
    "replay(policy_or_strategy='fastest')": (
        lambda: replay(_state(), "fastest", model="claude-sonnet-4-6"),
        ReplayError,
        "fastest",
    ),
    "replay(max_tokens=-1)": (
        lambda: replay(_state(), "stable", model="claude-sonnet-4-6", max_tokens=-1),
        ReplayError,
        "max_tokens",
    ),
    "replay(model='x')": (lambda: replay(_state(), "stable", model="x"), UnknownModelError, "'x'"),
    # transcripts as given
    "transcript of a string": (lambda: load_openai_transcript("x"), TranscriptError, ""),
}


def one_line(error: BaseException) -> str:
    text = str(error)
    assert text.strip(), "the error has no message"
    assert "\n" not in text, "the error is not one line"
    return text


class TestInvalidOptionValues:
    @pytest.mark.parametrize("case", list(INVALID))
    def test_an_invalid_value_is_refused_with_its_error(self, case: str) -> None:
        call, error, names = INVALID[case]

        with pytest.raises(MemctxError) as caught:
            call()

        assert isinstance(caught.value, error), f"{type(caught.value).__name__}: {caught.value}"
        assert re.search(re.escape(names), one_line(caught.value))
