"""A team conversation kept in a store thread, on SQLite and PostgreSQL.

The writers of the concurrency test are forked processes, as in
``test_store_concurrency.py``.
"""

from __future__ import annotations

import multiprocessing
import traceback
from collections.abc import Callable
from multiprocessing.synchronize import Event
from typing import Any

import pytest

from memctx import StateFileError, TeamMessageError, ThreadNotFoundError, chunks
from memctx.store import MemoryStore
from memctx.team import Speaker, TeamConversation

LENA = Speaker("lena", "Lena", "human")
CODER = Speaker("coder", "Coder", "ai")
Rows = Callable[[], dict[str, list[tuple[object, ...]]]]


@pytest.fixture
def team(store: MemoryStore) -> TeamConversation:
    """A persisted team with a task and two messages."""
    team = TeamConversation.open(store, "team-1")
    team.set_team_task("Cap the retry delay.")
    team.add_message("Please fix it. [NEXT:coder]", speaker=LENA, addressees=["coder"])
    team.add_message("Fixed.", speaker=CODER, addressees=["lena"])
    return team


class TestOpen:
    def test_creates_the_thread(self, store: MemoryStore) -> None:
        TeamConversation.open(store, "team-1")

        assert store.has_thread("team-1")

    def test_without_create_a_missing_thread_raises(self, store: MemoryStore) -> None:
        with pytest.raises(ThreadNotFoundError):
            TeamConversation.open(store, "team-1", create=False)
        assert not store.has_thread("team-1")

    def test_another_store_on_the_database_sees_the_same_conversation(
        self, team: TeamConversation, open_store: Callable[[], MemoryStore]
    ) -> None:
        again = TeamConversation.open(open_store(), "team-1", create=False)

        assert again.messages == team.messages
        assert again.team_task == "Cap the retry delay."
        assert again.add_message("Thanks.", speaker=LENA).id == "msg-3"
        assert [m.id for m in team.messages] == ["msg-1", "msg-2", "msg-3"]

    def test_settings_are_the_callers(self, store: MemoryStore) -> None:
        team = TeamConversation.open(store, "team-1", window_size=2, max_bytes=1000)

        assert (team.window_size, team.max_bytes) == (2, 1000)


class TestStorage:
    def test_each_message_is_a_chunk_of_the_thread(
        self, team: TeamConversation, store: MemoryStore
    ) -> None:
        stored = store.get_all_chunks("team-1")

        assert [c.id for c in stored] == ["msg-1", "msg-2"]
        assert stored[0].subtype == "team_message"
        assert stored[0].text == "Please fix it. [NEXT:coder]"

    def test_messages_keep_every_field(self, team: TeamConversation, store: MemoryStore) -> None:
        (first, second) = TeamConversation.open(store, "team-1").messages

        assert (first.id, first.content, first.speaker, first.addressees) == (
            "msg-1",
            "Please fix it. [NEXT:coder]",
            LENA,
            ("coder",),
        )
        assert second.speaker == CODER
        assert first.created_at == team.messages[0].created_at

    def test_the_team_task_is_in_the_thread_metadata(
        self, team: TeamConversation, store: MemoryStore
    ) -> None:
        assert store.thread_metadata("team-1")["team_task"] == "Cap the retry delay."

    def test_other_chunks_of_the_thread_are_not_messages(
        self, team: TeamConversation, store: MemoryStore
    ) -> None:
        store.append("team-1", chunks.user("a note of my own", id="note"))

        assert [m.id for m in team.messages] == ["msg-1", "msg-2"]

    def test_a_rejected_message_writes_nothing(self, team: TeamConversation, db_rows: Rows) -> None:
        before = db_rows()

        with pytest.raises(TeamMessageError):
            team.add_message(None, speaker=LENA)  # type: ignore[arg-type]

        assert db_rows() == before

    def test_the_context_and_the_build_are_those_of_the_same_team_in_memory(
        self, team: TeamConversation
    ) -> None:
        team.add_message("Fixed. [NEXT:lena]", speaker=CODER)
        in_memory = TeamConversation()
        in_memory.import_snapshot(team.export_snapshot())

        assert team.context_for_agent("lena", "claude") == in_memory.context_for_agent(
            "lena", "claude"
        )
        assert team.build_for_agent("coder").messages == in_memory.build_for_agent("coder").messages


class TestClearAndImport:
    def test_clear_empties_the_conversation_and_numbers_from_1_again(
        self, team: TeamConversation, store: MemoryStore
    ) -> None:
        team.clear()

        assert team.messages == ()
        assert team.team_task is None
        assert team.add_message("again", speaker=LENA).id == "msg-1"
        assert [m.content for m in team.messages] == ["again"]

    def test_clear_keeps_the_history(self, team: TeamConversation, store: MemoryStore) -> None:
        team.clear()
        team.add_message("again", speaker=LENA)

        assert [c.id for c in store.get_all_chunks("team-1")] == ["msg-1", "msg-2", "msg-1@1"]

    def test_import_replaces_the_conversation(
        self, team: TeamConversation, store: MemoryStore
    ) -> None:
        other = TeamConversation()
        other.set_team_task("Another task")
        other.add_message("one", speaker=LENA)
        snapshot = other.export_snapshot()

        team.import_snapshot(snapshot)

        assert [m.content for m in team.messages] == ["one"]
        assert team.team_task == "Another task"
        assert team.add_message("two", speaker=CODER).id == "msg-2"
        assert (
            TeamConversation.open(store, "team-1").export_snapshot()["messages"][0]
            == (snapshot["messages"][0])
        )

    def test_an_invalid_snapshot_writes_nothing(
        self, team: TeamConversation, db_rows: Rows
    ) -> None:
        before = db_rows()
        snapshot = team.export_snapshot()
        snapshot["messages"][1]["speaker"] = None

        with pytest.raises(StateFileError, match="Invalid snapshot format"):
            team.import_snapshot(snapshot)

        assert db_rows() == before


WORKERS = 3
MESSAGES = 12


def _writer(url: str, worker: int, ready: Any, go: Event, errors: Any) -> None:
    try:
        with MemoryStore.open(url) as store:
            team = TeamConversation.open(store, "team-1")
            ready.put(worker)
            go.wait(30)
            speaker = Speaker(f"agent{worker}", f"Agent {worker}", "ai")
            for i in range(MESSAGES):
                team.add_message(f"w{worker}.{i}", speaker=speaker)
                if i % 4 == 0:
                    team.set_team_task(f"task of w{worker} at {i}")
    except BaseException:
        errors.put(traceback.format_exc())
        raise


@pytest.mark.slow
@pytest.mark.skipif("fork" not in multiprocessing.get_all_start_methods(), reason="needs fork()")
def test_processes_adding_at_once_lose_and_duplicate_nothing(
    store: MemoryStore, store_url: str
) -> None:
    TeamConversation.open(store, "team-1")
    context = multiprocessing.get_context("fork")
    ready, errors, go = context.Queue(), context.Queue(), context.Event()
    processes = [
        context.Process(target=_writer, args=(store_url, w, ready, go, errors))
        for w in range(WORKERS)
    ]
    for process in processes:
        process.start()
    try:
        for _ in processes:
            ready.get(timeout=60)
        go.set()
        for process in processes:
            process.join(120)
    finally:
        for process in processes:
            if process.is_alive():
                process.kill()
    assert errors.empty(), errors.get()
    assert [p.exitcode for p in processes] == [0] * WORKERS

    messages = TeamConversation.open(store, "team-1").messages
    total = WORKERS * MESSAGES
    assert [m.id for m in messages] == [f"msg-{n}" for n in range(1, total + 1)]
    assert sorted(m.content for m in messages) == sorted(
        f"w{w}.{i}" for w in range(WORKERS) for i in range(MESSAGES)
    )
    for worker in range(WORKERS):  # each writer's messages keep their order
        mine = [m.content for m in messages if m.speaker.role_id == f"agent{worker}"]
        assert mine == [f"w{worker}.{i}" for i in range(MESSAGES)]
    metadata = store.thread_metadata("team-1")
    assert metadata["team_next_message_id"] == total + 1
    assert str(metadata["team_task"]).startswith("task of w")
