"""MemctxSession with the real OpenAI Agents SDK (its ScriptedModel stands in for the API)."""

from __future__ import annotations

import asyncio
import runpy
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("agents")

from agents import Agent, RunConfig, Runner
from agents.memory import Session
from agents.testing import ScriptedModel, assistant_message

from memctx import BuildOptionError, StoreArgumentError, TranscriptError, create_tokenizer
from memctx.integrations.openai_agents import ITEM_KEY, MemctxSession
from memctx.store import MemoryStore

ROOT = Path(__file__).parent.parent.parent

CALL = {
    "type": "function_call",
    "call_id": "c1",
    "name": "read_file",
    "arguments": '{"path": "a.py"}',
}
OUTPUT = {"type": "function_call_output", "call_id": "c1", "output": "x = 1\n" * 200}


@pytest.fixture
def store(tmp_path: Path) -> Any:
    with MemoryStore.open(tmp_path / "agents.db") as opened:
        yield opened


def run(coro: Any) -> Any:
    return asyncio.run(coro)


class TestBadSettings:
    @pytest.mark.parametrize(
        ("options", "error"),
        [
            ({"max_tokens": -1}, "max_tokens"),
            ({"tokenizer": "gpt-4o"}, "tokenizer"),
            ({"strategy": "nope"}, "strategy"),
            ({"input": "nope"}, "input"),
        ],
    )
    def test_are_refused_when_the_session_is_made_and_nothing_is_written(
        self, store: MemoryStore, options: dict[str, Any], error: str
    ) -> None:
        with pytest.raises(BuildOptionError, match=error):
            MemctxSession("s", store, **options)
        assert not store.has_thread("s")

    @pytest.mark.parametrize("limit", [-1, "1", 1.5])
    def test_a_limit_that_is_not_a_count_is_refused(
        self, store: MemoryStore, limit: object
    ) -> None:
        session = MemctxSession("s", store)

        with pytest.raises(BuildOptionError, match="limit"):
            asyncio.run(session.get_items(limit=limit))  # type: ignore[arg-type]

    def test_an_item_that_is_not_an_object_is_refused_and_nothing_is_stored(
        self, store: MemoryStore
    ) -> None:
        session = MemctxSession("s", store)

        with pytest.raises(TranscriptError, match="must be an object"):
            asyncio.run(session.add_items([{"role": "user", "content": "hi"}, "x"]))  # type: ignore[list-item]
        assert asyncio.run(session.get_items()) == []

    def test_a_url_instead_of_a_store_is_refused(self) -> None:
        with pytest.raises(StoreArgumentError, match=r"MemoryStore\.open"):
            MemctxSession("s", "sqlite:///agents.db")  # type: ignore[arg-type]


class TestSessionProtocol:
    def test_is_an_agents_sdk_session(self, store: MemoryStore) -> None:
        assert isinstance(MemctxSession("s", store), Session)

    def test_items_come_back_as_they_were_added(self, store: MemoryStore) -> None:
        session = MemctxSession("s", store)
        items = [
            {"role": "user", "content": "hi"},
            CALL,
            OUTPUT,
            {
                "role": "assistant",
                "content": [{"type": "output_text", "text": "ok"}],
                "type": "message",
            },
        ]

        run(session.add_items(items))

        assert run(session.get_items()) == items
        assert run(session.get_items(limit=2)) == items[-2:]
        chunk = store.get_all_chunks("s")[2]
        assert (chunk.action, chunk.metadata.tool, chunk.metadata.call_id) == (
            "tool_result",
            "read_file",
            "c1",
        )
        assert chunk.metadata.custom[ITEM_KEY]["output"] == OUTPUT["output"]

    def test_an_output_added_later_is_named_after_its_call(self, store: MemoryStore) -> None:
        session = MemctxSession("s", store)
        run(session.add_items([CALL]))
        run(session.add_items([OUTPUT]))

        assert store.get_all_chunks("s")[1].metadata.tool == "read_file"

    def test_history_is_fitted_into_the_budget_keeping_calls_with_outputs(
        self, store: MemoryStore
    ) -> None:
        tokenizer = create_tokenizer("gpt-4o")
        session = MemctxSession("s", store, max_tokens=120, tokenizer=tokenizer)
        run(
            session.add_items(
                [
                    {"role": "user", "content": "read a.py"},
                    CALL,
                    OUTPUT,
                    {"role": "user", "content": "thanks"},
                ]
            )
        )

        items = run(session.get_items())

        assert items == [{"role": "user", "content": "thanks"}]
        report = session.last_result
        assert report is not None
        assert report.token_count <= 120
        assert len(report.excluded_chunk_ids) == 3

    def test_messages_input_is_what_memctx_built(self, store: MemoryStore) -> None:
        session = MemctxSession("s", store, input="messages", system_prompt="Be brief.")
        run(session.add_items([{"role": "user", "content": "hi"}]))

        items = run(session.get_items())

        assert items[0] == {"role": "system", "content": "Be brief.\n"}
        assert items[1]["role"] == "user"
        assert "<user_message" in items[1]["content"]

    def test_pop_and_clear_hide_items_but_the_history_keeps_them(self, store: MemoryStore) -> None:
        session = MemctxSession("s", store)
        run(session.add_items([{"role": "user", "content": "a"}, {"role": "user", "content": "b"}]))

        assert run(session.pop_item()) == {"role": "user", "content": "b"}
        assert run(session.get_items()) == [{"role": "user", "content": "a"}]
        run(session.clear_session())
        assert run(session.get_items()) == []
        assert run(session.pop_item()) is None

        assert len(store.get_all_chunks("s")) == 2
        store.rollback("s", 0)
        assert len(run(session.get_items())) == 2


class TestWithTheRunner:
    def test_a_run_sends_the_fitted_history_and_saves_the_turn(self, store: MemoryStore) -> None:
        model = ScriptedModel([[assistant_message("first")], [assistant_message("second")]])
        agent = Agent(name="a", instructions="Be terse.", model=model)
        session = MemctxSession("s", store, max_tokens=60, tokenizer=create_tokenizer("gpt-4o"))
        config = RunConfig(tracing_disabled=True)

        run(Runner.run(agent, "one " * 30, session=session, run_config=config))
        run(Runner.run(agent, "two", session=session, run_config=config))

        second = model.calls[1].input
        assert isinstance(second, list)
        texts = [str(item.get("content")) for item in second]
        assert not any("one one" in t for t in texts)  # the long question no longer fits
        assert any("first" in t for t in texts)
        assert texts[-1] == "two"
        assert len(store.get_all_chunks("s")) == 4


def test_the_example_runs_offline(capsys: pytest.CaptureFixture[str]) -> None:
    outcome = runpy.run_path(str(ROOT / "examples" / "openai_agents_session.py"))["main"]()

    out = capsys.readouterr().out
    assert "Done: retries is 5." in out
    assert outcome["stored"] == 8
    last_input = outcome["calls"][-1].input
    assert not any(item.get("type") == "function_call" for item in last_input)
