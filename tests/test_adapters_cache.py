"""to_anthropic(cache=True): cache_control marks on the stable prefix, checked by replaying
consecutive builds through the official anthropic client (over a mock transport)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import attrs
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from adapter_cases import TRAJECTORIES
from anthropic_cache import Cache, blocks, marked, shared_blocks
from histories import agent_histories
from memctx import (
    BudgetExceededError,
    Chunk,
    ContextBuildResult,
    EmptyContextError,
    MemoryState,
    chunks,
    create_builder,
    create_tokenizer,
)
from memctx.adapters import CLOSING_TURN, OPENING_TURN, to_anthropic
from memctx.importers import load_openai_transcript
from provider_rules import anthropic_violations
from sdk_clients import Recorder, anthropic_client, check_anthropic_types
from strategies import examples

GPT4O = create_tokenizer("gpt-4o")
TOOLS = [
    {"name": name, "description": f"The {name} tool.", "input_schema": {"type": "object"}}
    for name in ("sh", "read", "edit")
]


def agent_run(turns: int) -> Iterator[Chunk]:
    """A system prompt and a pinned task, then turns of a call, its output and now and
    then a remark of the agent."""
    yield chunks.system("You are a coding agent.", id="sys")
    yield chunks.user("Fix the failing retry test.", id="task", pinned=True)
    for n in range(turns):
        tool = ("sh", "read", "edit")[n % 3]
        yield chunks.tool_call(tool, {"arg": f"step {n}"}, call_id=f"c{n}", id=f"call{n}")
        output = "\n".join(f"line {k} of output {n}" for k in range(5 + (n * 7) % 40))
        yield chunks.tool_result(tool, output, call_id=f"c{n}", id=f"out{n}")
        if n % 4 == 3:
            yield chunks.assistant(f"So far: step {n} done.", id=f"note{n}")


@attrs.frozen
class Sent:
    """One build and the request body the anthropic client sent for it."""

    result: ContextBuildResult
    body: dict[str, Any]
    tools: str


def send_all(results: list[ContextBuildResult], tools: str, **options: Any) -> Iterator[Sent]:
    recorder = Recorder()
    client = anthropic_client(recorder)
    for result in results:
        try:
            request = result.to_anthropic(tools=tools, cache=True, **options)
        except EmptyContextError:
            continue
        check_anthropic_types(request)
        client.messages.create(model="claude-sonnet-5", max_tokens=1024, **request)
        yield Sent(result, recorder.last, tools)


def replay(items: list[Chunk], budget: int | None, strategy: str, **options: Any) -> list[Any]:
    """A build before every model call: after each chunk that is not the agent's own."""
    builder = create_builder(GPT4O)
    state = MemoryState()
    results = []
    for chunk in items:
        state = state.append(chunk)
        if builder.render(chunk)[0] == "user":  # the model is called next
            results.append(builder.build(state, max_tokens=budget, strategy=strategy, **options))
    return results


def message_ends(body: dict[str, Any]) -> list[int]:
    """The block index (in cache order) of each message's last block."""
    ends = []
    position = len(blocks({**body, "messages": []})) - 1
    for message in body["messages"]:
        content = message["content"]
        position += 1 if isinstance(content, str) else len(content)
        ends.append(position)
    return ends


def same_frame(before: Sent, after: Sent) -> bool:
    """The same tools and system: a change there starts every cache afresh, whatever is
    marked (in native mode ``tools`` appears with the first call, for instance)."""
    return before.body.get("tools") == after.body.get("tools") and before.body.get(
        "system"
    ) == after.body.get("system")


def body_ends(body: dict[str, Any]) -> list[int]:
    """:func:`message_ends` of the build's own messages (not the turns the adapter added)."""
    ends = message_ends(body)
    contents = [m["content"] for m in body["messages"]]
    if contents[-1] == CLOSING_TURN:
        ends = ends[:-1]
    if contents[0] == OPENING_TURN:
        ends = ends[1:]
    return ends


def new_marks(sent: Sent) -> set[int]:
    """Where marks on content the previous request did not send may go: the end of the
    message before the newest (write) and of the newest when it is a user turn; in native
    mode neither at or after a message holding a call no included result answers yet."""
    body = sent.body
    ends = body_ends(body)
    write, newest = len(ends) - 2, len(ends) - 1
    if body["messages"][-1]["role"] != "user" or body["messages"][-1]["content"] == CLOSING_TURN:
        newest = -1
    if sent.tools == "native":
        chunks_ = sent.result.included_chunks
        answered = {c.metadata.call_id for c in chunks_ if c.type.value == "ENVIRONMENT"}
        waiting = {
            c.id
            for c in chunks_
            if c.action in ("tool_call", "skill_call")
            and c.metadata.call_id is not None
            and c.metadata.call_id not in answered
        }
        body_messages = [m for m in sent.result.messages if m.role != "system"]
        for index, message in enumerate(body_messages):
            if waiting.intersection(message.chunk_ids):
                write, newest = min(write, index - 1), -1
                break
    return {ends[i] for i in (write, newest) if i >= 0}


def grew(before: Sent, now: Sent) -> bool:
    """Whether chunks appended since ``before`` joined its newest message."""
    old = [m for m in before.result.messages if m.role != "system"]
    new = [m for m in now.result.messages if m.role != "system"]
    return len(new) >= len(old) and new[len(old) - 1] != old[-1]


def extends(before: Sent, after: Sent) -> bool:
    """``after`` sends all ``before`` sent, in the same order, then more (no drop between
    them), in the same frame."""
    old, new = before.result.included_chunk_ids, after.result.included_chunk_ids
    return new[: len(old)] == old and same_frame(before, after)


def check_run(sent: list[Sent]) -> dict[str, int]:
    """The rules for a replayed run; returns what happened, to be asserted on."""
    seen = {"requests": 0, "extending": 0, "servable": 0, "served_whole": 0}
    cache = Cache()
    for index, now in enumerate(sent):
        body = now.body
        marks = marked(body)
        assert anthropic_violations(body) == []
        assert len(marks) <= 4
        if "system" in body:
            assert isinstance(body["system"], list)
            assert "cache_control" in body["system"][-1]
        read = cache.send(body)
        seen["requests"] += 1
        if index == 0:
            continue
        before = sent[index - 1]
        same = shared_blocks(before.body, body)
        # Every mark but the write mark lies on what the previous request sent.
        outside = {m for m in marks if m >= same}
        if same_frame(before, now):
            assert outside <= new_marks(now)
        if extends(before, now):
            seen["extending"] += 1
            # What the previous request marked is repeated here ...
            assert all(m < same for m in marked(before.body))
            # ... so the cache serves all of it up to its last mark: the whole previous
            # build when it ended on a user turn, else all but its newest message.
            assert read >= max(marked(before.body)) + 1
            ends = body_ends(before.body)
            whole = ends[-1] if before.body["messages"][-1]["role"] == "user" else ends[:-1]
            if whole:
                seen["servable"] += 1
                seen["served_whole"] += read >= (whole if isinstance(whole, int) else whole[-1]) + 1
    return seen


@pytest.mark.parametrize("tools", ["text", "native"])
class TestAStableRun:
    def test_marks_repeat_from_request_to_request_and_the_cache_serves_them(
        self, tools: str
    ) -> None:
        results = replay(list(agent_run(150)), 4_000, "stable")

        seen = check_run(list(send_all(results, tools, tool_definitions=TOOLS)))

        assert seen["requests"] == len(results)
        assert seen["extending"] >= 0.8 * len(results)
        assert seen["served_whole"] == seen["servable"] >= seen["extending"] - 1

    def test_the_real_runs_replayed_turn_by_turn(self, tools: str) -> None:
        for path in TRAJECTORIES:
            state, _ = load_openai_transcript(json.loads(path.read_text(encoding="utf-8")))
            for budget in (8_000, 32_000):
                results = replay(list(state), budget, "stable")
                seen = check_run(list(send_all(results, tools)))
                assert seen["extending"] >= 0.5 * len(results), (path.name, budget)


class TestWhereTheMarksGo:
    def test_the_system_becomes_a_marked_text_block(self) -> None:
        state = MemoryState([chunks.system("Be brief."), chunks.user("hi", id="u")])

        request = to_anthropic(create_builder().build(state), cache=True)

        assert request["system"] == [
            {
                "type": "text",
                "text": request["system"][0]["text"],
                "cache_control": {"type": "ephemeral"},
            }
        ]
        assert request["messages"] == [
            {"role": "user", "content": request["messages"][0]["content"]}
        ]

    def test_without_cache_nothing_is_marked(self) -> None:
        results = replay(list(agent_run(20)), 2_000, "stable")

        for result in results:
            assert "cache_control" not in json.dumps(result.to_anthropic(tools="native"))
            assert isinstance(result.to_anthropic(tools="text").get("system"), str)

    def test_a_first_build_marks_the_message_before_the_newest_and_a_newest_user_turn(
        self,
    ) -> None:
        ends_on_result = create_builder().build(MemoryState(list(agent_run(3))))
        ends_on_agent = create_builder().build(MemoryState(list(agent_run(4))))

        for result, newest_marked in ((ends_on_result, True), (ends_on_agent, False)):
            request = to_anthropic(result, tools="text", cache=True)
            ends = body_ends(request)
            assert marked(request) == [0, ends[-2], *ends[-1:][:newest_marked]]

    def test_a_sliding_window_over_budget_marks_only_what_it_repeats(self) -> None:
        """recent over budget drops the oldest chunk every turn: only the system and the
        pinned task repeat, and a mark after them would only pay the cache-write price."""
        results = replay(list(agent_run(60)), 1_500, "recent")
        late = results[-1]
        request = to_anthropic(late, tools="text", cache=True)

        assert late.excluded_for("over_budget")
        assert late.prefix_messages_shared == 2  # the system message and the task
        assert marked(request) == [0, message_ends(request)[0]]

    def test_marks_in_the_tool_definitions_count_against_the_limit_of_four(self) -> None:
        results = replay(list(agent_run(30)), None, "stable")
        tools = [{**t, "cache_control": {"type": "ephemeral"}} for t in TOOLS]

        for result in results[1:]:
            native = {"tools": "native", "cache": True}
            assert len(marked(to_anthropic(result, **native))) == 4  # system, read, write, newest
            with_two = to_anthropic(result, **native, tool_definitions=tools[:2])
            assert len(marked(with_two)) == 4
            only = to_anthropic(result, **native, tool_definitions=tools)
            assert marked(only) == [0, 1, 2, 3]  # the caller's three, and the system
            text = to_anthropic(result, tools="text", cache=True, tool_definitions=tools)
            assert len(marked(text)) == 4

    def test_a_call_still_waiting_for_its_result_keeps_the_write_mark_before_it(self) -> None:
        """Native mode sends a waiting call as text now and as a tool_use once answered."""
        items = [
            chunks.user("go", id="u"),
            chunks.assistant("Looking.", id="a"),
            chunks.user("Also check the logs.", id="u2"),
            chunks.tool_call("sh", {"cmd": "ls"}, call_id="c1", id="call"),
            chunks.user("And hurry.", id="u3"),
        ]
        result = create_builder().build(MemoryState(items))
        native = to_anthropic(result, tools="native", cache=True)
        text = to_anthropic(result, tools="text", cache=True)

        ends = message_ends(native)
        assert marked(native) == [ends[2]]  # before the call's turn, and not the newest
        assert marked(text) == message_ends(text)[3:]  # before the newest, and the newest

    def test_given_messages_the_marks_are_the_system_and_the_last_two(self) -> None:
        result = create_builder().build(MemoryState(list(agent_run(2))))

        request = to_anthropic(list(result.messages), cache=True)

        assert marked(request) == [0, *message_ends(request)[-2:]]


@settings(max_examples=examples(40), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    state=agent_histories(),
    budget=st.one_of(st.none(), st.integers(60, 1_500)),
    tools=st.sampled_from(["text", "native"]),
)
def test_replayed_random_histories_keep_every_cache_rule(
    state: MemoryState, budget: int | None, tools: str
) -> None:
    """Build after every append with strategy="stable": at most four marks, the system
    marked, all provider rules met; every mark but the newest lies on what the previous
    request sent; and what a request marked, the next one repeats unless something was
    dropped or a call's results changed how it is sent."""
    builder = create_builder(GPT4O)
    results = []
    for length in range(1, len(state) + 1):
        try:
            results.append(builder.build(state[:length], max_tokens=budget, strategy="stable"))
        except BudgetExceededError:
            continue
    sent = list(send_all(results, tools))
    check_run_marks_only(sent)


def _results_changed(before: Sent, now: Sent) -> bool:
    """Whether a call ``before`` sent gets another result in ``now`` (native mode then
    sends the call as text, which no mark can foresee)."""

    def results(sent: Sent) -> dict[str, int]:
        counts: dict[str, int] = {}
        for chunk in sent.result.included_chunks:
            if chunk.type.value == "ENVIRONMENT" and chunk.metadata.call_id:
                counts[chunk.metadata.call_id] = counts.get(chunk.metadata.call_id, 0) + 1
        return counts

    old, new = results(before), results(now)
    return any(new.get(call_id, 0) != n for call_id, n in old.items())


def check_run_marks_only(sent: list[Sent]) -> None:
    for index, now in enumerate(sent):
        assert anthropic_violations(now.body) == []
        assert len(marked(now.body)) <= 4
        if "system" in now.body:
            assert "cache_control" in now.body["system"][-1]
        if index == 0:
            continue
        before = sent[index - 1]
        same = shared_blocks(before.body, now.body)
        outside = {m for m in marked(now.body) if m >= same}
        if same_frame(before, now):
            assert outside <= new_marks(now)
        if extends(before, now) and not _results_changed(before, now):
            # Repeated, but for the newest mark when user-side chunks joined that message.
            lost = {m for m in marked(before.body) if m >= same}
            assert lost <= ({body_ends(before.body)[-1]} if grew(before, now) else set())
