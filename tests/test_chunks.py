"""The chunk model and the twenty constructors of ``memctx.chunks``."""

from __future__ import annotations

import datetime as dt
import math
import re
from collections.abc import Callable
from typing import Any

import attrs
import pytest
from hypothesis import assume, example, given, settings

from memctx import Chunk, ChunkMetadata, ChunkType, InvalidChunkError, RendererRegistry, chunks
from memctx._json import FrozenDict
from strategies import (
    BUILTIN_CONSTRUCTORS,
    ConstructorCall,
    aware_datetimes,
    constructor_calls,
    examples,
)

WHEN = dt.datetime(2026, 11, 22, 3, 25, 56, tzinfo=dt.UTC)


@pytest.fixture(scope="module")
def registry() -> RendererRegistry:
    return RendererRegistry()


# Each constructor with its reference example, its expected XML and its role.
SEED_003: list[tuple[str, Callable[[], Chunk], str, str]] = [
    (
        "system",
        lambda: chunks.system("系统上下文内容", id="chunk_xxx"),
        '<system_context id="chunk_xxx" priority="1000">\n系统上下文内容\n</system_context>',
        "system",
    ),
    (
        "user",
        lambda: chunks.user("用户消息内容", id="chunk_xxx"),
        '<user_message id="chunk_xxx" role="user">\n用户消息内容\n</user_message>',
        "user",
    ),
    (
        "assistant",
        lambda: chunks.assistant("助手回复内容", id="chunk_xxx"),
        '<assistant_response id="chunk_xxx" role="assistant">\n助手回复内容\n</assistant_response>',
        "assistant",
    ),
    (
        "clarification",
        lambda: chunks.clarification("澄清问题", id="chunk_xxx"),
        '<assistant_clarification id="chunk_xxx" role="assistant" action="clarification">\n'
        "澄清问题\n</assistant_clarification>",
        "assistant",
    ),
    (
        "tool_call",
        lambda: chunks.tool_call(
            "read_file", {"path": "/src/main.ts"}, call_id="call_123", id="chunk_xxx"
        ),
        '<tool_call id="chunk_xxx" action="tool_call" tool="read_file" call_id="call_123" '
        'status="pending">\n{"path": "/src/main.ts"}\n</tool_call>',
        "assistant",
    ),
    (
        "skill_call",
        lambda: chunks.skill_call("code_review", {"code": "..."}, "call_456", id="chunk_xxx"),
        '<skill_call id="chunk_xxx" action="skill_call" skill="code_review" call_id="call_456" '
        'status="pending">\n{"code": "..."}\n</skill_call>',
        "assistant",
    ),
    (
        "spawn_subagent",
        lambda: chunks.spawn_subagent("agent_123", "researcher", "Search for...", id="chunk_xxx"),
        '<spawn_subagent id="chunk_xxx" subagent_id="agent_123" agent_type="researcher">\n'
        '{"task": "Search for..."}\n</spawn_subagent>',
        "assistant",
    ),
    (
        "message_to_subagent",
        lambda: chunks.message_to_subagent("agent_123", "请继续调研...", id="chunk_xxx"),
        '<message_to_subagent id="chunk_xxx" subagent_id="agent_123">\n请继续调研...\n'
        "</message_to_subagent>",
        "assistant",
    ),
    (
        "subagent_result",
        lambda: chunks.subagent_result("agent_123", "调研结果...", id="chunk_xxx"),
        '<subagent_result id="chunk_xxx" subagent_id="agent_123" success="true">\n调研结果...\n'
        "</subagent_result>",
        "user",
    ),
    (
        "parent_agent_message",
        lambda: chunks.parent_agent_message("agent_000", "父级任务指令", id="chunk_xxx"),
        '<parent_agent_message id="chunk_xxx" parent_agent_id="agent_000">\n父级任务指令\n'
        "</parent_agent_message>",
        "user",
    ),
    (
        "tool_result",
        lambda: chunks.tool_result("read_file", "文件内容...", "call_123", id="chunk_xxx"),
        '<tool_result id="chunk_xxx" tool="read_file" call_id="call_123" success="true">\n'
        "文件内容...\n</tool_result>",
        "user",
    ),
    (
        "tool_error",
        lambda: chunks.tool_error("read_file", "File not found", "call_123", id="chunk_xxx"),
        '<tool_result id="chunk_xxx" tool="read_file" call_id="call_123" success="false" '
        'error="true">\nFile not found\n</tool_result>',
        "user",
    ),
    (
        "skill_result",
        lambda: chunks.skill_result("code_review", "Review 结果...", "call_456", id="chunk_xxx"),
        '<skill_result id="chunk_xxx" skill="code_review" call_id="call_456" success="true">\n'
        "Review 结果...\n</skill_result>",
        "user",
    ),
    (
        "progress_summary",
        lambda: chunks.progress_summary(
            "## Progress Summary\n### Completed Actions\n- Action 1\n- Action 2",
            original_count=15,
            compacted_at=1703000000000,
            id="chunk_xxx",
        ),
        '<progress_summary id="chunk_xxx" compacted_at="1703000000000" original_count="15">\n'
        "## Progress Summary\n### Completed Actions\n- Action 1\n- Action 2\n"
        "</progress_summary>",
        "user",
    ),
    (
        "todo_update",
        lambda: chunks.todo_update([{"text": "read", "done": True}], id="chunk_xxx"),
        '<todo_update id="chunk_xxx" action="todo_set">\n'
        '{"todos": [{"text": "read", "done": true}]}\n</todo_update>',
        "assistant",
    ),
    (
        "thinking",
        lambda: chunks.thinking("思考过程...", id="chunk_xxx"),
        '<thinking id="chunk_xxx" subtype="THINKING">\n思考过程...\n</thinking>',
        "assistant",
    ),
    (
        "user_intervention",
        lambda: chunks.user_intervention("用户中途的干预", id="chunk_xxx"),
        '<user_intervention id="chunk_xxx" subtype="USER">\n用户中途的干预\n</user_intervention>',
        "user",
    ),
    (
        "task_completed",
        lambda: chunks.task_completed("...", summary="...", id="chunk_xxx"),
        '<task_completed id="chunk_xxx">\n{"result": "...", "summary": "..."}\n</task_completed>',
        "assistant",
    ),
    (
        "task_abandoned",
        lambda: chunks.task_abandoned("无法完成", partial_result="...", id="chunk_xxx"),
        '<task_abandoned id="chunk_xxx" reason="无法完成">\n{"partialResult": "..."}\n'
        "</task_abandoned>",
        "assistant",
    ),
    (
        "task_terminated",
        lambda: chunks.task_terminated("user", "任务被终止", id="chunk_xxx"),
        '<task_terminated id="chunk_xxx" terminated_by="user">\n任务被终止\n</task_terminated>',
        "user",
    ),
]


class TestReferenceRendering:
    def test_covers_all_twenty_constructors(self) -> None:
        assert [name for name, *_ in SEED_003] == list(BUILTIN_CONSTRUCTORS)
        assert len(SEED_003) == 20

    @pytest.mark.parametrize(("make", "xml"), [pytest.param(m, x, id=n) for n, m, x, _ in SEED_003])
    def test_renders_the_seed_example_with_its_attribute_order(
        self, registry: RendererRegistry, make: Callable[[], Chunk], xml: str
    ) -> None:
        assert registry.render(make())[1] == xml

    @pytest.mark.parametrize(
        ("make", "role"), [pytest.param(m, r, id=n) for n, m, _, r in SEED_003]
    )
    def test_has_the_role_of_design_md(
        self, registry: RendererRegistry, make: Callable[[], Chunk], role: str
    ) -> None:
        assert registry.render(make())[0] == role


def fields(chunk: Chunk) -> tuple[ChunkType, str | None, str | None, str | None]:
    return chunk.type, chunk.role, chunk.action, chunk.subtype


class TestConstructors:
    """Each constructor's type, role, action, subtype, content and metadata."""

    @pytest.mark.parametrize(
        ("chunk", "expected"),
        [
            (chunks.system("s"), (ChunkType.SYSTEM, None, None, None)),
            (chunks.user("u"), (ChunkType.AGENT, "user", None, None)),
            (chunks.assistant("a"), (ChunkType.AGENT, "assistant", None, None)),
            (chunks.clarification("c"), (ChunkType.AGENT, "assistant", "clarification", None)),
            (chunks.tool_call("t", {}), (ChunkType.WORKFLOW, None, "tool_call", None)),
            (chunks.skill_call("s", {}), (ChunkType.WORKFLOW, None, "skill_call", None)),
            (
                chunks.spawn_subagent("a", "r", "t"),
                (ChunkType.DELEGATION, None, "spawn_subagent", None),
            ),
            (
                chunks.message_to_subagent("a", "t"),
                (ChunkType.DELEGATION, None, "message_to_subagent", None),
            ),
            (
                chunks.subagent_result("a", "r"),
                (ChunkType.DELEGATION, None, "subagent_result", None),
            ),
            (
                chunks.parent_agent_message("p", "t"),
                (ChunkType.DELEGATION, None, "parent_agent_message", None),
            ),
            (chunks.tool_result("t", "o"), (ChunkType.ENVIRONMENT, None, "tool_result", None)),
            (chunks.tool_error("t", "e"), (ChunkType.ENVIRONMENT, None, "tool_result", None)),
            (chunks.skill_result("s", "o"), (ChunkType.ENVIRONMENT, None, "skill_result", None)),
            (
                chunks.progress_summary("p"),
                (ChunkType.WORKING_FLOW, None, None, "PROGRESS_SUMMARY"),
            ),
            (chunks.todo_update([]), (ChunkType.WORKING_FLOW, None, "todo_set", None)),
            (chunks.thinking("t"), (ChunkType.WORKING_FLOW, None, None, "THINKING")),
            (chunks.user_intervention("u"), (ChunkType.WORKING_FLOW, None, None, "USER")),
            (chunks.task_completed("r"), (ChunkType.OUTPUT, None, "task_completed", None)),
            (chunks.task_abandoned("r"), (ChunkType.OUTPUT, None, "task_abandoned", None)),
            (chunks.task_terminated("u", "t"), (ChunkType.OUTPUT, None, "task_terminated", None)),
            (chunks.custom("note", "n"), (ChunkType.CUSTOM, "user", None, "note")),
        ],
        ids=lambda value: (
            f"{value.type.value}-{value.action or value.subtype or value.role}".lower()
            if isinstance(value, Chunk)
            else ""
        ),
    )
    def test_sets_type_role_action_and_subtype(
        self, chunk: Chunk, expected: tuple[ChunkType, str | None, str | None, str | None]
    ) -> None:
        assert fields(chunk) == expected

    @pytest.mark.parametrize(
        ("chunk", "expected"),
        [
            (chunks.system("s"), ChunkMetadata()),
            (
                chunks.tool_call("read_file", {}, "call_1"),
                ChunkMetadata(tool="read_file", call_id="call_1", status="pending"),
            ),
            (
                chunks.skill_call("review", {}, status="running"),
                ChunkMetadata(skill="review", status="running"),
            ),
            (
                chunks.spawn_subagent("a1", "researcher", "t"),
                ChunkMetadata(subagent_id="a1", agent_type="researcher"),
            ),
            (chunks.message_to_subagent("a1", "t"), ChunkMetadata(subagent_id="a1")),
            (
                chunks.subagent_result("a1", "r", success=False),
                ChunkMetadata(subagent_id="a1", success=False),
            ),
            (chunks.parent_agent_message("p0", "t"), ChunkMetadata(parent_agent_id="p0")),
            (
                chunks.tool_result("t", "o", "c1"),
                ChunkMetadata(tool="t", call_id="c1", success=True),
            ),
            (
                chunks.tool_error("t", "e", "c1"),
                ChunkMetadata(tool="t", call_id="c1", success=False, error=True),
            ),
            (chunks.skill_result("s", "o"), ChunkMetadata(skill="s", success=True)),
            (
                chunks.progress_summary("p", original_count=15, compacted_at=1703),
                ChunkMetadata(original_count=15, compacted_at=1703),
            ),
            (chunks.task_abandoned("stuck"), ChunkMetadata(reason="stuck")),
            (chunks.task_terminated("user", "t"), ChunkMetadata(terminated_by="user")),
        ],
        ids=lambda value: (
            value.action or value.subtype or "system" if isinstance(value, Chunk) else ""
        ),
    )
    def test_sets_metadata(self, chunk: Chunk, expected: ChunkMetadata) -> None:
        assert chunk.metadata == expected

    @pytest.mark.parametrize(
        ("chunk", "content"),
        [
            (chunks.tool_call("t", {"path": "/a"}), {"path": "/a"}),
            (chunks.spawn_subagent("a", "r", "find it"), {"task": "find it"}),
            (chunks.todo_update([{"t": 1}]), {"todos": ({"t": 1},)}),
            (chunks.task_completed("done"), {"result": "done"}),
            (chunks.task_completed("done", "short"), {"result": "done", "summary": "short"}),
            (chunks.task_abandoned("why"), {"partialResult": None}),
            (chunks.tool_result("t", None), None),
            (chunks.subagent_result("a", [1, "two"]), (1, "two")),
        ],
        ids=lambda value: value.action if isinstance(value, Chunk) else "",
    )
    def test_builds_the_documented_content(self, chunk: Chunk, content: Any) -> None:
        assert chunk.content == content

    def test_system_priority_defaults_to_1000_and_others_to_0(self) -> None:
        assert chunks.system("s").priority == 1000
        assert chunks.system("s", 5).priority == 5
        assert chunks.user("u").priority == 0
        assert chunks.user("u", priority=7).priority == 7

    def test_keyword_options_reach_the_chunk(self) -> None:
        chunk = chunks.thinking(
            "t", id="c9", priority=3, pinned=True, custom={"k": [1]}, created_at=WHEN
        )

        assert (chunk.id, chunk.priority, chunk.pinned, chunk.created_at) == ("c9", 3, True, WHEN)
        assert chunk.metadata.custom == {"k": (1,)}

    def test_compacted_at_accepts_an_aware_datetime_as_epoch_milliseconds(self) -> None:
        when = dt.datetime(2023, 12, 19, 15, 33, 20, 123000, tzinfo=dt.UTC)

        chunk = chunks.progress_summary("p", compacted_at=when)

        assert chunk.metadata.compacted_at == 1703000000123

    @settings(max_examples=examples(200), deadline=None)
    @given(when=aware_datetimes)
    @example(when=dt.datetime(3044, 10, 1, 7, 7, 17, 778998, tzinfo=dt.UTC))
    def test_compacted_at_of_any_datetime_after_1970_is_exact(self, when: dt.datetime) -> None:
        epoch = dt.datetime(1970, 1, 1, tzinfo=dt.UTC)
        assume(when >= epoch)
        chunk = chunks.progress_summary("p", compacted_at=when)

        assert chunk.metadata.compacted_at == (when - epoch) // dt.timedelta(milliseconds=1)

    def test_json_content_renders_as_json_with_non_ascii_kept(self) -> None:
        chunk = chunks.tool_call("t", {"path": "/données/ü.txt", "n": [1, 2.5, None, True]})

        assert chunk.text == '{"path": "/données/ü.txt", "n": [1, 2.5, null, true]}'

    def test_text_content_is_not_json_encoded(self) -> None:
        assert chunks.tool_result("t", 'He said "hi"\n').text == 'He said "hi"\n'

    def test_created_at_defaults_to_now_in_utc(self) -> None:
        before = dt.datetime.now(dt.UTC)
        chunk = chunks.user("u")
        after = dt.datetime.now(dt.UTC)

        assert before <= chunk.created_at <= after
        assert chunk.created_at.utcoffset() == dt.timedelta(0)


class TestGeneratedIds:
    def test_have_the_form_chunk_hex(self) -> None:
        assert re.fullmatch(r"chunk_[0-9a-f]{6,}", chunks.user("u").id)

    def test_are_unique(self) -> None:
        made = {chunks.user("u").id for _ in range(10_000)}

        assert len(made) == 10_000

    def test_a_given_id_is_kept(self) -> None:
        assert chunks.user("u", id="mine").id == "mine"

    def test_the_model_generates_one_too(self) -> None:
        assert re.fullmatch(r"chunk_[0-9a-f]{6,}", Chunk(type=ChunkType.AGENT, content="x").id)


def raises_naming(field: str) -> pytest.RaisesExc[InvalidChunkError]:
    """``InvalidChunkError`` whose message starts with ``field`` (or ``metadata.field``)."""
    return pytest.raises(InvalidChunkError, match=rf"^(metadata\.)?{re.escape(field)}: ")


class TestValidation:
    @pytest.mark.parametrize(
        ("make", "field"),
        [
            (lambda: chunks.user(5), "text"),
            (lambda: chunks.user(b"bytes"), "text"),
            (lambda: chunks.user(None), "text"),
            (lambda: chunks.tool_error("t", {"not": "text"}), "error"),
            (lambda: chunks.task_completed("r", summary=5), "summary"),
            (lambda: chunks.task_abandoned(5), "reason"),
            (lambda: chunks.system("s", priority="high"), "priority"),
            (lambda: chunks.system("s", priority=1.5), "priority"),
            (lambda: chunks.system("s", priority=True), "priority"),
            (lambda: chunks.tool_call(5, {}), "tool"),
            (lambda: chunks.tool_call("", {}), "tool"),
            (lambda: chunks.tool_call("t", {}, call_id=7), "call_id"),
            (lambda: chunks.tool_result("t", "o", success="yes"), "success"),
            (lambda: chunks.subagent_result("a", "r", success=1), "success"),
            (lambda: chunks.progress_summary("p", original_count=-1), "original_count"),
            (lambda: chunks.progress_summary("p", original_count=True), "original_count"),
            (lambda: chunks.progress_summary("p", compacted_at="now"), "compacted_at"),
            (lambda: chunks.todo_update("buy milk"), "todos"),
            (lambda: chunks.todo_update({"a": 1}), "todos"),
            (lambda: chunks.user("u", pinned="yes"), "pinned"),
            (lambda: chunks.user("u", custom=[("a", 1)]), "custom"),
            (lambda: chunks.user("u", custom={"a": {1, 2}}), "custom.a"),
            (lambda: chunks.user("u", custom={1: "a"}), "custom"),
            (lambda: chunks.custom(5, "c"), "kind"),
            (lambda: Chunk(type="BOGUS", content="x"), "type"),
            (lambda: Chunk(type=3, content="x"), "type"),
            (lambda: Chunk(type=ChunkType.AGENT, content="x", action=""), "action"),
            (lambda: Chunk(type=ChunkType.AGENT, content="x", subtype=5), "subtype"),
            (lambda: Chunk(type=ChunkType.AGENT, content="x", metadata={}), "metadata"),
        ],
    )
    def test_wrong_types_name_the_field(self, make: Callable[[], Chunk], field: str) -> None:
        with raises_naming(field):
            make()

    @pytest.mark.parametrize("bad", ["", "   ", "\n\t", 5, b"chunk_1"])
    def test_empty_or_non_string_ids_are_rejected(self, bad: Any) -> None:
        with raises_naming("id"):
            chunks.user("u", id=bad)

    @pytest.mark.parametrize(
        "content",
        [
            math.nan,
            math.inf,
            -math.inf,
            {1, 2},
            frozenset(),
            b"bytes",
            bytearray(b"x"),
            object(),
            dt.datetime(2024, 1, 1, tzinfo=dt.UTC),
            {1: "int key"},
            {"nested": [1, {"deep": math.nan}]},
            [1, {2}],
        ],
        ids=lambda value: "object()" if type(value) is object else repr(value),
    )
    def test_non_json_content_is_rejected(self, content: Any) -> None:
        with pytest.raises(InvalidChunkError, match=r"^content") as info:
            chunks.tool_result("t", content)

        assert info.value.field.startswith("content")

    def test_non_json_content_error_says_where_in_the_content(self) -> None:
        """``freeze_json`` names the path (``content.args[2]``); the error must keep it."""
        with pytest.raises(InvalidChunkError) as info:
            chunks.tool_call("t", {"args": [1, 2, {3}]})

        assert "content.args[2]" in str(info.value)

    @pytest.mark.parametrize("role", ["bot", "tool", "System", "", 5])
    def test_unknown_role_is_rejected(self, role: Any) -> None:
        with raises_naming("role"):
            chunks.custom("note", "n", role=role)

    @pytest.mark.parametrize("role", [["user"], {"user": 1}], ids=repr)
    def test_unhashable_role_is_rejected_as_invalid(self, role: Any) -> None:
        with raises_naming("role"):
            Chunk(type=ChunkType.AGENT, content="x", role=role)

    def test_naive_created_at_is_rejected(self) -> None:
        with raises_naming("created_at"):
            chunks.user("u", created_at=dt.datetime(2024, 1, 1))

    def test_non_datetime_created_at_is_rejected(self) -> None:
        with raises_naming("created_at"):
            chunks.user("u", created_at="2024-01-01T00:00:00+00:00")

    def test_naive_compacted_at_is_rejected(self) -> None:
        with raises_naming("compacted_at"):
            chunks.progress_summary("p", compacted_at=dt.datetime(2024, 1, 1))

    @pytest.mark.parametrize(
        ("constructor", "args", "kwargs", "field"),
        [
            pytest.param(constructor, args, kwargs, field, id=f"{constructor}-{field}")
            for constructor, args, kwargs, field in [
                ("tool_call", (None, {}), {}, "tool"),
                ("skill_call", (None, {}), {}, "skill"),
                ("tool_result", (None, "o"), {}, "tool"),
                ("tool_error", (None, "e"), {}, "tool"),
                ("skill_result", (None, "o"), {}, "skill"),
                ("spawn_subagent", (None, "researcher", "t"), {}, "subagent_id"),
                ("spawn_subagent", ("a1", None, "t"), {}, "agent_type"),
                ("message_to_subagent", (None, "t"), {}, "subagent_id"),
                ("subagent_result", (None, "r"), {}, "subagent_id"),
                ("parent_agent_message", (None, "t"), {}, "parent_agent_id"),
                ("task_terminated", (None, "t"), {}, "terminated_by"),
                ("tool_result", ("t", "o"), {"success": None}, "success"),
                ("subagent_result", ("a1", "r"), {"success": None}, "success"),
                ("user", ("u",), {"pinned": None}, "pinned"),
            ]
        ],
    )
    def test_required_arguments_reject_none(
        self, constructor: str, args: tuple[Any, ...], kwargs: dict[str, Any], field: str
    ) -> None:
        """DESIGN.md's signatures make these a str or a bool; None would silently drop data."""
        with pytest.raises(InvalidChunkError, match=field):
            getattr(chunks, constructor)(*args, **kwargs)

    def test_is_a_value_error(self) -> None:
        with pytest.raises(ValueError, match="text"):
            chunks.user(5)


class TestImmutability:
    def test_fields_cannot_be_assigned(self) -> None:
        chunk = chunks.user("u")

        with pytest.raises(attrs.exceptions.FrozenInstanceError):
            chunk.content = "changed"  # type: ignore[misc]

    @pytest.mark.parametrize(
        "mutate",
        [
            lambda d: d.__setitem__("path", "/etc/passwd"),
            lambda d: d.__delitem__("path"),
            lambda d: d.update(path="x"),
            lambda d: d.pop("path"),
            lambda d: d.popitem(),
            lambda d: d.setdefault("new", 1),
            lambda d: d.clear(),
            lambda d: d.__ior__({"new": 1}),
        ],
        ids=["setitem", "delitem", "update", "pop", "popitem", "setdefault", "clear", "ior"],
    )
    def test_json_object_content_cannot_be_changed(self, mutate: Callable[[Any], Any]) -> None:
        chunk = chunks.tool_call("read_file", {"path": "/src/main.ts"})

        with pytest.raises(TypeError, match="immutable"):
            mutate(chunk.content)

        assert chunk.content == {"path": "/src/main.ts"}

    def test_json_content_is_frozen_all_the_way_down(self) -> None:
        chunk = chunks.tool_call("t", {"a": [1, {"b": [2]}]})

        assert isinstance(chunk.content, FrozenDict)
        assert chunk.content["a"] == (1, FrozenDict({"b": (2,)}))
        assert isinstance(chunk.content["a"][1]["b"], tuple)

    def test_later_changes_to_the_callers_value_do_not_reach_the_chunk(self) -> None:
        arguments = {"paths": ["/a"]}
        custom = {"tags": ["x"]}
        chunk = chunks.tool_call("t", arguments, custom=custom)

        arguments["paths"].append("/b")
        custom["tags"].append("y")

        assert chunk.content == {"paths": ("/a",)}
        assert chunk.metadata.custom == {"tags": ("x",)}

    def test_metadata_custom_cannot_be_changed(self) -> None:
        chunk = chunks.user("u", custom={"k": 1})

        with pytest.raises(TypeError):
            chunk.metadata.custom["k"] = 2

    def test_evolve_gives_a_new_chunk_and_leaves_the_old_one(self) -> None:
        chunk = chunks.tool_call("t", {"a": 1}, id="c1")

        changed = attrs.evolve(chunk, content={"a": 2})

        assert (changed.id, changed.content, chunk.content) == ("c1", {"a": 2}, {"a": 1})
        assert changed != chunk

    def test_evolve_validates(self) -> None:
        with raises_naming("role"):
            attrs.evolve(chunks.user("u"), role="robot")

    def test_equal_chunks_are_equal_and_hash_alike(self) -> None:
        a = chunks.tool_call("t", {"a": [1]}, id="c1", created_at=WHEN)
        b = chunks.tool_call("t", {"a": [1]}, id="c1", created_at=WHEN)

        assert a == b
        assert hash(a) == hash(b)
        assert len({a, b}) == 1

    @settings(max_examples=examples(50), deadline=None)
    @given(call=constructor_calls())
    def test_every_constructed_chunk_is_hashable(self, call: ConstructorCall) -> None:
        chunk = call.make()

        assert hash(chunk) == hash(attrs.evolve(chunk))


class TestDerivedFrom:
    """``metadata.derived_from``: which chunks a compressed or summarised chunk stands for."""

    def test_a_chunk_is_not_derived_by_default_and_says_nothing_about_it(self) -> None:
        chunk = chunks.user("hi", id="u")
        assert chunk.metadata.derived_from is None
        assert "derived_from" not in chunk.metadata.to_dict()

    def test_a_list_of_ids_becomes_a_tuple_and_is_written_as_a_list(self) -> None:
        meta = ChunkMetadata(derived_from=["a", "b"])  # type: ignore[arg-type]
        assert meta.derived_from == ("a", "b")
        assert meta.to_dict() == {"derived_from": ["a", "b"]}

    @pytest.mark.parametrize("bad", [(), ("",), (1,), "a", 3])
    def test_anything_but_chunk_ids_is_refused(self, bad: object) -> None:
        with pytest.raises(InvalidChunkError, match=r"metadata\.derived_from"):
            ChunkMetadata(derived_from=bad)  # type: ignore[arg-type]

    def test_it_round_trips_through_the_state_format(self) -> None:
        from memctx.statefile import chunk_from_dict, chunk_to_dict

        chunk = chunks.progress_summary("s", original_count=2, id="sum")
        chunk = attrs.evolve(chunk, metadata=attrs.evolve(chunk.metadata, derived_from=("a", "b")))
        assert chunk_from_dict(chunk_to_dict(chunk)) == chunk
