"""ChatSession: a chat kept in a store thread, on SQLite and PostgreSQL."""

from __future__ import annotations

import datetime as dt
import multiprocessing
import traceback
from collections.abc import Callable
from typing import Any

import pytest

from memctx import ChatError, ThreadExistsError, ThreadNotFoundError, UnknownAgentError, chunks
from memctx.chat import ChatAgent, ChatMessage, ChatSession, ModeState
from memctx.store import MemoryStore

AGENTS = [
    ChatAgent("alice", "Coder Cat", aliases=("cc", "程序猫"), persona="Writes the code."),
    ChatAgent("bob", "Review Cat", aliases=("rc",), persona="Reviews every change."),
    ChatAgent("carol", "Test Cat", aliases=("tc",), persona="Tests what was built."),
]
ROLES = {"coder": "alice", "reviewer": "bob", "tester": "carol"}


def workflow(store: MemoryStore, session_id: str = "s1") -> ChatSession:
    return ChatSession.create(store, session_id, agents=AGENTS, mode="workflow", role_map=ROLES)


class TestCreateAndOpen:
    def test_the_metadata_holds_mode_mode_state_and_updated_at(self, store: MemoryStore) -> None:
        before = dt.datetime.now(dt.UTC)
        workflow(store)

        metadata = store.thread_metadata("s1")

        assert metadata["mode"] == "workflow"
        assert metadata["mode_state"] == {"current_node": "coder", "cycles": 0}
        assert dt.datetime.fromisoformat(metadata["updated_at"]) >= before
        assert [a["id"] for a in metadata["agents"]] == ["alice", "bob", "carol"]

    def test_a_session_reopens_with_its_agents_and_settings(self, store: MemoryStore) -> None:
        workflow(store)

        settings = ChatSession.open(store, "s1").settings()

        assert settings.agents == tuple(AGENTS)
        assert (settings.mode, settings.mode_state) == ("workflow", ModeState())
        assert settings.role_map == {node: (agent,) for node, agent in ROLES.items()}
        assert (settings.window, settings.rounds, settings.messages) == (20, 0, 0)

    def test_a_taken_id_is_refused(self, store: MemoryStore) -> None:
        workflow(store)

        with pytest.raises(ThreadExistsError):
            workflow(store)

    def test_bad_settings_write_nothing(self, store: MemoryStore) -> None:
        with pytest.raises(ChatError, match="no agent plays 'tester'"):
            ChatSession.create(
                store, "s1", agents=AGENTS, mode="workflow", role_map={"coder": "alice",
                                                                       "reviewer": "bob"}
            )  # fmt: skip

        assert not store.has_thread("s1")

    def test_a_session_without_agents_is_refused_and_writes_nothing(
        self, store: MemoryStore
    ) -> None:
        with pytest.raises(ChatError, match="at least one agent"):
            ChatSession.create(store, "s1", agents=[])
        assert not store.has_thread("s1")

    def test_opening_a_thread_that_is_no_session_fails(self, store: MemoryStore) -> None:
        store.create_thread("plain")

        with pytest.raises(ChatError, match="thread 'plain' holds no chat session"):
            ChatSession.open(store, "plain")
        with pytest.raises(ThreadNotFoundError):
            ChatSession.open(store, "missing")

    def test_open_or_create_never_turns_a_thread_with_chunks_into_a_session(
        self, store: MemoryStore
    ) -> None:
        store.create_thread("plain")
        store.append("plain", chunks.user("hi"))

        with pytest.raises(ChatError, match="holds chunks but no chat session"):
            ChatSession.open_or_create(store, "plain", agents=AGENTS)

    def test_open_or_create_keeps_the_first_settings(self, store: MemoryStore) -> None:
        first = ChatSession.open_or_create(store, "s1", agents=AGENTS, mode="quiz")
        again = ChatSession.open_or_create(store, "s1", agents=AGENTS[:1], mode="werewolf")

        assert again.settings().mode == first.settings().mode == "quiz"

    def test_a_session_is_refused_to_another_parent(self, store: MemoryStore) -> None:
        ChatSession.create(store, "s1", agents=AGENTS, parent="project-a")
        ChatSession.create(store, "s2", agents=AGENTS)

        assert ChatSession.open(store, "s1", parent="project-a").settings().parent == "project-a"
        with pytest.raises(ChatError, match="'s1' belongs to thread 'project-a', not to 'b'"):
            ChatSession.open(store, "s1", parent="b")
        with pytest.raises(ChatError, match="'s2' belongs to no thread, not to 'b'"):
            ChatSession.open_or_create(store, "s2", agents=AGENTS, parent="b")

    def test_without_an_id_a_fresh_one_is_made(self, store: MemoryStore) -> None:
        session = ChatSession.create(store, agents=AGENTS)

        assert session.id.startswith("thread_")
        assert ChatSession.open(store, session.id).agents == tuple(AGENTS)

    def test_malformed_settings_are_named_when_the_session_is_opened(
        self, store: MemoryStore
    ) -> None:
        workflow(store)
        store.update_thread_metadata("s1", {"rounds": "three"})

        with pytest.raises(ChatError, match="session 's1' has malformed settings: rounds: must"):
            ChatSession.open(store, "s1")


class TestFreeChat:
    def test_every_post_and_reply_moves_updated_at(self, store: MemoryStore) -> None:
        session = ChatSession.create(store, "s1", agents=AGENTS)
        stamps = [session.settings().updated_at]
        chat_round = session.post("hello")
        stamps.append(session.settings().updated_at)
        session.reply(chat_round, "bob", "hi")
        stamps.append(session.settings().updated_at)

        assert stamps == sorted(stamps)
        assert len(set(stamps)) == 3
        assert all(stamp is not None and stamp.tzinfo is not None for stamp in stamps)

    def test_a_refused_reply_writes_nothing(self, store: MemoryStore) -> None:
        session = ChatSession.create(store, "s1", agents=AGENTS)
        session.post("hello")
        before = store.thread_metadata("s1")

        with pytest.raises(ChatError):
            session.reply(5, "bob", "late")

        assert store.thread_metadata("s1") == before
        assert len(store.get_all_chunks("s1")) == 1

    def test_a_post_stores_the_message_and_names_the_mentioned_targets(
        self, store: MemoryStore
    ) -> None:
        session = ChatSession.create(store, "s1", agents=AGENTS)

        chat_round = session.post("@cc @Test Cat please fix the login")

        assert chat_round.number == 1
        assert chat_round.agent_ids == ("alice", "carol")
        assert chat_round.context.prompt_user_text == "please fix the login"
        assert chat_round.context.prompt_history == ()
        assert session.history() == (
            ChatMessage("user", "@cc @Test Cat please fix the login", id="msg-1"),
        )

    def test_a_preview_is_the_round_a_post_opens_and_stores_nothing(
        self, store: MemoryStore
    ) -> None:
        session = workflow(store)
        session.reply(session.post("Write wc.py"), "alice", "wc.py is written.")
        settings = session.settings()

        posted, stepped = session.preview("@rc look"), session.preview()

        assert session.settings() == settings
        assert stepped.number == posted.number == 2
        assert posted == session.post("@rc look")
        assert session.preview() == session.step()

    def test_a_step_is_previewed_only_in_the_workflow_mode(self, store: MemoryStore) -> None:
        session = ChatSession.create(store, "s1", agents=AGENTS)

        with pytest.raises(ChatError, match="only the workflow mode"):
            session.preview()

    def test_parallel_targets_all_get_the_history_from_before_the_round(
        self, store: MemoryStore
    ) -> None:
        session = ChatSession.create(store, "s1", agents=AGENTS)
        first = session.post("hello all")
        for agent in first.agent_ids:
            session.reply(first, agent, f"hi from {agent}")

        second = session.post("what next?")
        session.reply(second, "alice", "I would write tests.")
        again = ChatSession.open(store, "s1")

        assert [m.content for m in second.context.prompt_history] == [
            "hello all", "hi from alice", "hi from bob", "hi from carol"
        ]  # fmt: skip
        assert [m.id for m in again.history()] == [f"msg-{n}" for n in range(1, 7)]

    def test_messages_stored_by_others_meanwhile_stay_out_of_a_rounds_history(
        self, store: MemoryStore, open_store: Callable[[], MemoryStore]
    ) -> None:
        session = ChatSession.create(store, "s1", agents=AGENTS)
        other = ChatSession.open(open_store(), "s1")
        first = session.post("first")
        other.post("second, from another process")

        assert [m.content for m in session.post("third").context.prompt_history] == [
            "first", "second, from another process"
        ]  # fmt: skip
        assert first.context.prompt_history == ()

    def test_the_input_is_never_also_in_the_history(self, store: MemoryStore) -> None:
        session = ChatSession.create(store, "s1", agents=AGENTS, window=3)
        for text in ("yes", "yes", "yes", "yes"):
            chat_round = session.post(text)

        assert [m.id for m in chat_round.context.prompt_history] == ["msg-1", "msg-2", "msg-3"]

    def test_a_reply_from_an_agent_that_is_no_target_is_refused(self, store: MemoryStore) -> None:
        session = ChatSession.create(store, "s1", agents=AGENTS)
        chat_round = session.post("@rc look")

        with pytest.raises(UnknownAgentError, match="round 1 targets: unknown agent 'alice'"):
            session.reply(chat_round, "alice", "me too")
        with pytest.raises(ChatError, match="no round 7"):
            session.reply(7, "bob", "late")
        with pytest.raises(UnknownAgentError):
            session.reply(1, "dave", "who?")
        assert len(session.history()) == 1

    def test_step_is_only_for_the_workflow(self, store: MemoryStore) -> None:
        session = ChatSession.create(store, "s1", agents=AGENTS)

        with pytest.raises(ChatError, match="only the workflow mode has steps"):
            session.step()


class TestWorkflow:
    def test_a_task_walks_coder_reviewer_tester_saving_the_state_each_round(
        self, store: MemoryStore
    ) -> None:
        session = workflow(store)

        coder = session.post("@rc Build a word counter")  # mentions are ignored
        session.reply(coder, "alice", "wc.py is written.")
        reviewer = session.step()
        session.reply(reviewer, "bob", "Looks fine.")
        tester = session.step()

        assert [r.agent_ids for r in (coder, reviewer, tester)] == [("alice",), ("bob",),
                                                                    ("carol",)]  # fmt: skip
        assert [r.context.targets.node for r in (coder, reviewer, tester)] == list(ROLES)
        assert tester.context.workflow_task_prompt == "@rc Build a word counter"
        assert [m.content for m in tester.context.prompt_history][-1] == "Looks fine."
        assert store.thread_metadata("s1")["mode_state"] == {"current_node": "coder",
                                                             "cycles": 1}  # fmt: skip

    def test_follow_ups_join_the_task_prompt(self, store: MemoryStore) -> None:
        session = workflow(store)
        session.post("Build a word counter")
        chat_round = session.post("Count lines too")

        assert chat_round.agent_ids == ("bob",)
        assert chat_round.context.workflow_task_prompt.endswith("\n1. Count lines too")

    def test_switching_modes_keeps_the_messages(self, store: MemoryStore) -> None:
        session = ChatSession.create(store, "s1", agents=AGENTS)
        session.post("hello")

        session.set_mode("workflow", role_map=ROLES)

        assert session.post("build it").agent_ids == ("alice",)
        assert len(session.history()) == 2


WORKERS = 3
POSTS = 12


def _poster(url: str, worker: int, ready: Any, go: Any, errors: Any) -> None:
    try:
        with MemoryStore.open(url) as store:
            session = ChatSession.open(store, "s1")
            ready.put(worker)
            go.wait(30)
            for number in range(POSTS):
                chat_round = session.post(f"w{worker} p{number}")
                for agent in chat_round.agent_ids:
                    session.reply(chat_round, agent, f"w{worker} p{number} r{chat_round.number}")
    except BaseException:
        errors.put(traceback.format_exc())
        raise


@pytest.mark.slow
@pytest.mark.skipif("fork" not in multiprocessing.get_all_start_methods(), reason="needs fork()")
def test_several_processes_posting_to_one_workflow_session_lose_and_duplicate_nothing(
    store: MemoryStore, store_url: str
) -> None:
    workflow(store)
    context = multiprocessing.get_context("fork")
    ready, errors, go = context.Queue(), context.Queue(), context.Event()
    processes = [
        context.Process(target=_poster, args=(store_url, w, ready, go, errors))
        for w in range(WORKERS)
    ]
    for process in processes:
        process.start()
    try:
        for _ in processes:
            ready.get(timeout=60)
        go.set()
        for process in processes:
            process.join(180)
    finally:
        for process in processes:
            if process.is_alive():
                process.kill()
    problems = []
    while not errors.empty():
        problems.append(errors.get())
    assert problems == []
    assert [p.exitcode for p in processes] == [0] * WORKERS

    history = ChatSession.open(store, "s1").history()
    total = WORKERS * POSTS
    posts = [m.content for m in history if m.role == "user"]
    replies = [m for m in history if m.role == "assistant"]
    assert sorted(posts) == sorted(f"w{w} p{n}" for w in range(WORKERS) for n in range(POSTS))
    assert [m.id for m in history] == [f"msg-{n}" for n in range(1, 2 * total + 1)]
    chain = ["alice", "bob", "carol"]
    by_round = {int(m.content.rsplit(" r", 1)[1]): m.agent_id for m in replies}
    assert sorted(by_round) == list(range(1, total + 1))  # one reply per round, none lost
    assert [by_round[n] for n in range(1, total + 1)] == [chain[(n - 1) % 3] for n in
                                                           range(1, total + 1)]  # fmt: skip
    metadata = store.thread_metadata("s1")
    assert metadata["rounds"] == total
    assert metadata["mode_state"] == {"current_node": "coder", "cycles": total // 3}
