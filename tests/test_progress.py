"""Progress: a long operation tells its callback ``(done, total)`` about a hundred times."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from memctx._progress import Progress


def record(total: int, steps: list[int], *, finish: bool = True) -> list[tuple[int, int]]:
    seen: list[tuple[int, int]] = []
    progress = Progress(lambda done, of: seen.append((done, of)))
    progress.start(total)
    for step in steps:
        progress.advance(step)
    if finish:
        progress.finish()
    return seen


class TestProgress:
    @given(total=st.integers(0, 20_000), data=st.data())
    def test_from_zero_to_the_total_in_order_about_a_hundred_times(
        self, total: int, data: st.DataObject
    ) -> None:
        steps = data.draw(st.lists(st.integers(0, 500), max_size=200))

        seen = record(total, steps)

        assert seen[0] == (0, total)
        assert seen[-1] == (total, total)
        dones = [done for done, _ in seen]
        assert dones == sorted(set(dones))
        assert {of for _, of in seen} == {total}
        assert len(seen) <= 102

    def test_one_step_at_a_time_reports_each_percent(self) -> None:
        seen = record(1000, [1] * 1000, finish=False)

        assert [done for done, _ in seen] == list(range(0, 1001, 10))

    def test_done_never_passes_the_total(self) -> None:
        assert record(10, [7, 7, 7], finish=False) == [(0, 10), (7, 10), (10, 10)]

    def test_over_counts_each_item_after_it_is_used(self) -> None:
        seen: list[int] = []
        progress = Progress(lambda done, total: seen.append(done))
        progress.start(3)

        used = []
        for item in progress.over("abc"):
            used.append((item, progress.done))

        assert used == [("a", 0), ("b", 1), ("c", 2)]
        assert seen == [0, 1, 2, 3]

    def test_without_a_callback_nothing_is_counted(self) -> None:
        progress = Progress(None)
        progress.start(10)
        progress.advance(5)

        assert list(progress.over([1, 2])) == [1, 2]
        assert progress.done == 0

    def test_a_callback_that_is_not_callable_is_refused(self) -> None:
        with pytest.raises(TypeError, match="on_progress: must be a function"):
            Progress(42)  # type: ignore[arg-type]
