"""What each store entry point refuses, on SQLite and on PostgreSQL alike.

One class per entry point. Each refusal is a ``MemctxError`` and leaves the
database exactly as it was; what one backend accepts the other accepts too
(the boundaries are stored and read back on both). The library's own entry
points are in ``tests/test_bad_inputs.py``.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Callable
from typing import Any

import pytest

from memctx import (
    BuildOptionError,
    ChunkNotFoundError,
    CompactionError,
    CompressionError,
    InvalidChunkError,
    MemctxError,
    StateFileError,
    StoreArgumentError,
    TeamThreadError,
    ViewOperationError,
    chunks,
)
from memctx.chat import ChatAgent, ChatSession
from memctx.statefile import chunk_to_dict
from memctx.store import MemoryStore
from memctx.team import TeamConversation

Rows = Callable[[], dict[str, list[tuple[object, ...]]]]

PRIORITY_MIN, PRIORITY_MAX = -(2**31), 2**31 - 1
MEGABYTE = 1_000_000


def nested(depth: int) -> Any:
    value: Any = 1
    for _ in range(depth):
        value = [value]
    return value


@pytest.fixture
def snapshot(store: MemoryStore, thread: str) -> dict[str, Any]:
    """The snapshot of ``t1`` after a truncation (so it has two batches)."""
    store.truncate(thread, keep_last=3)
    return store.export_snapshot(thread)


class TestObjectsInsteadOfAStore:
    def test_a_builder_that_is_not_one_is_refused(self, store: MemoryStore) -> None:
        store.create_thread("t")

        with pytest.raises(StoreArgumentError, match="builder: must be a ContextBuilder"):
            store.build("t", builder="gpt-4o")  # type: ignore[arg-type]
        assert store.events("t") == ()

    def test_append_with_whose_function_returns_one_chunk_not_a_list_writes_nothing(
        self, store: MemoryStore
    ) -> None:
        store.create_thread("t")

        with pytest.raises(InvalidChunkError, match="chunks: must be a list of Chunks"):
            store.append_with("t", lambda length, metadata: (chunks.user("q"), None))  # type: ignore[arg-type,return-value]
        assert store.get_all_chunks("t") == ()

    def test_a_url_given_where_a_store_belongs_is_refused(self) -> None:
        with pytest.raises(StoreArgumentError, match=r"MemoryStore.open\(url\)"):
            ChatSession.create("chat.db", "c", agents=[ChatAgent("a", "A")])  # type: ignore[arg-type]
        with pytest.raises(StoreArgumentError, match=r"MemoryStore.open\(url\)"):
            ChatSession.open("chat.db", "c")  # type: ignore[arg-type]
        with pytest.raises(StoreArgumentError, match=r"MemoryStore.open\(url\)"):
            TeamConversation.open("team.db", "x")  # type: ignore[arg-type]


class TestAppend:
    def test_the_priority_bounds_are_stored_and_read_back(self, store: MemoryStore) -> None:
        store.create_thread("t")
        low, high = chunks.user("a", priority=PRIORITY_MIN), chunks.user("b", priority=PRIORITY_MAX)

        store.append("t", low, high)

        assert store.get_current_state("t").chunks == (low, high)

    def test_the_longest_ids_in_the_widest_characters_are_stored(self, store: MemoryStore) -> None:
        """255 four-byte characters of thread id and 256 of chunk id fit PostgreSQL's index."""
        thread_id, chunk_id = "\U0001f600" * 255, "\U0001f680" * 256
        store.create_thread(thread_id)

        store.append(thread_id, chunks.user("x", id=chunk_id))

        assert store.get_current_state(thread_id)[0].id == chunk_id

    def test_content_at_the_depth_limit_and_a_4300_digit_int_are_stored(
        self, store: MemoryStore
    ) -> None:
        store.create_thread("t")
        deep = chunks.tool_call("t", nested(100), id="deep")
        big = chunks.tool_result("t", int("9" * 4300), id="big")

        store.append("t", deep, big)

        assert store.get_current_state("t").chunks == (deep, big)

    def test_a_megabyte_id_never_reaches_the_store(self) -> None:
        with pytest.raises(InvalidChunkError, match="at most 256 characters"):
            chunks.user("x", id="i" * MEGABYTE)

    @pytest.mark.parametrize("priority", [2**31, 2**63], ids=["2**31", "2**63"])
    def test_a_priority_beyond_32_bits_never_reaches_the_store(self, priority: int) -> None:
        with pytest.raises(InvalidChunkError, match="from -2147483648 to 2147483647"):
            chunks.user("x", priority=priority)

    @pytest.mark.parametrize(
        ("field", "value", "message"),
        [
            ("id", "a\x00b", "NUL"),
            ("id", "a\ud800b", "lone surrogate"),
            ("action", "a\x00", "NUL"),
            ("subtype", "\udfff", "lone surrogate"),
        ],
    )
    def test_text_no_database_column_holds_is_refused(
        self, db_rows: Rows, store: MemoryStore, field: str, value: str, message: str
    ) -> None:
        store.create_thread("t")
        chunk = chunks.custom("kind", "x", **({"id": value} if field == "id" else {}))
        if field != "id":
            import attrs

            chunk = attrs.evolve(chunk, **{field: value})
        before = db_rows()

        with pytest.raises(InvalidChunkError, match=message) as caught:
            store.append("t", chunks.user("fine"), chunk)

        assert caught.value.field == field
        assert db_rows() == before


class TestImportSnapshot:
    @pytest.mark.parametrize("origin", [["append"], {"a": 1}, 5, None, "apend"])
    def test_an_origin_that_is_not_one_of_the_names_is_refused(
        self, db_rows: Rows, store: MemoryStore, snapshot: dict[str, Any], origin: object
    ) -> None:
        snapshot["store"]["history"][0]["origin"] = origin
        before = db_rows()

        with pytest.raises(StateFileError, match=r"history\[0\]\.origin: must be one of"):
            store.import_snapshot(snapshot, thread_id="copy")
        assert db_rows() == before

    @pytest.mark.parametrize(
        ("path", "value", "message"),
        [
            (("chunks", 0, "content"), nested(101), "nest more than 100 deep"),
            (("store", "history", 0, "chunk", "content"), nested(3000), "nest more than 100"),
            (("store", "batches", 1, "params"), {"p": nested(3000)}, "nest more than 100"),
            (("chunks", 0, "content"), 10**4300, "more than 4300 digits"),
            (("store", "batches", 1, "params"), {"n": 10**4300}, "more than 4300 digits"),
            (("chunks", 0, "priority"), 2**31, "from -2147483648 to 2147483647"),
            (("store", "history", 0, "chunk", "priority"), 2**63, "from -2147483648"),
            (("store", "history", 0, "chunk", "id"), "i" * MEGABYTE, "at most 256 characters"),
            (("store", "batches", 1, "operation"), "trunc\x00ate", "control characters"),
            (("store", "batches", 1, "operation"), "\ud800", "lone surrogates"),
            (("store", "batch"), 10**5000, "must be an int from 0 to 1"),
            (("store", "history", 0, "seq"), 10**5000, "sequences have no gaps"),
            (("store", "history", 0, "chunk", "id"), "a\x00b", r"history\[0\]\.chunk\.id: .*NUL"),
        ],
        ids=[
            "content-depth", "history-depth", "params-depth", "content-int", "params-int",
            "priority-2**31", "history-priority-2**63", "history-id-1MB", "operation-nul",
            "operation-surrogate", "batch-huge-int", "seq-huge-int", "history-id-nul",
        ],
    )  # fmt: skip
    def test_a_document_beyond_a_limit_is_refused_before_anything_is_written(
        self,
        db_rows: Rows,
        store: MemoryStore,
        snapshot: dict[str, Any],
        path: tuple[str | int, ...],
        value: object,
        message: str,
    ) -> None:
        target: Any = snapshot
        for key in path[:-1]:
            target = target[key]
        target[path[-1]] = value
        before = db_rows()

        with pytest.raises(StateFileError, match=message) as caught:
            store.import_snapshot(snapshot, thread_id="copy")
        assert len(str(caught.value)) < 300
        assert db_rows() == before

    @pytest.mark.parametrize(
        ("text", "message"),
        [
            ('{"version": 1, "chunks": ' + "[" * 100_000 + "]" * 100_000 + "}", "nest more"),
            ('{"version": 1, "chunks": [], "x": ' + "9" * 4301 + "}", "more than 4300 digits"),
            (b'{"version": 1, "chunks": [], "thread_id": "\xff"}', "not valid UTF-8"),
        ],
        ids=["deep", "int", "utf8"],
    )
    def test_text_that_cannot_be_parsed_is_refused(
        self, db_rows: Rows, store: MemoryStore, text: str | bytes, message: str
    ) -> None:
        before = db_rows()

        with pytest.raises(StateFileError, match=message):
            store.import_snapshot(text, thread_id="copy")
        assert db_rows() == before

    def test_a_state_file_of_a_chunk_no_database_holds_is_refused(
        self, db_rows: Rows, store: MemoryStore
    ) -> None:
        document = {"version": 1, "thread_id": "t", "chunks": [chunk_to_dict(chunks.user("x"))]}
        document["chunks"][0]["id"] = "a\ud800"
        before = db_rows()

        with pytest.raises(StateFileError, match=r"chunks\[0\]\.id: .*lone surrogate"):
            store.import_snapshot(document)
        assert db_rows() == before

    def test_a_snapshot_at_every_limit_imports_unchanged(
        self, store: MemoryStore, open_store: Callable[[], MemoryStore]
    ) -> None:
        chunk = chunks.tool_call(
            "t", {"n": int("9" * 4300), "deep": nested(99)}, id="é" * 256, priority=PRIORITY_MIN
        )
        store.create_thread("t")
        store.append("t", chunk)
        exported = store.export_snapshot("t")
        document = json.loads(json.dumps(exported))

        store.import_snapshot(copy.deepcopy(document), thread_id="copy")

        again = store.export_snapshot("copy")
        assert again["store"]["history"] == exported["store"]["history"]
        assert again["chunks"] == [chunk_to_dict(chunk)]


class TestRecordEvent:
    @pytest.mark.parametrize(
        ("kind", "message"),
        [
            ("a\ud800", "lone surrogates"),
            ("\udfff", "lone surrogates"),
            ("a\x00b", "control characters"),
            ("line\nbreak", "control characters"),
            ("k" * 256, "at most 255 characters"),
            ("k" * MEGABYTE, "at most 255 characters"),
            ("  ", "must not be empty"),
            (5, "must be a string"),
        ],
        ids=["surrogate", "lone-low", "nul", "newline", "256", "1MB", "blank", "int"],
    )
    def test_a_kind_no_backend_can_store_alike_is_refused(
        self, db_rows: Rows, store: MemoryStore, thread: str, kind: object, message: str
    ) -> None:
        before = db_rows()

        with pytest.raises(StoreArgumentError, match=message) as caught:
            store.record_event(thread, kind, {})  # type: ignore[arg-type]
        assert len(str(caught.value)) < 300
        assert db_rows() == before

    def test_a_kind_of_255_characters_is_recorded(self, store: MemoryStore, thread: str) -> None:
        kind = "é" * 255

        store.record_event(thread, kind, {"n": 1})

        assert [e.payload for e in store.events(thread, kind)] == [{"n": 1}]

    @pytest.mark.parametrize(
        ("payload", "message"),
        [
            ({"deep": nested(101)}, "nest more than 100 deep"),
            ({"deep": nested(5000)}, "nest more than 100 deep"),
            ({"n": 10**4300}, "more than 4300 digits"),
        ],
        ids=["101", "5000", "int"],
    )
    def test_a_payload_beyond_a_limit_is_refused(
        self, db_rows: Rows, store: MemoryStore, thread: str, payload: Any, message: str
    ) -> None:
        before = db_rows()

        with pytest.raises(StoreArgumentError, match=message):
            store.record_event(thread, "context.compressed", payload)
        assert db_rows() == before


class TestEvents:
    @pytest.mark.parametrize("kind", ["a\ud800", "a\x00", "k" * 256, 5], ids=repr)
    def test_asking_for_a_kind_no_event_can_have_is_refused(
        self, store: MemoryStore, thread: str, kind: object
    ) -> None:
        with pytest.raises(StoreArgumentError, match="an event kind"):
            store.events(thread, kind)  # type: ignore[arg-type]


class TestFilter:
    @pytest.mark.parametrize(
        ("criteria", "message"),
        [
            ({"types": 5}, "types takes a type or a list of them, got 5"),
            ({"contains": 5}, "contains takes a string or a list of them, got 5"),
            ({"excludes": 5.5}, "excludes takes a string or a list of them"),
            ({"roles": object()}, "roles takes a string or a list of them"),
            ({"types": [["AGENT"]]}, "unknown chunk type"),
            ({"contains": ["ok", None]}, r"contains\[1\] must be a string"),
        ],
        ids=["types-int", "contains-int", "excludes-float", "roles-object", "types-nested",
             "contains-none"],
    )  # fmt: skip
    def test_criteria_of_the_wrong_type_are_a_view_operation_error(
        self, db_rows: Rows, store: MemoryStore, thread: str, criteria: Any, message: str
    ) -> None:
        before = db_rows()

        with pytest.raises(ViewOperationError, match=message):
            store.filter(thread, **criteria)
        assert db_rows() == before


class TestViewOperations:
    @pytest.mark.parametrize(
        "call",
        [
            lambda s, t: s.insert(t, 10**5000, chunks.user("x")),
            lambda s, t: s.replace(t, 10**5000, chunks.user("x")),
            lambda s, t: s.rollback(t, 10**5000),
            lambda s, t: s.truncate(t, keep_last=10**5000 * -1),
            lambda s, t: s.truncate(t, range=(nested(3000), 1)),
        ],
        ids=["insert", "replace", "rollback", "truncate", "range"],
    )
    def test_enormous_or_deep_arguments_are_a_short_view_operation_error(
        self, db_rows: Rows, store: MemoryStore, thread: str, call: Any
    ) -> None:
        before = db_rows()

        with pytest.raises(ViewOperationError) as caught:
            call(store, thread)
        assert len(str(caught.value)) < 300
        assert db_rows() == before


class TestApplyView:
    @pytest.mark.parametrize(
        ("arguments", "error", "message"),
        [
            ({"operation": 5}, ViewOperationError, "operation must be a string"),
            ({"operation": " "}, ViewOperationError, "operation must not be empty"),
            ({"operation": "k" * 256}, StoreArgumentError, "at most 255 characters"),
            ({"operation": "a\ud800"}, StoreArgumentError, "lone surrogates"),
            ({"operation": "op", "params": {"d": nested(5000)}}, StoreArgumentError, "nest more"),
            ({"operation": "op", "events": [("k", {"n": 10**4300})]}, StoreArgumentError,
             "more than 4300 digits"),
            ({"operation": "op", "events": [("k\x00", {})]}, StoreArgumentError,
             "control characters"),
            ({"operation": "op", "events": [nested(3000)]}, StoreArgumentError,
             "a \\(kind, payload\\) pair"),
        ],
        ids=["operation-int", "operation-blank", "operation-long", "operation-surrogate",
             "params-deep", "event-int", "event-kind-nul", "event-deep"],
    )  # fmt: skip
    def test_arguments_beyond_the_limits_are_refused_before_anything_is_written(
        self,
        db_rows: Rows,
        store: MemoryStore,
        thread: str,
        arguments: dict[str, Any],
        error: type[Exception],
        message: str,
    ) -> None:
        before = db_rows()

        with pytest.raises(error, match=message) as caught:
            store.apply_view(thread, [chunks.user("x", id="new")], **arguments)
        assert len(str(caught.value)) < 300
        assert db_rows() == before


STORE_REFUSALS: dict[str, tuple[Callable[[MemoryStore, str], object], type[Exception], str]] = {
    "compress(compressors=5)": (lambda s, t: s.compress(t, 5), CompressionError, "list"),
    "compress(compressors=['x'])": (
        lambda s, t: s.compress(t, ["x"]),
        CompressionError,
        "not a compressor",
    ),
    "compact(now='x')": (
        lambda s, t: s.compact(t, lambda c, p: "s", keep_recent_tokens=0, now="x"),
        CompactionError,
        "timezone-aware",
    ),
    "create_thread(exist_ok='yes')": (
        lambda s, t: s.create_thread("new", exist_ok="yes"),
        StoreArgumentError,
        "exist_ok",
    ),
    "append(on_progress=5)": (
        lambda s, t: s.append(t, chunks.user("x", id="new"), on_progress=5),
        StoreArgumentError,
        "on_progress",
    ),
    "export_snapshot(on_progress=5)": (
        lambda s, t: s.export_snapshot(t, on_progress=5),
        StoreArgumentError,
        "on_progress",
    ),
    "clear(keep=['nope'])": (lambda s, t: s.clear(t, keep=["nope"]), ChunkNotFoundError, "nope"),
    "clear(keep=5)": (lambda s, t: s.clear(t, keep=5), ViewOperationError, "keep"),
    "filter(roles='function')": (
        lambda s, t: s.filter(t, roles="function"),
        ViewOperationError,
        "unknown role",
    ),
    "build(compressors=5)": (
        lambda s, t: s.build(t, 100, compressors=5),
        BuildOptionError,
        "compressors",
    ),
    "a team opened on a thread that is not one": (
        lambda s, t: TeamConversation.open(s, t),
        TeamThreadError,
        "not a team conversation",
    ),
    "a team snapshot nested too deep to parse": (
        lambda s, t: TeamConversation.open(s, "team").import_snapshot("[" * 50_000 + "]" * 50_000),
        StateFileError,
        "nest more than 100 deep",
    ),
}


class TestEveryStoreEntryPoint:
    """Each refusal is a documented MemctxError and writes nothing, on both backends."""

    @pytest.mark.parametrize("case", sorted(STORE_REFUSALS))
    def test_a_bad_call_is_refused_and_writes_nothing(
        self, store: MemoryStore, thread: str, db_rows: Rows, case: str
    ) -> None:
        if case.startswith("a team snapshot"):
            TeamConversation.open(store, "team")
        call, error, message = STORE_REFUSALS[case]
        before = db_rows()

        with pytest.raises(error, match=message) as caught:
            call(store, thread)

        assert isinstance(caught.value, MemctxError)
        assert db_rows() == before


PARITY_CALLS: dict[str, Callable[[MemoryStore, str], object]] = {
    **{name: call for name, (call, _, _) in STORE_REFUSALS.items() if "team snapshot" not in name},
    "append a chunk at every limit": lambda s, t: s.append(
        t, chunks.user("\U0010ffff" * 1000, id="i" * 256, priority=PRIORITY_MAX)
    ),
    "append text with NUL": lambda s, t: s.append(t, chunks.user("a\x00b", id="nul")),
    "append a lone surrogate": lambda s, t: s.append(t, chunks.user("a\ud800b", id="sur")),
    "record an event with a 4300-digit int": lambda s, t: s.record_event(t, "k", {"n": 10**4299}),
    "record an event with a 4301-digit int": lambda s, t: s.record_event(t, "k", {"n": 10**4300}),
    "filter(roles='tool')": lambda s, t: s.filter(t, roles="tool"),
    "clear(keep=['s'])": lambda s, t: s.clear(t, keep=["s"]),
    "thread id of 256 characters": lambda s, t: s.create_thread("t" * 256),
    "thread id of 257 characters": lambda s, t: s.create_thread("t" * 257),
    "thread id with NUL": lambda s, t: s.create_thread("a\x00b"),
}


def _outcome(store: MemoryStore, thread: str, call: Callable[[MemoryStore, str], object]) -> object:
    """What a call did: its error (class and message) or the thread's visible ids after it."""
    try:
        call(store, thread)
    except MemctxError as exc:
        return (type(exc).__name__, str(exc).replace(store.url, "URL"))
    return store.get_current_state(thread).ids


@pytest.mark.postgres
@pytest.mark.parametrize("case", sorted(PARITY_CALLS))
def test_both_backends_accept_and_refuse_alike(
    case: str, tmp_path: Any, postgres_server: Any
) -> None:
    """The same call on a fresh SQLite and a fresh PostgreSQL store: the same outcome."""
    outcomes = []
    for url in (f"sqlite:///{tmp_path / 'parity.db'}", postgres_server.new_database()):
        with MemoryStore.open(url) as store:
            store.create_thread("t1")
            store.append("t1", chunks.system("rules", id="s"), chunks.user("hi", id="u"))
            outcomes.append(_outcome(store, "t1", PARITY_CALLS[case]))

    assert outcomes[0] == outcomes[1]
