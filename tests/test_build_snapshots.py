"""Snapshots of full builds of a realistic coding-agent state.

Each ``.txt`` file in ``snapshots/tests/test_build_snapshots/`` holds the build report
(summary, then every chunk: included or excluded, its tokens, why it was left out) and
the messages exactly as they would be sent. Budgets and tokenizers vary so a reviewer
sees what each keeps. Regenerate with
``uv run pytest tests/test_build_snapshots.py --snapshot-update`` and review the diff.
"""

from __future__ import annotations

import datetime as dt

import pytest

from memctx import ChunkType, ContextBuilder, MemoryState, chunks, create_builder, create_tokenizer
from memctx.snapshot import ContextSnapshot

START = dt.datetime(2026, 1, 2, 9, 0, 0, tzinfo=dt.UTC)
SYSTEM_PROMPT = "You are a coding agent. Answer with tool calls until the task is done."


def at(minute: int) -> dt.datetime:
    return START + dt.timedelta(minutes=minute)


def example_state() -> MemoryState:
    """A coding agent fixes a bug: reads a file, asks a researcher, compacts, completes."""
    return MemoryState(
        [
            chunks.system(
                "Repository: webapp (TypeScript). Run `npm test` before declaring success.",
                id="chunk_01", created_at=at(0),
            ),
            chunks.user(
                "The login form crashes on submit. Find the cause and fix it.",
                id="chunk_02", created_at=at(1),
            ),
            chunks.progress_summary(
                "## Progress Summary\n### Completed Actions\n"
                "- Listed src/ and found the login module\n"
                "- Reproduced the crash: the page reloads before the request finishes",
                original_count=8, compacted_at=at(9), id="chunk_03", created_at=at(9),
            ),
            chunks.thinking(
                "The reload suggests the submit event is not cancelled. Read the handler.",
                id="chunk_04", created_at=at(10),
            ),
            chunks.todo_update(
                [
                    {"content": "Read the submit handler", "status": "in_progress"},
                    {"content": "Fix the handler", "status": "pending"},
                    {"content": "Run npm test", "status": "pending"},
                ],
                id="chunk_05", created_at=at(10),
            ),
            chunks.tool_call(
                "read_file", {"path": "src/login.ts"}, call_id="call_1", status="completed",
                id="chunk_06", created_at=at(11),
            ),
            chunks.tool_result(
                "read_file",
                "export async function onSubmit(event: SubmitEvent) {\n"
                "  const form = event.target as HTMLFormElement;\n"
                "  await api.login(new FormData(form));\n"
                "}\n",
                call_id="call_1", id="chunk_07", created_at=at(11),
            ),
            chunks.spawn_subagent(
                "agent_research", "researcher",
                "Is calling preventDefault() after an await too late for SubmitEvent?",
                id="chunk_08", created_at=at(12),
            ),
            chunks.subagent_result(
                "agent_research",
                {"answer": "Yes: the default action runs once the handler yields.",
                 "source": "HTML spec, form submission algorithm"},
                id="chunk_09", created_at=at(15),
            ),
            chunks.tool_call(
                "edit_file",
                {"path": "src/login.ts", "insert_after_line": 1,
                 "text": "  event.preventDefault();"},
                call_id="call_2", status="completed", id="chunk_10", created_at=at(16),
            ),
            chunks.tool_result(
                "edit_file", "Applied 1 edit to src/login.ts", call_id="call_2",
                id="chunk_11", created_at=at(16),
            ),
            chunks.assistant(
                "Fixed: onSubmit now calls event.preventDefault() before awaiting the login.",
                id="chunk_12", created_at=at(17),
            ),
            chunks.task_completed(
                "onSubmit cancels the native submit before awaiting api.login",
                summary="Login form no longer reloads the page on submit",
                id="chunk_13", created_at=at(17),
            ),
        ],
        thread_id="thread_example",
    )  # fmt: skip


# 300 keeps only the latest steps; at 550 the chars/4 estimate keeps one chunk more than
# the exact encodings; unlimited keeps everything.
BUDGETS = {"budget_300": 300, "budget_550": 550, "unlimited": None}
TOKENIZERS = ("gpt-4o", "gpt-4", "estimate")


@pytest.fixture
def state() -> MemoryState:
    """A fresh state per test: renderings and counts are memoised on the chunks."""
    return example_state()


@pytest.fixture
def fresh_builder() -> ContextBuilder:
    return create_builder()


@pytest.mark.parametrize("budget", list(BUDGETS))
@pytest.mark.parametrize("model", TOKENIZERS)
def test_build(
    model: str,
    budget: str,
    state: MemoryState,
    fresh_builder: ContextBuilder,
    context_snapshot: ContextSnapshot,
) -> None:
    """The example state under each tokenizer and budget: report and messages."""
    tokenizer = create_tokenizer(model)
    result = fresh_builder.build(
        state, max_tokens=BUDGETS[budget], tokenizer=tokenizer, system_prompt=SYSTEM_PROMPT
    )
    assert result.token_count == tokenizer.count_messages(result.messages)
    assert context_snapshot == result


def test_build_pinning_the_task(
    state: MemoryState, fresh_builder: ContextBuilder, context_snapshot: ContextSnapshot
) -> None:
    """Pinning the user's task keeps it when the budget drops older chunks."""
    result = fresh_builder.build(
        state,
        max_tokens=550,
        tokenizer=create_tokenizer("gpt-4o"),
        system_prompt=SYSTEM_PROMPT,
        pinned_chunk_ids=["chunk_02"],
    )
    assert "chunk_02" in result.included_chunk_ids
    assert context_snapshot == result


def test_build_with_filters(
    state: MemoryState, fresh_builder: ContextBuilder, context_snapshot: ContextSnapshot
) -> None:
    """Options that filter chunks show up in the report with the option's name."""
    result = fresh_builder.build(
        state,
        max_tokens=800,
        tokenizer=create_tokenizer("gpt-4o"),
        include_environment=False,
        exclude_types=[ChunkType.OUTPUT],
    )
    assert set(result.excluded_chunk_ids) >= {"chunk_07", "chunk_11", "chunk_13"}
    assert context_snapshot == result


def test_messages_only(
    state: MemoryState, fresh_builder: ContextBuilder, context_snapshot: ContextSnapshot
) -> None:
    """A plain list of messages snapshots without the report."""
    result = fresh_builder.build(state, tokenizer=create_tokenizer("gpt-4o"))
    assert context_snapshot == list(result.messages)
