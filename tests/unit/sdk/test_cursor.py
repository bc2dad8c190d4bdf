"""The concurrent cursor's merged ranges, and the final-state cursor."""

from __future__ import annotations

import json
import random
import sys
import threading
from collections.abc import Iterator, Mapping
from typing import Any

import pytest

from headwater.errors import StateError
from headwater.sdk._cursor import ConcurrentCursor, FinalStateCursor
from headwater.sdk._partition import Partition
from headwater.sdk._state_converters import (
    EpochSecondsStateConverter,
    IntegerStateConverter,
    IsoDateTimeStateConverter,
    StateConverter,
)

DAY = 86400


def day(n: int) -> str:
    return f"2024-01-{n:02d}T00:00:00Z"


def window(n: int) -> Partition:
    """Window ``n`` (1-based) covers day n to day n+1 of January 2024."""
    return Partition("orders", f"w{n}", {"start": day(n), "end": day(n + 1)})


def iso_cursor(state: Mapping[str, Any] | None = None, start: str = day(1)) -> ConcurrentCursor:
    return ConcurrentCursor(
        cursor_field="updated_at",
        converter=IsoDateTimeStateConverter(),
        state=state,
        start=start,
    )


def int_cursor(
    state: Mapping[str, Any] | None = None, start: int = 0, **kwargs: Any
) -> ConcurrentCursor:
    return ConcurrentCursor(
        cursor_field="id", converter=IntegerStateConverter(), state=state, start=start, **kwargs
    )


def close(cursor: ConcurrentCursor, low: int, high: int) -> None:
    cursor.close_partition(Partition("s", f"{low}-{high}", {"start": low, "end": high}))


class TestOutOfOrderCompletion:
    def test_windows_closed_3_1_4_2_merge_into_one_range(self) -> None:
        cursor = iso_cursor()
        for n in (3, 1, 4):
            cursor.close_partition(window(n))
        assert cursor.completed_ranges() == [(day(1), day(2)), (day(3), day(5))]
        cursor.close_partition(window(2))
        assert cursor.completed_ranges() == [(day(1), day(5))]
        assert cursor.gaps(day(5)) == []
        assert cursor.low_watermark() == day(5)

    def test_hole_left_by_window_2_is_reported_everywhere(self) -> None:
        cursor = iso_cursor()
        cursor.close_partition(window(3))
        cursor.close_partition(window(1))
        assert cursor.gaps(day(4)) == [(day(2), day(3))]
        assert cursor.gaps(day(6)) == [(day(2), day(3)), (day(4), day(6))]
        assert cursor.windows(day(6), DAY) == [
            (day(2), day(3)),
            (day(4), day(5)),
            (day(5), day(6)),
        ]
        assert cursor.low_watermark() == day(2)

    def test_nothing_completed(self) -> None:
        cursor = iso_cursor()
        assert cursor.low_watermark() == day(1)
        assert cursor.gaps(day(3)) == [(day(1), day(3))]
        assert cursor.gaps(day(1)) == []
        assert cursor.state() == {
            "state_type": "date-range",
            "cursor_field": "updated_at",
            "slices": [],
        }


class TestMerging:
    def test_adjacent_ranges_merge(self) -> None:
        cursor = int_cursor()
        close(cursor, 0, 10)
        close(cursor, 10, 20)
        assert cursor.completed_ranges() == [(0, 20)]

    def test_overlapping_and_contained_ranges_merge(self) -> None:
        cursor = int_cursor()
        close(cursor, 5, 15)
        close(cursor, 0, 10)
        close(cursor, 2, 3)
        assert cursor.completed_ranges() == [(0, 15)]

    def test_a_range_bridging_several_merges_them_all(self) -> None:
        cursor = int_cursor()
        close(cursor, 0, 1)
        close(cursor, 3, 4)
        close(cursor, 6, 7)
        close(cursor, 9, 10)
        close(cursor, 1, 9)
        assert cursor.completed_ranges() == [(0, 10)]

    def test_separate_ranges_stay_separate_and_sorted(self) -> None:
        cursor = int_cursor()
        close(cursor, 20, 30)
        close(cursor, 0, 5)
        close(cursor, 10, 11)
        assert cursor.completed_ranges() == [(0, 5), (10, 11), (20, 30)]
        assert cursor.gaps(40) == [(5, 10), (11, 20), (30, 40)]

    def test_empty_window_covers_nothing(self) -> None:
        cursor = int_cursor()
        close(cursor, 5, 5)
        assert cursor.completed_ranges() == []

    def test_windows_are_cut_no_larger_than_step(self) -> None:
        cursor = int_cursor()
        close(cursor, 3, 5)
        assert cursor.windows(12, 2) == [(0, 2), (2, 3), (5, 7), (7, 9), (9, 11), (11, 12)]

    def test_ranges_before_start_are_kept_but_never_gaps(self) -> None:
        cursor = int_cursor({"slices": [{"start": 0, "end": 8}]}, start=5)
        assert cursor.low_watermark() == 8
        assert cursor.gaps(10) == [(8, 10)]
        later = int_cursor({"slices": [{"start": 0, "end": 3}]}, start=5)
        assert later.low_watermark() == 5
        assert later.gaps(10) == [(5, 10)]
        assert later.completed_ranges() == [(0, 3)]

    def test_custom_boundary_fields(self) -> None:
        cursor = int_cursor(boundary_fields=("from_id", "to_id"))
        cursor.close_partition(Partition("s", "p", {"from_id": 0, "to_id": 4}))
        assert cursor.low_watermark() == 4
        with pytest.raises(StateError, match="to_id") as info:
            cursor.close_partition(Partition("s", "q", {"from_id": 4}))
        assert info.value.context["partition"] == "q"

    def test_reversed_partition_window_is_refused(self) -> None:
        cursor = int_cursor()
        with pytest.raises(StateError, match="ends before it starts"):
            close(cursor, 9, 2)


class TestState:
    def test_state_round_trips_through_json(self) -> None:
        cursor = iso_cursor()
        cursor.close_partition(window(1))
        cursor.close_partition(window(4))
        state = json.loads(json.dumps(cursor.state()))
        assert state == {
            "state_type": "date-range",
            "cursor_field": "updated_at",
            "slices": [{"start": day(1), "end": day(2)}, {"start": day(4), "end": day(5)}],
        }
        again = iso_cursor(state)
        assert again.completed_ranges() == cursor.completed_ranges()
        assert again.gaps(day(6)) == [(day(2), day(4)), (day(5), day(6))]

    def test_epoch_state_is_stored_as_ints(self) -> None:
        cursor = ConcurrentCursor(
            cursor_field="modified",
            converter=EpochSecondsStateConverter(),
            state={"state_type": "date-range", "slices": [{"start": 0, "end": 1704067200}]},
            start=1703980800,
        )
        cursor.close_partition(Partition("s", "p", {"start": 1704067200, "end": 1704153600}))
        assert cursor.state()["slices"] == [{"start": 0, "end": 1704153600}]
        assert cursor.low_watermark() == 1704153600
        assert cursor.windows(1704153600 + 2 * DAY, DAY) == [
            (1704153600, 1704240000),
            (1704240000, 1704326400),
        ]

    def test_state_with_offsets_and_microseconds_is_normalised(self) -> None:
        cursor = iso_cursor(
            {"slices": [{"start": "2024-01-01T02:00:00+02:00", "end": "2024-01-02T00:00:00.5Z"}]}
        )
        assert cursor.completed_ranges() == [
            ("2024-01-01T00:00:00Z", "2024-01-02T00:00:00.500000Z")
        ]

    def test_from_sequential_state(self) -> None:
        cursor = iso_cursor({"updated_at": day(3)})
        assert cursor.completed_ranges() == [(day(1), day(3))]
        assert cursor.low_watermark() == day(3)
        assert cursor.gaps(day(4)) == [(day(3), day(4))]

    def test_sequential_state_before_start_means_nothing(self) -> None:
        cursor = iso_cursor({"updated_at": "2023-06-01T00:00:00Z"})
        assert cursor.completed_ranges() == []
        assert cursor.low_watermark() == day(1)

    def test_empty_mapping_is_no_state(self) -> None:
        assert int_cursor({}).completed_ranges() == []

    @pytest.mark.parametrize(
        "state",
        [
            {"cursor": "2024-01-01"},
            {"updated_at": day(2), "other": 1},
            {"slices": "all of them"},
            {"slices": [{"start": day(1)}]},
            {"slices": [{"start": day(3), "end": day(2)}]},
            {"slices": [{"start": "soon", "end": day(2)}]},
            {"state_type": "integer-range", "slices": []},
            {"cursor_field": "created_at", "slices": []},
            {"slices": [], "surprise": True},
            {"updated_at": 17},
            ["updated_at"],
        ],
    )
    def test_bad_state_raises_state_error_naming_the_cursor_field(self, state: Any) -> None:
        with pytest.raises(StateError, match="updated_at") as info:
            iso_cursor(state)
        assert info.value.context["cursor_field"] == "updated_at"

    def test_unknown_shape_says_what_was_expected(self) -> None:
        with pytest.raises(StateError, match="expected null") as info:
            iso_cursor({"cursor": "x"})
        assert "'slices'" in str(info.value)


@pytest.fixture
def fast_switching() -> Iterator[None]:
    """Switch threads every microsecond so a missing lock shows up as a lost range."""
    before = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    yield
    sys.setswitchinterval(before)


def close_from_threads(cursor: ConcurrentCursor, windows: list[int], threads: int = 8) -> None:
    """Close unit windows ``[n, n+1)`` from ``threads`` threads started together."""
    barrier = threading.Barrier(threads)

    def worker(chunk: list[int]) -> None:
        barrier.wait()
        for n in chunk:
            cursor.close_partition(Partition("s", str(n), {"start": n, "end": n + 1}))

    workers = [threading.Thread(target=worker, args=(windows[i::threads],)) for i in range(threads)]
    for thread in workers:
        thread.start()
    for thread in workers:
        thread.join()


@pytest.mark.parametrize("converter", [IntegerStateConverter(), EpochSecondsStateConverter()])
@pytest.mark.usefixtures("fast_switching")
def test_partitions_closed_from_many_threads_merge_exactly(converter: StateConverter) -> None:
    size = 400
    windows = list(range(size))
    random.Random(7).shuffle(windows)
    cursor = ConcurrentCursor(cursor_field="c", converter=converter, state=None, start=0)
    close_from_threads(cursor, windows)
    assert cursor.state()["slices"] == [{"start": 0, "end": size}]


@pytest.mark.usefixtures("fast_switching")
def test_windows_missing_after_threaded_closes_are_exactly_the_gaps() -> None:
    size = 400
    missing = set(range(0, size, 3))
    windows = [n for n in range(size) if n not in missing]
    random.Random(11).shuffle(windows)
    cursor = int_cursor()
    close_from_threads(cursor, windows)
    assert cursor.gaps(size) == [(n, n + 1) for n in sorted(missing)]
    assert cursor.low_watermark() == 0
    assert cursor.completed_ranges() == [(n + 1, n + 3) for n in range(0, size - 1, 3)]


class TestFinalStateCursor:
    def test_state_is_none_until_a_partition_closes(self) -> None:
        cursor = FinalStateCursor()
        assert cursor.state() is None
        assert cursor.closed_count == 0
        cursor.close_partition(Partition("s", "all"))
        cursor.close_partition(Partition("s", "more"))
        assert cursor.closed_count == 2
        assert cursor.state() == {"__ab_full_refresh_sync_complete": True}

    def test_count_is_exact_across_threads(self) -> None:
        cursor = FinalStateCursor()
        partition = Partition("s", "p")

        def worker() -> None:
            for _ in range(500):
                cursor.close_partition(partition)

        threads = [threading.Thread(target=worker) for _ in range(6)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        assert cursor.closed_count == 3000
