"""The object cursor (floor, recent keys, in-flight objects) and the splitting of large objects."""

from __future__ import annotations

import json
import random
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from headwater.connectors.object_storage import ObjectCursor
from headwater.errors import StateError
from headwater.sdk import Partition
from tests.unit.connectors.object_storage.conftest import encode, read_all, source, write


def part(key: str, identity: str = "e1", unit: str = "object", start: int = 0, end: int = 1,
         total: int = 1) -> Partition:
    return Partition("s", f"{key}:{start}", {"key": key, "identity": identity, "unit": unit,
                                             "start": start, "end": end, "total": total})


def test_recent_keys_catch_late_arrivals_and_the_floor_bounds_the_state() -> None:
    cursor = ObjectCursor(None, recent_keys=3)
    for key in ["b", "d", "f"]:
        cursor.close_partition(part(key))
    # "c" arrives late, below the highest key read: still new
    assert cursor.decide("c", "e1").read
    assert not cursor.decide("d", "e1").read
    cursor.close_partition(part("c"))
    state = cursor.state()
    assert state["floor"] == "b" and sorted(state["recent"]) == ["c", "d", "f"]
    again = ObjectCursor(json.loads(json.dumps(state)), recent_keys=3)
    assert not again.decide("a", "e1").read  # at or below the floor: forgotten
    assert again.decide("e", "e1").read


@pytest.mark.parametrize(("policy", "read"), [("reread", True), ("ignore", False)])
def test_changed_object_policy(policy: str, read: bool) -> None:
    cursor = ObjectCursor(None, recent_keys=10, changed_objects=policy)
    cursor.close_partition(part("k", identity="old"))
    assert not cursor.decide("k", "old").read
    assert cursor.decide("k", "new").read is read


def test_in_flight_ranges_merge_out_of_order_and_complete() -> None:
    cursor = ObjectCursor(None, recent_keys=10)
    cursor.close_partition(part("big", unit="bytes", start=200, end=300, total=300))
    cursor.close_partition(part("big", unit="bytes", start=0, end=100, total=300))
    flight = cursor.state()["in_flight"]["big"]
    assert flight["done"] == [[0, 100], [200, 300]]
    decision = cursor.decide("big", "e1")
    assert decision.read and decision.unit == "bytes" and decision.ranges == ((100, 200),)
    cursor.close_partition(part("big", unit="bytes", start=100, end=200, total=300))
    assert cursor.state()["in_flight"] == {} and cursor.state()["recent"] == {"big": "e1"}


def test_bad_state_is_refused_with_a_reason() -> None:
    with pytest.raises(StateError, match="state_type"):
        ObjectCursor({"slices": []}, recent_keys=1)


@pytest.mark.parametrize("fmt", ["jsonl", "csv"])
def test_byte_range_splits_tile_an_object_exactly(tmp_path: Path, fmt: str) -> None:
    rows = [{"id": i, "text": "x" * random.Random(i).randrange(0, 40)} for i in range(500)]
    write(tmp_path, f"big.{fmt}", encode(rows, fmt))
    for split in (7, 64, 1000, 10**6):
        stream = source(str(tmp_path), format={"type": fmt}, split_bytes=split).streams()[0]
        partitions = stream.partitions(None)
        assert len(partitions) >= (2 if split < 1000 else 1)
        table = read_all(stream, partitions)
        assert sorted(table.column("id").to_pylist()) == list(range(500)), split
        assert sorted(table.column("_source_record").to_pylist()) == list(range(500)), split
        assert table.column("_hw_notes").null_count == table.num_rows


def test_resume_plans_only_the_uncommitted_ranges(tmp_path: Path) -> None:
    write(tmp_path, "big.jsonl", encode([{"id": i} for i in range(300)], "jsonl"))
    stream = source(str(tmp_path), split_bytes=500).streams()[0]
    partitions = stream.partitions(None)
    cursor = ObjectCursor(None, recent_keys=10)
    for p in partitions[::2]:
        cursor.close_partition(p)
    left = stream.partitions(cursor.state())
    assert [p.id for p in left] == [p.id for p in partitions[1::2]]
    done = read_all(stream, partitions[::2]).column("id").to_pylist()
    rest = read_all(stream, left).column("id").to_pylist()
    assert sorted(done + rest) == list(range(300))


def test_parquet_splits_by_row_group_with_object_wide_record_numbers(tmp_path: Path) -> None:
    table = pa.table({"id": list(range(100))})
    path = tmp_path / "t.parquet"
    pq.write_table(table, path, row_group_size=10)
    stream = source(str(tmp_path), format={"type": "parquet"}, split_bytes=1).streams()[0]
    partitions = stream.partitions(None)
    assert len(partitions) == 10
    assert {p.params["records"] for p in partitions} == {10}
    got = read_all(stream, partitions)
    assert sorted(zip(got.column("_source_record").to_pylist(),
                      got.column("id").to_pylist(), strict=True)) == [(i, i) for i in range(100)]


def test_csv_byte_ranges_with_rows_skipped_before_the_header(tmp_path: Path) -> None:
    body = encode([{"id": i, "text": f"t{i}"} for i in range(200)], "csv")
    write(tmp_path, "big.csv", b"exported by a tool\nsecond junk line\n" + body)
    for split in (5, 100, 10**6):
        stream = source(str(tmp_path), format={"type": "csv", "skip_rows": 2},
                        split_bytes=split).streams()[0]
        table = read_all(stream)
        assert sorted(table.column("id").to_pylist()) == list(range(200)), split
        assert sorted(table.column("_source_record").to_pylist()) == list(range(200)), split
