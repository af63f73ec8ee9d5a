"""The Agents SDK's own Session contract, held by MemctxSession.

An adaptation of the intent of the SDK's session tests (``tests/memory/test_session.py``
and ``tests/memory/test_session_limit.py`` of openai-agents-python, the newest snapshot
available here: after the 0.22.1 release, with ``agents.testing.ScriptedModel``; the
installed SDK is 0.24.0 and its source distribution ships no tests) run against
``MemctxSession`` where they use ``SQLiteSession``. Each test below names the SDK test
it stands for; the Runner tests run with ``Runner.run``, ``Runner.run_sync`` and
``Runner.run_streamed`` as there.

Of the SDK's 68 collected tests, 54 apply and are adapted here; 14 are left out because
they test SQLiteSession's own SQLite internals, which a memctx store does not have:

- ``test_await_mutation_cancellation_hides_later_failure_without_loop_error``: the SDK's
  private ``_await_mutation`` helper, not a session.
- ``test_sqlite_session_close_closes_worker_thread_connections``: SQLiteSession's
  per-thread ``sqlite3`` connections (``session._connections``).
- ``test_sqlite_session_pop_item_skips_corrupt_most_recent``,
  ``test_sqlite_session_pop_item_returns_none_after_dropping_only_corrupt_rows``,
  ``test_sqlite_session_get_items_limit_skips_corrupt_newest_rows``,
  ``test_sqlite_session_get_items_session_settings_limit_skips_corrupt_rows``: write
  invalid JSON rows straight into SQLiteSession's ``agent_messages`` table; a store
  thread holds validated chunks and cannot hold such a row.
- ``test_sqlite_session_file_lock_is_shared_across_instances``: SQLiteSession's
  process-wide file lock registry (``_file_locks``, ``_file_lock_counts``).
- ``test_sqlite_session_failed_clear_session_rolls_back``,
  ``test_sqlite_session_failed_pop_item_releases_write_lock``: drop SQLiteSession's
  tables behind its back and inspect its cached connections' transactions.
- ``test_sqlite_session_rollback_failure_evicts_connection``,
  ``test_sqlite_session_close_retries_quarantined_connection``: inject a failing
  ``sqlite3.Connection`` subclass into SQLiteSession's connection cache.
- ``test_sqlite_session_post_commit_cancellation_propagates_after_known_outcome``
  (3 cases: add, pop, clear): pause inside a patched ``sqlite3.Connection.commit``.

``test_sqlite_session_failed_add_items_releases_write_lock`` is kept for its intent (a
non-JSON item raises ``TypeError``, nothing is written, the session stays usable) without
its probe of SQLite's write lock.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, cast

import pytest

pytest.importorskip("agents")

from agents import Agent, RunConfig, Runner, TResponseInputItem
from agents.memory import SessionSettings
from agents.testing import ScriptedModel, assistant_message

from memctx import (
    ItemNotJSONError,
    MemctxError,
    SessionClosedError,
    SessionSettingsError,
)
from memctx.integrations.openai_agents import MemctxSession
from memctx.store import MemoryStore

RUNNERS = ["run", "run_sync", "run_streamed"]
NO_TRACING = RunConfig(tracing_disabled=True)


@pytest.fixture
def store(tmp_path: Path) -> Iterator[MemoryStore]:
    with MemoryStore.open(tmp_path / "sessions.db") as opened:
        yield opened


@pytest.fixture
def new_session(store: MemoryStore) -> Callable[..., MemctxSession]:
    def make(session_id: str = "s", **options: Any) -> MemctxSession:
        return MemctxSession(session_id, store, **options)

    return make


def run_agent(method: str, agent: Agent[Any], given: Any, **options: Any) -> Any:
    """Run ``agent`` the way ``method`` names, to its end (a stream consumed whole)."""
    options.setdefault("run_config", NO_TRACING)
    if method == "run":
        return asyncio.run(Runner.run(agent, given, **options))
    if method == "run_sync":  # on a loop of its own, closed after (as the SDK's tests do)
        loop = asyncio.new_event_loop()
        asyncio.set_event_loop(loop)
        try:
            return Runner.run_sync(agent, given, **options)
        finally:
            asyncio.set_event_loop(None)
            loop.close()

    async def streamed() -> Any:
        result = Runner.run_streamed(agent, given, **options)
        async for _event in result.stream_events():
            pass
        return result

    return asyncio.run(streamed())


def scripted(*answers: str) -> tuple[ScriptedModel, Agent[Any]]:
    model = ScriptedModel([[assistant_message(a)] for a in answers])
    return model, Agent(name="test", model=model)


def items_of(session: MemctxSession, limit: int | None = None) -> list[Any]:
    return asyncio.run(session.get_items(limit))


def add(session: MemctxSession, items: list[Any]) -> None:
    asyncio.run(session.add_items(items))


def contents(items: list[Any]) -> list[Any]:
    return [item.get("content") for item in items]


def messages(*texts: str, roles: tuple[str, ...] = ("user",)) -> list[TResponseInputItem]:
    return [
        cast(TResponseInputItem, {"role": roles[i % len(roles)], "content": text})
        for i, text in enumerate(texts)
    ]


class TestWithTheRunner:
    """test_session_memory_*_parametrized and test_session_memory_appends_* (SDK)."""

    @pytest.mark.parametrize("method", RUNNERS)
    def test_a_second_turn_is_sent_the_first(
        self, method: str, new_session: Callable[..., MemctxSession]
    ) -> None:
        """test_session_memory_basic_functionality_parametrized"""
        session = new_session("basic")
        model, agent = scripted("San Francisco", "California")

        first = run_agent(method, agent, "Where is the Golden Gate Bridge?", session=session)
        second = run_agent(method, agent, "What state is it in?", session=session)

        assert (first.final_output, second.final_output) == ("San Francisco", "California")
        assert len(model.calls[-1].input) > 1

    @pytest.mark.parametrize("method", RUNNERS)
    def test_an_explicit_session_answers_in_turn(
        self, method: str, new_session: Callable[..., MemctxSession]
    ) -> None:
        """test_session_memory_with_explicit_instance_parametrized"""
        session = new_session("explicit")
        _, agent = scripted("Hello", "I remember you said hi")

        assert run_agent(method, agent, "Hi there", session=session).final_output == "Hello"
        again = run_agent(method, agent, "Do you remember?", session=session)
        assert again.final_output == "I remember you said hi"

    @pytest.mark.parametrize("method", RUNNERS)
    def test_without_a_session_nothing_is_remembered(self, method: str) -> None:
        """test_session_memory_disabled_parametrized"""
        model, agent = scripted("Hello", "I don't remember")

        run_agent(method, agent, "Hi there")
        run_agent(method, agent, "Do you remember what I said?")

        assert len(model.calls[-1].input) == 1

    @pytest.mark.parametrize("method", RUNNERS)
    def test_sessions_keep_their_own_histories(
        self, method: str, new_session: Callable[..., MemctxSession]
    ) -> None:
        """test_session_memory_different_sessions_parametrized"""
        cats, dogs = new_session("cats"), new_session("dogs")
        model, agent = scripted("Cats then.", "Dogs then.", "You mentioned cats.")

        run_agent(method, agent, "I like cats", session=cats)
        run_agent(method, agent, "I like dogs", session=dogs)
        result = run_agent(method, agent, "What do I like?", session=cats)

        assert result.final_output == "You mentioned cats."
        sent = str(model.calls[-1].input)
        assert "I like cats" in sent
        assert "I like dogs" not in sent

    @pytest.mark.parametrize("method", RUNNERS)
    def test_a_list_input_is_appended_to_the_history(
        self, method: str, new_session: Callable[..., MemctxSession]
    ) -> None:
        """test_session_memory_appends_list_input_by_default"""
        session = new_session("list")
        history = messages("Earlier message", "Saved reply", roles=("user", "assistant"))
        add(session, history)
        model, agent = scripted("This should run")
        given = messages("Test message")

        run_agent(method, agent, given, session=session)

        assert model.calls[-1].input == history + given

    @pytest.mark.parametrize("method", RUNNERS)
    def test_an_input_callback_chooses_the_history_sent(
        self, method: str, new_session: Callable[..., MemctxSession]
    ) -> None:
        """test_session_callback_prepared_input"""
        session = new_session("callback")
        history = messages("Hello there.", "Hi, I'm here.", roles=("user", "assistant"))
        add(session, history)
        model, agent = scripted("I'm a model")
        given = messages("What is your name?")

        def users_only(old: list[Any], new: list[Any]) -> list[Any]:
            return [item for item in old if item["role"] == "user"] + new

        config = RunConfig(session_input_callback=users_only, tracing_disabled=True)
        run_agent(method, agent, given, session=session, run_config=config)

        assert model.calls[-1].input == [history[0], given[0]]

    @pytest.mark.parametrize("method", RUNNERS)
    def test_a_callback_repeating_history_does_not_store_it_again(
        self, method: str, new_session: Callable[..., MemctxSession]
    ) -> None:
        """test_session_callback_repeating_history_does_not_grow_session"""
        session = new_session("repeat")
        _, agent = scripted("assistant 0", "assistant 1", "assistant 2")

        def repeat_first(old: list[Any], new: list[Any]) -> list[Any]:
            return [*old, old[0], *new] if old else new

        config = RunConfig(session_input_callback=repeat_first, tracing_disabled=True)
        for turn in range(3):
            run_agent(method, agent, f"user {turn}", session=session, run_config=config)

        stored = items_of(session)
        assert [i.get("content") for i in stored if i.get("role") == "user"] == [
            "user 0",
            "user 1",
            "user 2",
        ]
        assert len(stored) == 6

    def test_a_failing_add_items_reaches_a_streamed_run(
        self, new_session: Callable[..., MemctxSession]
    ) -> None:
        """test_session_add_items_exception_propagates_in_streamed"""
        session = new_session("failing")

        async def failing(_items: list[Any]) -> None:
            raise RuntimeError("add_items failed")

        session.add_items = failing  # type: ignore[method-assign]
        _, agent = scripted("never sent")

        async def consume() -> None:
            result = Runner.run_streamed(agent, "Hello", session=session, run_config=NO_TRACING)
            async for _event in result.stream_events():
                pass

        with pytest.raises(RuntimeError, match="add_items failed"):
            asyncio.run(asyncio.wait_for(consume(), timeout=5.0))


class TestItems:
    """The direct session tests (SDK: test_sqlite_session_memory_direct and the rest)."""

    def test_items_come_back_and_clear_empties_the_session(
        self, new_session: Callable[..., MemctxSession]
    ) -> None:
        """test_sqlite_session_memory_direct"""
        session = new_session()
        add(session, messages("Hello", "Hi there!", roles=("user", "assistant")))

        got = items_of(session)
        assert [(i.get("role"), i.get("content")) for i in got] == [
            ("user", "Hello"),
            ("assistant", "Hi there!"),
        ]
        asyncio.run(session.clear_session())
        assert items_of(session) == []

    def test_pop_item_takes_the_newest_until_none_is_left(
        self, new_session: Callable[..., MemctxSession]
    ) -> None:
        """test_sqlite_session_memory_pop_item"""
        session = new_session()
        assert asyncio.run(session.pop_item()) is None
        add(session, messages("Hello", "Hi there!", "How are you?", roles=("user", "assistant")))

        popped = [asyncio.run(session.pop_item()) for _ in range(3)]

        assert contents(cast(list[Any], popped)) == ["How are you?", "Hi there!", "Hello"]
        assert asyncio.run(session.pop_item()) is None
        assert items_of(session) == []

    def test_pop_item_touches_its_own_session_only(
        self, new_session: Callable[..., MemctxSession]
    ) -> None:
        """test_session_memory_pop_different_sessions"""
        one, two = new_session("one"), new_session("two")
        add(one, messages("Session 1 message"))
        add(two, messages("Session 2 message 1", "Session 2 message 2"))

        assert cast(dict[str, Any], asyncio.run(two.pop_item()))["content"] == (
            "Session 2 message 2"
        )
        assert contents(items_of(one)) == ["Session 1 message"]
        assert contents(items_of(two)) == ["Session 2 message 1"]

    def test_a_limit_returns_the_newest_items_in_order(
        self, new_session: Callable[..., MemctxSession]
    ) -> None:
        """test_sqlite_session_get_items_with_limit"""
        session = new_session()
        texts = [f"{kind} {n}" for n in (1, 2, 3) for kind in ("Message", "Response")]
        add(session, messages(*texts, roles=("user", "assistant")))

        assert contents(items_of(session)) == texts
        assert contents(items_of(session, 2)) == texts[-2:]
        assert contents(items_of(session, 4)) == texts[-4:]
        assert contents(items_of(session, 10)) == texts
        assert items_of(session, 0) == []

    def test_unicode_is_kept(self, new_session: Callable[..., MemctxSession]) -> None:
        """test_sqlite_session_unicode_content"""
        session = new_session()
        texts = ["こんにちは", "😊👍", "Привет"]
        add(session, messages(*texts, roles=("user", "assistant")))

        assert contents(items_of(session)) == texts

    def test_sql_and_quotes_are_kept_as_text(
        self, new_session: Callable[..., MemctxSession]
    ) -> None:
        """test_sqlite_session_special_characters_and_sql_injection"""
        session = new_session()
        texts = [
            "O'Reilly",
            "DROP TABLE sessions;",
            '"SELECT * FROM users WHERE name = "admin";"',
            "Robert'); DROP TABLE students;--",
            "Normal message",
        ]
        add(session, messages(*texts, roles=("user", "assistant")))

        assert contents(items_of(session)) == texts

    def test_writes_from_several_threads_all_land(
        self, new_session: Callable[..., MemctxSession]
    ) -> None:
        """test_sqlite_session_concurrent_access"""
        session = new_session()
        texts = [f"Message {i}" for i in range(10)]
        threads = [threading.Thread(target=add, args=(session, messages(text))) for text in texts]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()

        assert set(contents(items_of(session))) == set(texts)

    def test_a_non_json_item_raises_type_error_and_writes_nothing(
        self, new_session: Callable[..., MemctxSession], store: MemoryStore
    ) -> None:
        """test_sqlite_session_failed_add_items_releases_write_lock (its intent)"""
        session = new_session()
        unstorable = cast(TResponseInputItem, {"role": "user", "content": object()})

        with pytest.raises(TypeError, match=r"items\[1\]\.content"):
            add(session, [*messages("first"), unstorable])
        assert not store.has_thread("s") or store.get_all_chunks("s") == []

        add(session, messages("after failure"))
        assert contents(items_of(session)) == ["after failure"]


class TestClosed:
    def test_an_empty_add_is_refused_too(self, new_session: Callable[..., MemctxSession]) -> None:
        """test_sqlite_session_closed_rejects_empty_add_items"""
        session = new_session()
        session.close()

        with pytest.raises(RuntimeError, match="is closed"):
            asyncio.run(session.add_items([]))


class TestSessionSettings:
    """The SessionSettings tests of test_session.py."""

    def test_default_to_empty_settings(self, new_session: Callable[..., MemctxSession]) -> None:
        """test_session_settings_default"""
        settings = new_session().session_settings

        assert isinstance(settings, SessionSettings)
        assert settings.limit is None

    def test_are_taken_from_the_constructor(
        self, new_session: Callable[..., MemctxSession]
    ) -> None:
        """test_session_settings_constructor"""
        settings = new_session(session_settings=SessionSettings(limit=5)).session_settings

        assert settings is not None
        assert settings.limit == 5

    def test_a_dict_is_normalised(self, new_session: Callable[..., MemctxSession]) -> None:
        """test_session_settings_constructor_normalizes_dictionary"""
        settings = new_session(session_settings={"limit": 0}).session_settings

        assert isinstance(settings, SessionSettings)
        assert settings.limit == 0
        assert settings.resolve({"limit": 4}).limit == 4

    def test_unknown_keys_are_refused(self, new_session: Callable[..., MemctxSession]) -> None:
        """test_session_settings_rejects_unknown_dictionary_fields"""
        with pytest.raises(TypeError, match="Unknown session settings: limitt"):
            new_session(session_settings={"limitt": 1})

    def test_their_limit_is_the_default_of_get_items(
        self, new_session: Callable[..., MemctxSession]
    ) -> None:
        """test_get_items_uses_session_settings_limit"""
        session = new_session(session_settings=SessionSettings(limit=3))
        add(session, messages(*(f"Message {i}" for i in range(5))))

        assert contents(items_of(session)) == ["Message 2", "Message 3", "Message 4"]

    def test_an_explicit_limit_wins(self, new_session: Callable[..., MemctxSession]) -> None:
        """test_get_items_explicit_limit_overrides_session_settings"""
        session = new_session(session_settings=SessionSettings(limit=5))
        add(session, messages(*(f"Message {i}" for i in range(10))))

        assert contents(items_of(session, 2)) == ["Message 8", "Message 9"]

    def test_resolve_overlays_what_is_set(self) -> None:
        """test_session_settings_resolve (SessionSettings alone)"""
        base = SessionSettings(limit=100)

        assert base.resolve(SessionSettings(limit=50)).limit == 50
        assert base.limit == 100
        assert base.resolve(None).limit == 100

    def test_a_run_config_overrides_the_sessions(
        self, new_session: Callable[..., MemctxSession]
    ) -> None:
        """test_runner_with_session_settings_override"""
        session = new_session(session_settings=SessionSettings(limit=100))
        add(session, messages(*(f"Turn {i}" for i in range(10))))
        model, agent = scripted("Got it")

        config = RunConfig(session_settings=SessionSettings(limit=2), tracing_disabled=True)
        run_agent("run", agent, "New question", session=session, run_config=config)

        history = [i for i in model.calls[-1].input if i.get("content") != "New question"]
        assert len(history) == 2


class TestSessionLimit:
    """test_session_limit.py"""

    @pytest.mark.parametrize("method", RUNNERS)
    def test_a_run_limit_sends_the_newest_history(
        self, method: str, new_session: Callable[..., MemctxSession]
    ) -> None:
        """test_session_limit_parameter"""
        session = new_session("limit")
        model, agent = scripted("Reply 1", "Reply 2", "Reply 3", "Reply 4")
        for n in (1, 2, 3):
            run_agent(method, agent, f"Message {n}", session=session)
        assert len(items_of(session)) == 6

        config = RunConfig(session_settings=SessionSettings(limit=2), tracing_disabled=True)
        run_agent(method, agent, "Message 4", session=session, run_config=config)

        sent = model.calls[-1].input
        assert len(sent) == 3
        assert sent[0].get("content") == "Message 3"
        assert sent[1].get("content")[0]["text"] == "Reply 3"
        assert sent[2].get("content") == "Message 4"

    @pytest.mark.parametrize("method", RUNNERS)
    def test_an_output_cut_from_its_call_is_not_sent(
        self, method: str, new_session: Callable[..., MemctxSession]
    ) -> None:
        """test_session_limit_drops_unmatched_history_function_call_output"""
        session = new_session("pair")
        answer = {
            "type": "message",
            "role": "assistant",
            "content": [{"type": "output_text", "text": "It is sunny.", "annotations": []}],
        }
        history = [
            {"role": "user", "content": "What is the weather?"},
            {"type": "function_call", "call_id": "call_1", "name": "weather", "arguments": "{}"},
            {"type": "function_call_output", "call_id": "call_1", "output": "sunny"},
            answer,
        ]
        add(session, history)
        assert items_of(session, 2) == history[-2:]
        model, agent = scripted("Tomorrow too.")

        config = RunConfig(session_settings=SessionSettings(limit=2), tracing_disabled=True)
        run_agent(method, agent, "And tomorrow?", session=session, run_config=config)

        assert model.calls[-1].input == [answer, {"role": "user", "content": "And tomorrow?"}]

    @pytest.mark.parametrize("method", RUNNERS)
    def test_a_zero_limit_sends_no_history(
        self, method: str, new_session: Callable[..., MemctxSession]
    ) -> None:
        """test_session_limit_zero"""
        session = new_session("zero")
        model, agent = scripted("Reply 1", "Reply 2", "Reply 3")
        run_agent(method, agent, "Message 1", session=session)
        run_agent(method, agent, "Message 2", session=session)

        config = RunConfig(session_settings=SessionSettings(limit=0), tracing_disabled=True)
        run_agent(method, agent, "Message 3", session=session, run_config=config)

        assert contents(model.calls[-1].input) == ["Message 3"]

    @pytest.mark.parametrize("method", RUNNERS)
    def test_no_limit_sends_the_whole_history(
        self, method: str, new_session: Callable[..., MemctxSession]
    ) -> None:
        """test_session_limit_none_gets_all_history"""
        session = new_session("none")
        model, agent = scripted(*(f"Reply {n}" for n in range(1, 7)))
        for n in range(1, 6):
            run_agent(method, agent, f"Message {n}", session=session)
        assert len(items_of(session)) == 10

        config = RunConfig(session_settings=SessionSettings(limit=None), tracing_disabled=True)
        run_agent(method, agent, "Message 6", session=session, run_config=config)

        sent = model.calls[-1].input
        assert len(sent) == 11
        assert (sent[0].get("content"), sent[-1].get("content")) == ("Message 1", "Message 6")

    @pytest.mark.parametrize("method", RUNNERS)
    def test_a_limit_above_the_history_sends_it_all(
        self, method: str, new_session: Callable[..., MemctxSession]
    ) -> None:
        """test_session_limit_larger_than_history"""
        session = new_session("large")
        model, agent = scripted("Reply 1", "Reply 2")
        run_agent(method, agent, "Message 1", session=session)

        config = RunConfig(session_settings=SessionSettings(limit=100), tracing_disabled=True)
        run_agent(method, agent, "Message 2", session=session, run_config=config)

        sent = model.calls[-1].input
        assert len(sent) == 3
        assert sent[0].get("content") == "Message 1"
        assert sent[1].get("content")[0]["text"] == "Reply 1"
        assert sent[2].get("content") == "Message 2"


class TestMemctxErrors:
    """Beyond the SDK's tests: the errors are memctx's, and nothing is written."""

    def test_every_call_after_close_is_refused(
        self, new_session: Callable[..., MemctxSession], store: MemoryStore
    ) -> None:
        session = new_session()
        add(session, messages("kept"))
        session.close()
        session.close()  # closing twice is fine

        calls: list[Any] = [
            session.get_items(),
            session.add_items(messages("refused")),
            session.pop_item(),
            session.clear_session(),
        ]
        for call in calls:
            with pytest.raises(SessionClosedError, match="'s' is closed"):
                asyncio.run(call)
        assert [c.text for c in store.get_all_chunks("s")] == ["kept"]

    @pytest.mark.parametrize(
        "settings",
        [{"limitt": 1}, {"limit": [3]}, "limit=3"],
    )
    def test_bad_settings_are_a_session_settings_error(
        self, new_session: Callable[..., MemctxSession], store: MemoryStore, settings: Any
    ) -> None:
        with pytest.raises(SessionSettingsError, match="session_settings") as caught:
            new_session(session_settings=settings)
        assert isinstance(caught.value, MemctxError)
        assert isinstance(caught.value, TypeError)
        assert not store.has_thread("s")

    def test_a_non_json_item_is_an_item_not_json_error(
        self, new_session: Callable[..., MemctxSession]
    ) -> None:
        session = new_session()

        with pytest.raises(ItemNotJSONError, match=r"items\[0\]\.content\[0\]: set"):
            add(session, [{"role": "user", "content": [{1, 2}]}])
