"""MemoryState: an ordered, immutable collection of chunks."""

from __future__ import annotations

import datetime as dt
import pickle
from typing import Any

import attrs
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from memctx import (
    Chunk,
    ChunkNotFoundError,
    ChunkType,
    DuplicateChunkError,
    InvalidChunkError,
    MemoryState,
    chunks,
)
from strategies import any_chunks, examples, states

WHEN = dt.datetime(2026, 1, 2, 3, 4, 5, tzinfo=dt.UTC)


def make(chunk_id: str, text: str = "x") -> Chunk:
    return chunks.user(text, id=chunk_id, created_at=WHEN)


@pytest.fixture
def abc() -> MemoryState:
    return MemoryState(
        [
            chunks.system("s", id="a", created_at=WHEN),
            chunks.user("u", id="b", created_at=WHEN),
            chunks.tool_call("t", {}, id="c", created_at=WHEN),
            chunks.user("v", id="d", created_at=WHEN),
        ],
        thread_id="t1",
    )


class TestOrdering:
    def test_keeps_the_order_given(self, abc: MemoryState) -> None:
        assert abc.ids == ("a", "b", "c", "d")
        assert [chunk.id for chunk in abc] == ["a", "b", "c", "d"]

    def test_has_length_and_positions(self, abc: MemoryState) -> None:
        assert len(abc) == 4
        assert abc[0].id == "a"
        assert abc[-1].id == "d"

    def test_slice_is_a_state_with_the_same_thread(self, abc: MemoryState) -> None:
        part = abc[1:3]

        assert isinstance(part, MemoryState)
        assert (part.ids, part.thread_id) == (("b", "c"), "t1")

    def test_empty_state(self) -> None:
        state = MemoryState()

        assert (len(state), state.ids, state.thread_id) == (0, (), None)

    def test_accepts_any_iterable_and_stores_a_tuple(self) -> None:
        state = MemoryState(make(i) for i in ("x", "y"))

        assert state.chunks == (make("x"), make("y"))
        assert isinstance(state.chunks, tuple)

    @settings(max_examples=examples(30), deadline=None)
    @given(state=states(any_chunks))
    def test_any_state_keeps_order_and_finds_every_chunk(self, state: MemoryState) -> None:
        assert state.ids == tuple(chunk.id for chunk in state.chunks)
        for position, chunk in enumerate(state):
            assert state.get(chunk.id) is chunk
            assert state.index_of(chunk.id) == position


class TestLookup:
    def test_get_by_id(self, abc: MemoryState) -> None:
        assert abc.get("c").action == "tool_call"

    def test_get_of_an_unknown_id_raises_chunk_not_found_naming_it(self, abc: MemoryState) -> None:
        with pytest.raises(ChunkNotFoundError, match="'zz'") as info:
            abc.get("zz")

        assert info.value.chunk_id == "zz"
        assert isinstance(info.value, LookupError)

    def test_index_of(self, abc: MemoryState) -> None:
        assert abc.index_of("c") == 2
        with pytest.raises(ChunkNotFoundError):
            abc.index_of("zz")

    def test_contains_an_id(self, abc: MemoryState) -> None:
        assert "b" in abc
        assert "zz" not in abc

    def test_contains_a_chunk_only_when_it_is_the_same_chunk(self, abc: MemoryState) -> None:
        assert abc[1] in abc
        assert chunks.user("other", id="b") not in abc


class TestOfType:
    def test_filters_by_one_type_in_order(self, abc: MemoryState) -> None:
        assert [c.id for c in abc.of_type(ChunkType.AGENT)] == ["b", "d"]

    def test_filters_by_several_types(self, abc: MemoryState) -> None:
        assert [c.id for c in abc.of_type(ChunkType.SYSTEM, ChunkType.WORKFLOW)] == ["a", "c"]

    def test_accepts_type_names(self, abc: MemoryState) -> None:
        assert abc.of_type("WORKFLOW") == abc.of_type(ChunkType.WORKFLOW)

    def test_type_without_chunks_gives_nothing(self, abc: MemoryState) -> None:
        assert abc.of_type(ChunkType.OUTPUT) == ()

    @settings(max_examples=examples(30), deadline=None)
    @given(state=states(any_chunks))
    def test_types_partition_the_state(self, state: MemoryState) -> None:
        by_type = [chunk for t in ChunkType for chunk in state.of_type(t)]

        assert sorted(c.id for c in by_type) == sorted(state.ids)


class TestAppend:
    def test_returns_a_new_state_and_leaves_the_old_one(self, abc: MemoryState) -> None:
        longer = abc.append(make("e"))

        assert longer.ids == ("a", "b", "c", "d", "e")
        assert abc.ids == ("a", "b", "c", "d")
        assert longer.thread_id == "t1"

    def test_appends_several_in_order(self, abc: MemoryState) -> None:
        assert abc.append(make("e"), make("f")).ids[-2:] == ("e", "f")

    def test_extend_takes_an_iterable(self, abc: MemoryState) -> None:
        assert abc.extend(iter([make("e")])).ids[-1] == "e"

    def test_appended_chunks_can_be_looked_up(self, abc: MemoryState) -> None:
        longer = abc.append(make("e"))

        assert longer.get("e").id == "e"
        assert longer.index_of("e") == 4
        assert "e" not in abc

    def test_chained_appends_are_independent(self) -> None:
        base = MemoryState([make("a")])

        left, right = base.append(make("b")), base.append(make("c"))

        assert (left.ids, right.ids) == (("a", "b"), ("a", "c"))
        with pytest.raises(ChunkNotFoundError):
            left.get("c")

    def test_rejects_a_non_chunk_naming_its_position(self, abc: MemoryState) -> None:
        with pytest.raises(InvalidChunkError, match=r"^chunks\[1\]: "):
            abc.append(make("e"), "not a chunk")  # type: ignore[arg-type]

    def test_a_parent_does_not_see_what_was_appended_to_it(self, abc: MemoryState) -> None:
        longer = abc.append(make("e"))

        assert (len(abc), list(abc)[-1].id, abc[-1].id, abc.chunks[-1].id) == (4, "d", "d", "d")
        with pytest.raises(IndexError):
            abc[4]
        assert longer[4].id == longer[-1].id == "e"

    def test_out_of_range_positions_raise_index_error(self, abc: MemoryState) -> None:
        with pytest.raises(IndexError):
            abc[-5]
        with pytest.raises(IndexError):
            abc.append(make("e"))[5]

    def test_appending_nothing_then_branching_keeps_both_states(self, abc: MemoryState) -> None:
        same = abc.extend([])

        left, right = same.append(make("x")), abc.append(make("y"))

        assert (same.ids, left.ids[-1], right.ids[-1]) == (abc.ids, "x", "y")
        assert "x" not in right
        assert "y" not in left

    @settings(max_examples=examples(60), deadline=None)
    @given(
        steps=st.lists(
            st.tuples(st.integers(min_value=0, max_value=50), st.integers(0, 3)),
            min_size=1,
            max_size=25,
        )
    )
    def test_any_tree_of_appends_equals_states_built_at_once(
        self, steps: list[tuple[int, int]]
    ) -> None:
        """Appending shares one chunk list along a history; branches must never see each other."""
        made = [MemoryState([make("root")], thread_id="t")]
        contents = [[make("root")]]
        for number, (parent_pick, count) in enumerate(steps):
            pick = parent_pick % len(made)
            added = [make(f"n{number}-{i}") for i in range(count)]
            made.append(made[pick].extend(added))
            contents.append(contents[pick] + added)

        for state, content in zip(made, contents, strict=True):
            ids = [chunk.id for chunk in content]
            at_once = MemoryState(content, thread_id="t")
            assert state == at_once
            assert (len(state), state.ids, state.thread_id) == (len(ids), tuple(ids), "t")
            assert [state.index_of(i) for i in ids] == list(range(len(ids)))
            assert all(state[p].id == i for p, i in enumerate(ids))
            others = {c.id for s in made for c in s} - set(ids)
            assert not any(i in state for i in others)


class TestDuplicateIds:
    def test_are_rejected_on_construction(self) -> None:
        with pytest.raises(DuplicateChunkError, match="'a'") as info:
            MemoryState([make("a"), make("b"), make("a", "different")])

        assert info.value.chunk_id == "a"

    def test_are_rejected_on_append(self, abc: MemoryState) -> None:
        with pytest.raises(DuplicateChunkError, match="'b'"):
            abc.append(make("b"))

    def test_within_one_append_are_rejected(self, abc: MemoryState) -> None:
        with pytest.raises(DuplicateChunkError, match="'e'"):
            abc.append(make("e"), make("e"))

    def test_a_rejected_append_leaves_the_state_usable(self, abc: MemoryState) -> None:
        with pytest.raises(DuplicateChunkError):
            abc.append(make("e"), make("a"))

        assert abc.append(make("e")).ids == ("a", "b", "c", "d", "e")

    def test_even_the_same_chunk_twice_is_rejected(self) -> None:
        chunk = make("a")

        with pytest.raises(DuplicateChunkError):
            MemoryState([chunk, chunk])


class TestEquality:
    def test_same_chunks_same_order_same_thread_are_equal(self) -> None:
        one = MemoryState([make("a"), make("b")], thread_id="t")
        two = MemoryState([make("a"), make("b")], thread_id="t")

        assert one == two
        assert hash(one) == hash(two)

    def test_appending_gives_a_state_equal_to_one_built_at_once(self) -> None:
        assert MemoryState([make("a")]).append(make("b")) == MemoryState([make("a"), make("b")])

    @pytest.mark.parametrize(
        "other",
        [
            MemoryState([make("b"), make("a")], thread_id="t"),
            MemoryState([make("a"), make("b")], thread_id="u"),
            MemoryState([make("a"), make("b")]),
            MemoryState([make("a"), make("b", "changed")], thread_id="t"),
            MemoryState([make("a")], thread_id="t"),
        ],
        ids=["order", "thread", "no thread", "content", "length"],
    )
    def test_differs_when_anything_differs(self, other: MemoryState) -> None:
        assert MemoryState([make("a"), make("b")], thread_id="t") != other

    def test_is_not_equal_to_a_tuple_of_its_chunks(self) -> None:
        state = MemoryState([make("a")])

        assert state != state.chunks


class TestImmutability:
    def test_fields_cannot_be_assigned(self, abc: MemoryState) -> None:
        with pytest.raises(attrs.exceptions.FrozenInstanceError):
            abc.chunks = ()  # type: ignore[misc]

    def test_survives_a_pickle_round_trip_and_can_still_grow(self, abc: MemoryState) -> None:
        copy = pickle.loads(pickle.dumps(abc.append(make("e"))))

        assert (copy, copy.append(make("f")).ids[-1]) == (abc.append(make("e")), "f")

    def test_changing_the_input_list_does_not_change_the_state(self) -> None:
        given_chunks = [make("a")]
        state = MemoryState(given_chunks)

        given_chunks.append(make("b"))

        assert state.ids == ("a",)

    def test_filter_returns_a_new_state(self, abc: MemoryState) -> None:
        only_user = abc.filter(lambda chunk: chunk.role == "user")

        assert (only_user.ids, only_user.thread_id) == (("b", "d"), "t1")
        assert len(abc) == 4

    def test_with_thread_id_returns_a_new_state(self, abc: MemoryState) -> None:
        moved = abc.with_thread_id("t2")

        assert (moved.thread_id, moved.ids, abc.thread_id) == ("t2", abc.ids, "t1")


class TestThreadId:
    @pytest.mark.parametrize("thread_id", ["", 5, ["t1"]], ids=repr)
    def test_must_be_a_non_empty_string_or_none(self, thread_id: Any) -> None:
        """A state that ``save_state`` writes must be one ``load_state`` reads back."""
        with pytest.raises((TypeError, ValueError)):
            MemoryState([make("a")], thread_id=thread_id)
