"""Property tests of the build guarantees over random states, budgets and options.

Whatever the state and options: the token count is a fresh, exact count of
the returned messages; it never exceeds the budget; calls and their results
stay together; every chunk is reported exactly once; order is the state's;
and the ``recent`` strategy leaves no holes.
"""

from __future__ import annotations

import itertools
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from memctx import (
    BudgetExceededError,
    Chunk,
    ChunkType,
    ExclusionReason,
    MemoryState,
    chunks,
    create_builder,
    create_tokenizer,
)

TOKENIZERS = {name: create_tokenizer(name) for name in ("gpt-4o", "gpt-4", "estimate")}

# Text that stresses BPE boundaries and XML: whitespace runs, newlines at the
# edges, "/" and "<" starts, special-token text, markup, non-ASCII, controls.
_pieces = st.sampled_from(
    [
        "hello",
        " world",
        "\n",
        "\n\n",
        "  ",
        "\t",
        "\r\n",
        "\r",
        "/",
        "//",
        "<",
        ">",
        "&",
        "'",
        '"',
        "</tool_result>",
        '<system_context priority="1000">',
        "]]>",
        "<|endoftext|>",
        "def f(x):\n    return x\n",
        "日本語",
        "🙂",
        "Ω",
        "\x00",
        "\x1b[0m",
        "123456",
        "'s",
        "http://x.y/z",
        "{",
        "}",
        "é",
    ]
)
texts = st.one_of(
    st.lists(_pieces, max_size=12).map("".join),
    st.text(max_size=60),
    st.integers(1, 40).map(lambda n: "lorem ipsum " * n),
)


@st.composite
def states(draw: st.DrawFn) -> MemoryState:
    """A random agent history with calls, results (some late, some missing) and delegations."""
    counter = itertools.count()
    made: list[Chunk] = []
    open_calls: list[tuple[str, str]] = []
    for _ in range(draw(st.integers(0, 25))):
        kind = draw(
            st.sampled_from(
                [
                    "user",
                    "assistant",
                    "thinking",
                    "system",
                    "call",
                    "result",
                    "spawn",
                    "summary",
                    "todo",
                    "intervention",
                    "custom",
                    "error",
                    "completed",
                ]
            )
        )
        n = next(counter)
        text = draw(texts)
        if kind == "user":
            made.append(chunks.user(text, id=f"u{n}", priority=draw(st.integers(0, 3))))
        elif kind == "assistant":
            made.append(chunks.assistant(text, id=f"a{n}", priority=draw(st.integers(0, 3))))
        elif kind == "thinking":
            made.append(chunks.thinking(text, id=f"t{n}"))
        elif kind == "system":
            made.append(chunks.system(text, id=f"s{n}"))
        elif kind == "call":
            call_id = f"c{n}"
            made.append(chunks.tool_call("sh", {"cmd": text}, call_id=call_id, id=f"call{n}"))
            open_calls.append((call_id, "tool"))
        elif kind in ("result", "error") and open_calls:
            index = draw(st.integers(0, len(open_calls) - 1))
            call_id, _ = open_calls[index]
            if draw(st.booleans()):
                open_calls.pop(index)
            if kind == "error":
                made.append(chunks.tool_error("sh", text, call_id=call_id, id=f"err{n}"))
            else:
                made.append(chunks.tool_result("sh", text, call_id=call_id, id=f"res{n}"))
        elif kind == "spawn":
            made.append(chunks.spawn_subagent(f"ag{n}", "researcher", text, id=f"sp{n}"))
            if draw(st.booleans()):
                made.append(chunks.subagent_result(f"ag{n}", text, id=f"sr{n}"))
        elif kind == "summary":
            made.append(chunks.progress_summary(text, original_count=3, id=f"ps{n}"))
        elif kind == "todo":
            made.append(chunks.todo_update([text], id=f"td{n}"))
        elif kind == "intervention":
            made.append(chunks.user_intervention(text, id=f"ui{n}"))
        elif kind == "custom":
            made.append(chunks.custom("note", {"text": text}, id=f"cu{n}"))
        else:
            made.append(chunks.task_completed(text, id=f"done{n}"))
    return MemoryState(made)


@st.composite
def options(draw: st.DrawFn, state: MemoryState) -> dict[str, Any]:
    ids = list(state.ids)
    chosen: dict[str, Any] = {
        "tokenizer": TOKENIZERS[draw(st.sampled_from(sorted(TOKENIZERS)))],
        "strategy": draw(st.sampled_from(["recent", "recent", "priority", "in_order"])),
        "max_tokens": draw(st.one_of(st.none(), st.integers(1, 3000))),
        "include_system": draw(st.booleans()),
        "include_environment": draw(st.booleans()),
        "exclude_types": draw(st.lists(st.sampled_from(list(ChunkType)), max_size=2)),
        "system_prompt": draw(st.one_of(st.none(), texts)),
        "pin_newest": draw(st.booleans()),
        "pin_pending_calls": draw(st.booleans()),
    }
    if ids and draw(st.booleans()):
        chosen["pinned_chunk_ids"] = draw(st.lists(st.sampled_from(ids), max_size=2))
    if ids and draw(st.integers(0, 4)) == 0:
        chosen["include_only_chunk_ids"] = draw(st.lists(st.sampled_from(ids), max_size=len(ids)))
    if chosen["max_tokens"] is not None and draw(st.booleans()):
        chosen["reserve_tokens"] = draw(st.integers(0, chosen["max_tokens"] - 1))
    return chosen


def _units(state: MemoryState) -> list[set[str]]:
    groups: dict[tuple[str, str], set[str]] = {}
    for chunk in state:
        meta = chunk.metadata
        if chunk.action in ("tool_call", "tool_result") and meta.call_id:
            groups.setdefault(("call", meta.call_id), set()).add(chunk.id)
        if chunk.action in ("spawn_subagent", "subagent_result") and meta.subagent_id:
            groups.setdefault(("agent", meta.subagent_id), set()).add(chunk.id)
    return list(groups.values())


@settings(max_examples=250, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_build_guarantees_hold_for_any_state_and_options(data: st.DataObject) -> None:
    state = data.draw(states())
    opts = data.draw(options(state))
    tokenizer = opts["tokenizer"]
    builder = create_builder()
    try:
        result = builder.build(state, **opts)
    except BudgetExceededError as exc:
        needed, available = exc.needed, exc.available
        assert needed > available
        bigger = dict(opts, max_tokens=needed + opts.get("reserve_tokens", 0))
        builder.build(state, **bigger)  # exactly enough for what must be kept
        return

    # 1. The count is a fresh count of exactly these messages.
    assert result.token_count == tokenizer.count_messages(result.messages)
    # 2. Within the budget.
    if opts["max_tokens"] is not None:
        assert result.token_count <= opts["max_tokens"] - opts.get("reserve_tokens", 0)
    # 3. Every chunk reported exactly once, both lists in state order.
    position = {chunk_id: i for i, chunk_id in enumerate(state.ids)}
    included, excluded = result.included_chunk_ids, result.excluded_chunk_ids
    assert set(included).isdisjoint(excluded)
    assert set(included) | set(excluded) == set(state.ids)
    assert list(included) == sorted(included, key=position.__getitem__)
    assert list(excluded) == sorted(excluded, key=position.__getitem__)
    assert set(result.exclusions) == set(excluded)
    # 4. Messages hold exactly the included chunks, body in state order, roles alternate.
    body_ids = [i for m in result.messages if m.role != "system" for i in m.chunk_ids]
    system_ids = [i for m in result.messages if m.role == "system" for i in m.chunk_ids]
    assert sorted(body_ids + system_ids, key=position.__getitem__) == list(included)
    assert body_ids == sorted(body_ids, key=position.__getitem__)
    roles = [m.role for m in result.messages]
    assert all(a != b for a, b in itertools.pairwise(roles))
    assert "system" not in roles[1:]
    # 5. Atomic units: among chunks no option filtered, all members in or all out.
    filtered = {
        i for i in excluded if result.exclusions[i].reason is not ExclusionReason.OVER_BUDGET
    }
    for unit in _units(state):
        considered = unit - filtered
        kept = considered & set(included)
        assert not kept or kept == considered, (unit, kept)
    # 6. "recent" leaves no holes: everything dropped for the budget is older than
    #    every non-pinned chunk that was kept.
    if opts["strategy"] == "recent":
        over = [position[i] for i in result.excluded_for(ExclusionReason.OVER_BUDGET)]
        pinned = _pinned(state, opts, filtered)
        kept_free = [position[i] for i in included if i not in pinned]
        if over and kept_free:
            assert max(over) < min(kept_free)


def _pinned(state: MemoryState, opts: dict[str, Any], filtered: set[str]) -> set[str]:
    candidates = [c for c in state if c.id not in filtered]
    seeds = {c.id for c in candidates if c.type is ChunkType.SYSTEM or c.pinned}
    seeds |= set(opts.get("pinned_chunk_ids", ())) - filtered
    if opts["pin_newest"] and candidates:
        seeds.add(candidates[-1].id)
    units = _units(state)
    if opts["pin_pending_calls"]:
        for unit in units:
            if len(unit) == 1:
                seeds |= unit - filtered
    for unit in units:
        if unit & seeds:
            seeds |= unit - filtered
    return seeds


@pytest.mark.parametrize("name", sorted(TOKENIZERS))
@settings(max_examples=60, deadline=None)
@given(segments=st.lists(texts, min_size=1, max_size=8))
def test_segment_counts_add_up_to_the_count_of_the_whole(name: str, segments: list[str]) -> None:
    """The method behind exact counts: rendered chunks joined by newlines.

    A segment is XML plus a newline; the next starts with ``<``. Then the
    tokens of the joined text are the sum of the segments' tokens.
    """
    tokenizer = TOKENIZERS[name]
    if not getattr(tokenizer, "exact", False) and name == "estimate":
        return  # chars/4 rounds per whole message; the builder recounts it
    builder = create_builder()
    rendered = [
        builder.render(chunks.user(text, id=f"u{i}"))[1] + "\n" for i, text in enumerate(segments)
    ]
    assert tokenizer.count("".join(rendered)) == sum(tokenizer.count(s) for s in rendered)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_incremental_builds_equal_fresh_uncached_builds(data: st.DataObject) -> None:
    """Appending and rebuilding reuses memoised work; the result must not change."""
    from memctx.statefile import dumps_state, loads_state

    full = data.draw(states())
    budget = data.draw(st.one_of(st.none(), st.integers(60, 2000)))
    tokenizer = TOKENIZERS[data.draw(st.sampled_from(sorted(TOKENIZERS)))]
    builder = create_builder()
    grown = MemoryState()
    for chunk in full:
        grown = grown.append(chunk)
        try:
            incremental = builder.build(grown, max_tokens=budget, tokenizer=tokenizer)
        except BudgetExceededError:
            continue
        fresh_state = loads_state(dumps_state(grown))  # new chunk objects: nothing memoised
        fresh = create_builder().build(fresh_state, max_tokens=budget, tokenizer=tokenizer)
        assert incremental.messages == fresh.messages
        assert incremental.token_count == fresh.token_count
        assert incremental.excluded_chunk_ids == fresh.excluded_chunk_ids
