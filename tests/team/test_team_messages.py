"""Adding and reading messages: validation, ids, the hook, copies."""

from __future__ import annotations

import logging
import threading
from typing import Any

import pytest

from memctx import MemctxError, TeamMessageError
from memctx.team import Speaker, TeamConversation, TeamMessage


class TestAddMessage:
    def test_stores_and_returns_the_message_with_a_generated_id(
        self, team: TeamConversation, lena: Speaker
    ) -> None:
        message = team.add_message("Hi @coder [NEXT:coder]", speaker=lena, addressees=("coder",))

        assert message.id == "msg-1"
        assert message.content == "Hi @coder [NEXT:coder]"
        assert message.speaker == lena
        assert message.addressees == ("coder",)
        assert team.messages == (message,)

    def test_ids_count_up_from_msg_1(self, team: TeamConversation, lena: Speaker) -> None:
        ids = [team.add_message(f"m{i}", speaker=lena).id for i in range(3)]

        assert ids == ["msg-1", "msg-2", "msg-3"]

    def test_raises_on_a_null_message(self, team: TeamConversation, lena: Speaker) -> None:
        with pytest.raises(TeamMessageError, match=r"^Message cannot be null or undefined$"):
            team.add_message(None, speaker=lena)  # type: ignore[arg-type]

    def test_raises_on_non_string_content(self, team: TeamConversation, lena: Speaker) -> None:
        with pytest.raises(TeamMessageError, match=r"^Message content must be a string$"):
            team.add_message(123, speaker=lena)  # type: ignore[arg-type]

    def test_raises_on_a_missing_speaker(self, team: TeamConversation) -> None:
        with pytest.raises(TeamMessageError, match=r"^Message speaker is required$"):
            team.add_message("hello")

    def test_raises_on_a_speaker_without_a_role_id(self, team: TeamConversation) -> None:
        with pytest.raises(TeamMessageError, match=r"^Message speaker\.roleId is required$"):
            team.add_message("hello", speaker=Speaker("", "Nobody"))

    def test_raises_on_a_speaker_that_is_not_a_speaker(self, team: TeamConversation) -> None:
        with pytest.raises(TeamMessageError, match="must be a Speaker, got dict"):
            team.add_message("hello", speaker={"role_id": "lena"})  # type: ignore[arg-type]

    def test_raises_on_addressees_given_as_one_string(
        self, team: TeamConversation, lena: Speaker
    ) -> None:
        with pytest.raises(TeamMessageError, match="not one string"):
            team.add_message("hello", speaker=lena, addressees="coder")

    def test_raises_on_an_addressee_that_is_not_a_string(
        self, team: TeamConversation, lena: Speaker
    ) -> None:
        with pytest.raises(TeamMessageError, match="addressees must be strings"):
            team.add_message("hello", speaker=lena, addressees=["coder", 7])  # type: ignore[list-item]

    @pytest.mark.parametrize(
        "call",
        [
            {"content": None},
            {"content": b"bytes"},
            {"speaker": None},
            {"speaker": {"role_id": "lena"}},
            {"addressees": "coder"},
            {"addressees": 5},
        ],
        ids=["null", "bytes", "no speaker", "not a speaker", "string addressees", "int addressees"],
    )
    def test_a_rejected_message_stores_nothing_and_uses_no_id(
        self, team: TeamConversation, lena: Speaker, call: dict[str, Any]
    ) -> None:
        arguments: dict[str, Any] = {"content": "hello", "speaker": lena, **call}
        content = arguments.pop("content")
        with pytest.raises(TeamMessageError):
            team.add_message(content, **arguments)

        assert team.messages == ()
        assert team.add_message("next", speaker=lena).id == "msg-1"

    def test_the_error_is_a_memctx_error_and_a_type_error(self, team: TeamConversation) -> None:
        with pytest.raises(TeamMessageError) as caught:
            team.add_message("hello")

        assert isinstance(caught.value, MemctxError)
        assert isinstance(caught.value, TypeError)

    def test_calls_on_message_added(self, lena: Speaker) -> None:
        seen: list[TeamMessage] = []
        team = TeamConversation(on_message_added=seen.append)

        message = team.add_message("hello", speaker=lena)

        assert seen == [message]

    def test_a_failing_hook_propagates_and_the_message_stays(self, lena: Speaker) -> None:
        def hook(message: TeamMessage) -> None:
            raise RuntimeError("ui gone")

        team = TeamConversation(on_message_added=hook)

        with pytest.raises(RuntimeError, match="ui gone"):
            team.add_message("hello", speaker=lena)
        assert [m.content for m in team.messages] == ["hello"]

    def test_logs_each_added_message_at_debug_level(
        self, team: TeamConversation, lena: Speaker, caplog: pytest.LogCaptureFixture
    ) -> None:
        with caplog.at_level(logging.DEBUG, logger="memctx.team"):
            team.add_message("hello", speaker=lena)

        assert caplog.record_tuples == [
            ("memctx.team", logging.DEBUG, "[TeamConversation] Message added: msg-1")
        ]

    def test_no_addressees_means_none(self, team: TeamConversation, lena: Speaker) -> None:
        assert team.add_message("hello", speaker=lena, addressees=None).addressees == ()

    def test_lone_surrogates_become_replacement_characters(
        self, team: TeamConversation, lena: Speaker
    ) -> None:
        message = team.add_message("a\ud800b", speaker=lena)

        assert message.content == "a\ufffdb"
        message.content.encode("utf-8")  # has a UTF-8 form

    def test_ids_stay_unique_and_gap_free_across_threads(
        self, team: TeamConversation, lena: Speaker
    ) -> None:
        def add(worker: int) -> None:
            for i in range(50):
                team.add_message(f"w{worker}.{i}", speaker=lena)

        workers = [threading.Thread(target=add, args=(w,)) for w in range(4)]
        for worker in workers:
            worker.start()
        for worker in workers:
            worker.join()

        assert [m.id for m in team.messages] == [f"msg-{n}" for n in range(1, 201)]
        assert sorted(m.content for m in team.messages) == sorted(
            f"w{w}.{i}" for w in range(4) for i in range(50)
        )


class TestSpeaker:
    def test_role_name_defaults_to_role_id_and_type_to_human(self) -> None:
        assert Speaker("lena") == Speaker("lena", "lena", "human")

    def test_rejects_an_unknown_type(self) -> None:
        with pytest.raises(TeamMessageError, match=r"speaker\.type must be 'human' or 'ai'"):
            Speaker("x", "X", "robot")  # type: ignore[arg-type]

    def test_rejects_a_role_id_that_is_not_a_string(self) -> None:
        with pytest.raises(TeamMessageError, match=r"speaker\.roleId must be a string"):
            Speaker(7)  # type: ignore[arg-type]


class TestReadingMessages:
    def test_messages_is_a_copy(self, team: TeamConversation, lena: Speaker) -> None:
        team.add_message("one", speaker=lena)
        copy = team.messages
        team.add_message("two", speaker=lena)

        assert len(copy) == 1
        assert isinstance(copy, tuple)
        with pytest.raises(AttributeError):
            copy[0].content = "changed"  # type: ignore[misc]
        assert [m.content for m in team.messages] == ["one", "two"]

    def test_messages_is_empty_initially(self, team: TeamConversation) -> None:
        assert team.messages == ()

    def test_latest_message_is_none_when_empty(self, team: TeamConversation) -> None:
        assert team.latest_message is None

    def test_latest_message_is_the_last_message(
        self, team: TeamConversation, lena: Speaker, coder: Speaker
    ) -> None:
        team.add_message("one", speaker=lena)
        last = team.add_message("two", speaker=coder)

        assert team.latest_message == last
