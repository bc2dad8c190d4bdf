"""How ``headwater verify`` compares a window, groups partitions into windows, picks what a
repair re-reads, and which exit code it ends with (no Spark: the sample source's stream)."""

from __future__ import annotations

import datetime as dt

import pytest

from headwater.connectors.sample import SampleSource
from headwater.operations._verify import RepairOutcome, StreamCheck, VerifyReport, WindowCheck
from headwater.operations._verify_windows import Window, group_windows, repair_partitions
from headwater.sdk import CannotCountWindow, Partition, RowWindow, WindowCount

UTC = dt.UTC
WINDOW = Window(RowWindow("updated_at", dt.datetime(2024, 1, 1, tzinfo=UTC),
                          dt.datetime(2024, 1, 2, tzinfo=UTC)), ())


@pytest.mark.parametrize(("source", "table", "differs", "keys"), [
    (WindowCount(5, 1), WindowCount(5, 1), False, True),
    (WindowCount(5, 1), WindowCount(4, 1), True, True),
    (WindowCount(5, 1), WindowCount(5, 2), True, True),   # a key swapped for another
    (WindowCount(5, None), WindowCount(5, 2), False, False),  # count only
    (WindowCount(5, 1), WindowCount(5, None), False, False),
])
def test_a_window_differs_by_count_or_by_keys_where_both_sides_hashed(
        source: WindowCount, table: WindowCount, differs: bool, keys: bool) -> None:
    check = WindowCheck(WINDOW, source, table)
    assert check.differs is differs and check.keys_compared is keys


def _stream(windows: list[WindowCheck], cannot: str | None = None,
            not_repairable: str | None = None) -> StreamCheck:
    return StreamCheck("users", "incremental+append_dedup", windows, cannot, not_repairable)


EQUAL = WindowCheck(WINDOW, WindowCount(3, 1), WindowCount(3, 1))
DIFFERENT = WindowCheck(WINDOW, WindowCount(3, 1), WindowCount(2, 1))


def test_exit_codes() -> None:
    assert VerifyReport("c", [_stream([EQUAL])]).exit_code == 0
    assert VerifyReport("c", [_stream([EQUAL, DIFFERENT])]).exit_code == 1
    assert VerifyReport("c", [_stream([], cannot="rest cannot count a window")]).exit_code == 4
    assert VerifyReport("c", [_stream([DIFFERENT]), _stream([], cannot="x")]).exit_code == 1
    fixed = RepairOutcome("r1", "succeeded", 2, [_stream([EQUAL])])
    assert VerifyReport("c", [_stream([DIFFERENT])], fixed).exit_code == 0
    still = RepairOutcome("r1", "succeeded", 2, [_stream([DIFFERENT])])
    assert VerifyReport("c", [_stream([DIFFERENT])], still).exit_code == 1
    failed = RepairOutcome("r1", "failed", 2, [_stream([EQUAL])])
    assert VerifyReport("c", [_stream([DIFFERENT])], failed).exit_code == 1
    left = [_stream([DIFFERENT], not_repairable="overwrite"), _stream([DIFFERENT])]
    assert VerifyReport("c", left, fixed).exit_code == 1
    assert VerifyReport("c", [_stream([EQUAL])]).to_dict()["status"] == "equal"


def test_labels() -> None:
    assert WINDOW.rows.label() == \
        "updated_at in [2024-01-01T00:00:00+00:00, 2024-01-02T00:00:00+00:00)"
    assert RowWindow("id", None, 10).label() == "id in [-inf, 10)"
    assert RowWindow("at", null=True).label() == "at IS NULL"
    assert RowWindow("_source_key", values=("a", "b", "c", "d")).label() == \
        "_source_key IN (a, b, c, ... (4 values))"
    assert RowWindow(None).label() == "the whole table"


SAMPLE = SampleSource({"users": 1000, "orders": 0, "rows_per_partition": 300})


def test_partitions_of_the_same_window_are_one_window_and_a_repair_reads_it_whole() -> None:
    stream = SAMPLE.stream("users")
    plan = stream.partitions(None)
    assert len(plan) == 4
    again = Partition("users", "from another run", dict(plan[1].params))
    windows = group_windows(stream, [*plan, again])
    assert [len(w.partitions) for w in windows] == [1, 2, 1, 1]
    assert windows[1].rows == RowWindow("updated_at", stream.state_converter.parse(
        plan[1].params["start"]), stream.state_converter.parse(plan[1].params["end"]))
    # A window narrower than a partition is read by the stream's own partitioning.
    narrow = Partition("users", "narrow", {"start": "2024-01-01T00:01:00Z",
                                           "end": "2024-01-01T00:02:00Z"})
    [reread] = repair_partitions(stream, group_windows(stream, [narrow]))
    assert (reread.params["start"], reread.params["end"]) == \
        ("2024-01-01T00:01:00Z", "2024-01-01T00:02:00Z")
    assert {p.id for p in repair_partitions(stream, windows)} == {p.id for p in plan}


def test_the_sample_source_counts_a_window_exactly() -> None:
    stream = SAMPLE.stream("users")
    first = stream.partitions(None)[0]
    counted = stream.count_window(first)
    assert counted.count == stream.estimate_rows(first) == 300
    from headwater.key_checksum import key_checksum

    assert counted.key_checksum == key_checksum((i,) for i in range(300))


def test_a_partition_without_a_window_cannot_be_counted() -> None:
    stream = SAMPLE.stream("users")
    with pytest.raises(CannotCountWindow):
        stream.table_window(Partition("users", "no window", {"page": 3}))
