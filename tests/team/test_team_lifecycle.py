"""clear, export_snapshot and import_snapshot."""

from __future__ import annotations

import copy
import datetime as dt
import json
import time
from typing import Any

import pytest

from memctx import StateFileError, UnsupportedVersionError
from memctx.team import Speaker, TeamConversation


@pytest.fixture
def busy(team: TeamConversation, lena: Speaker, coder: Speaker) -> TeamConversation:
    """A team with a task and three messages."""
    team.set_team_task("Fix the retry cap.")
    team.add_message("Please fix it. [NEXT:coder]", speaker=lena, addressees=["coder"])
    team.add_message("Fixed.", speaker=coder, addressees=["lena", "reviewer"])
    team.add_message("Thanks!", speaker=lena)
    return team


class TestClear:
    def test_clear_removes_all_messages(self, busy: TeamConversation) -> None:
        busy.clear()

        assert busy.messages == ()
        assert busy.latest_message is None

    def test_clear_resets_team_task(self, busy: TeamConversation) -> None:
        busy.clear()

        assert busy.team_task is None

    def test_clear_resets_message_id_counter(self, busy: TeamConversation, lena: Speaker) -> None:
        busy.clear()

        assert busy.add_message("again", speaker=lena).id == "msg-1"

    def test_clear_calls_on_team_task_changed_with_none(self) -> None:
        seen: list[str | None] = []
        team = TeamConversation(on_team_task_changed=seen.append)
        team.set_team_task("task")

        team.clear()

        assert seen == ["task", None]


class TestExportSnapshot:
    def test_export_snapshot_returns_serializable_object(self, busy: TeamConversation) -> None:
        snapshot = busy.export_snapshot()

        assert json.loads(json.dumps(snapshot)) == snapshot
        assert snapshot["version"] == 1
        assert snapshot["team_task"] == "Fix the retry cap."
        assert [m["id"] for m in snapshot["messages"]] == ["msg-1", "msg-2", "msg-3"]
        assert snapshot["messages"][1]["speaker"] == {
            "role_id": "coder",
            "role_name": "Coder",
            "type": "ai",
        }
        assert snapshot["messages"][1]["addressees"] == ["lena", "reviewer"]

    def test_the_timestamp_is_milliseconds_since_the_epoch(self, busy: TeamConversation) -> None:
        before = time.time() * 1000

        stamp = busy.export_snapshot()["timestamp"]

        assert isinstance(stamp, int)
        assert before - 1 <= stamp <= time.time() * 1000 + 1

    def test_changing_the_snapshot_changes_nothing_in_the_team(
        self, busy: TeamConversation
    ) -> None:
        snapshot = busy.export_snapshot()
        snapshot["messages"].clear()

        assert len(busy.messages) == 3


class TestImportSnapshot:
    def test_import_snapshot_restores_messages(self, busy: TeamConversation) -> None:
        restored = TeamConversation()

        restored.import_snapshot(busy.export_snapshot())

        assert restored.messages == busy.messages

    def test_import_snapshot_restores_team_task(self, busy: TeamConversation) -> None:
        restored = TeamConversation()

        restored.import_snapshot(busy.export_snapshot())

        assert restored.team_task == "Fix the retry cap."

    def test_reads_the_json_text_too(self, busy: TeamConversation) -> None:
        restored = TeamConversation()

        restored.import_snapshot(json.dumps(busy.export_snapshot()))

        assert restored.messages == busy.messages

    def test_replaces_what_was_there(self, busy: TeamConversation, lena: Speaker) -> None:
        other = TeamConversation()
        other.add_message("old", speaker=lena)
        other.set_team_task("old task")

        other.import_snapshot(busy.export_snapshot())

        assert [m.content for m in other.messages] == [m.content for m in busy.messages]

    def test_the_next_id_continues_after_the_highest_imported_one(self, lena: Speaker) -> None:
        team = TeamConversation()
        team.import_snapshot(
            {
                "version": 1,
                "timestamp": 0,
                "team_task": None,
                "messages": [
                    {"id": "msg-7", "content": "a", "speaker": {"role_id": "x", "type": "ai"}},
                    {"id": "msg-3", "content": "b", "speaker": {"role_id": "x", "type": "ai"}},
                    {"id": "note-99", "content": "c", "speaker": {"role_id": "x", "type": "ai"}},
                ],
            }
        )

        assert team.add_message("next", speaker=lena).id == "msg-8"

    def test_ids_that_are_not_msg_n_start_the_count_at_one(self, lena: Speaker) -> None:
        team = TeamConversation()
        team.import_snapshot(
            {
                "version": 1,
                "messages": [
                    {"id": "m1", "content": "a", "speaker": {"role_id": "x", "type": "human"}}
                ],
            }
        )

        assert team.add_message("next", speaker=lena).id == "msg-1"

    def test_optional_fields_take_their_defaults(self) -> None:
        team = TeamConversation()
        team.import_snapshot(
            {
                "version": 1,
                "messages": [
                    {"id": "a", "content": "x", "speaker": {"role_id": "r", "type": "ai"}}
                ],
            }
        )

        (message,) = team.messages
        assert message.speaker == Speaker("r", "r", "ai")
        assert message.addressees == ()
        assert message.created_at.tzinfo is not None
        assert team.team_task is None

    def test_keeps_created_at(self, busy: TeamConversation) -> None:
        snapshot = busy.export_snapshot()
        snapshot["messages"][0]["created_at"] = "2026-01-02T03:04:05Z"
        team = TeamConversation()

        team.import_snapshot(snapshot)

        assert team.messages[0].created_at == dt.datetime(2026, 1, 2, 3, 4, 5, tzinfo=dt.UTC)

    def test_calls_on_team_task_changed(self, busy: TeamConversation) -> None:
        seen: list[str | None] = []
        team = TeamConversation(on_team_task_changed=seen.append)

        team.import_snapshot(busy.export_snapshot())

        assert seen == ["Fix the retry cap."]

    def test_an_imported_task_over_5kb_is_cut(self, busy: TeamConversation) -> None:
        snapshot = busy.export_snapshot()
        snapshot["team_task"] = "x" * 6000
        team = TeamConversation()

        team.import_snapshot(snapshot)

        assert team.team_task == "x" * 5120

    def test_import_snapshot_throws_on_invalid_format(self, team: TeamConversation) -> None:
        with pytest.raises(StateFileError, match=r"^Invalid snapshot format$"):
            team.import_snapshot(None)  # type: ignore[arg-type]
        with pytest.raises(StateFileError, match=r"^Invalid snapshot format: no version$"):
            team.import_snapshot({})

    def test_an_unknown_version_raises_unsupported_version_error(
        self, busy: TeamConversation
    ) -> None:
        snapshot = busy.export_snapshot()
        snapshot["version"] = 2

        with pytest.raises(UnsupportedVersionError, match="version must be 1, got 2"):
            busy.import_snapshot(snapshot)

    @pytest.mark.parametrize(
        ("change", "message"),
        [
            (lambda s: s.update(messages={}), r"messages must be an array"),
            (lambda s: s.update(team_task=5), r"team_task must be a string"),
            (lambda s: s.update(timestamp="now"), r"timestamp must be an integer"),
            (lambda s: s["messages"].append(3), r"messages\[3\] must be an object"),
            (lambda s: s["messages"][1].pop("id"), r"messages\[1\]\.id must be a non-empty"),
            (lambda s: s["messages"][1].update(id=" "), r"messages\[1\]\.id must be a non-empty"),
            (lambda s: s["messages"][1].update(content=None), r"messages\[1\]\.content must be"),
            (lambda s: s["messages"][2].pop("speaker"), r"messages\[2\]\.speaker must be an obj"),
            (
                lambda s: s["messages"][0]["speaker"].update(role_id=""),
                r"messages\[0\]\.speaker\.role_id must be a non-empty string",
            ),
            (
                lambda s: s["messages"][0]["speaker"].update(type="bot"),
                r"messages\[0\]: Message speaker\.type must be 'human' or 'ai'",
            ),
            (
                lambda s: s["messages"][0].update(addressees="coder"),
                r"messages\[0\]\.addressees must be an array",
            ),
            (
                lambda s: s["messages"][0].update(addressees=[1]),
                r"messages\[0\]\.addressees\[0\] must be a string",
            ),
            (
                lambda s: s["messages"][0].update(created_at="yesterday"),
                r"messages\[0\]\.created_at is not an ISO 8601 time",
            ),
            (
                lambda s: s["messages"][0].update(created_at="2026-01-01T00:00:00"),
                r"messages\[0\]\.created_at has no time zone",
            ),
            (
                lambda s: s["messages"][2].update(id="msg-1"),
                r"messages\[2\]\.id: duplicate message id 'msg-1'",
            ),
        ],
    )
    def test_an_invalid_snapshot_raises_and_changes_nothing(
        self, busy: TeamConversation, change: Any, message: str
    ) -> None:
        snapshot = busy.export_snapshot()
        bad = copy.deepcopy(snapshot)
        change(bad)
        seen: list[str | None] = []
        team = TeamConversation(on_team_task_changed=seen.append)
        team.import_snapshot(snapshot)
        seen.clear()

        with pytest.raises(StateFileError, match=r"^Invalid snapshot format: " + message):
            team.import_snapshot(bad)

        assert team.export_snapshot()["messages"] == snapshot["messages"]
        assert team.team_task == snapshot["team_task"]
        assert seen == []

    def test_malformed_json_text_raises(self, team: TeamConversation) -> None:
        with pytest.raises(StateFileError, match="Invalid snapshot format: not valid JSON"):
            team.import_snapshot('{"version": 1,')

    def test_a_round_trip_keeps_everything(self, busy: TeamConversation) -> None:
        first = busy.export_snapshot()
        team = TeamConversation()
        team.import_snapshot(first)

        second = team.export_snapshot()

        assert {**second, "timestamp": 0} == {**first, "timestamp": 0}


def test_a_speaker_id_of_white_space_survives_a_round_trip() -> None:
    team = TeamConversation()
    team.add_message("hi", speaker=Speaker(" ", "Blank"))
    copy = TeamConversation()

    copy.import_snapshot(team.export_snapshot())

    assert copy.messages == team.messages
