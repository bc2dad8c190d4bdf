"""``headwater verify``'s count of an object storage window: the records its objects hold now
(groups of small objects, parts of a large one), and their keys' checksum."""

from __future__ import annotations

from pathlib import Path

from headwater.key_checksum import key_checksum
from headwater.sdk import RowWindow
from tests.unit.connectors.object_storage.conftest import ROWS, encode, source, write


def test_a_window_counts_its_objects_records_now(tmp_path: Path) -> None:
    write(tmp_path, "a.jsonl", encode(ROWS[:10], "jsonl"))
    write(tmp_path, "b.jsonl", encode(ROWS[10:25], "jsonl"))
    write(tmp_path, "big.jsonl", encode(ROWS * 8, "jsonl"))  # split into byte ranges
    stream = source(f"file://{tmp_path}", format={"type": "jsonl"}, primary_key=["id"],
                    split_bytes=4096, objects_per_partition=2).stream("s")
    plan = stream.partitions(None)
    groups = [p for p in plan if p.params["unit"] == "objects"]
    parts = [p for p in plan if p.params["unit"] == "bytes"]
    assert len(groups) == 1 and len(parts) > 1
    [group] = groups
    assert stream.table_window(group) == RowWindow("_source_key", values=("a.jsonl", "b.jsonl"))
    counted = stream.count_window(group)
    assert counted.count == 25
    assert counted.key_checksum == key_checksum((r["id"],) for r in ROWS)
    # Every part of the large object stands for the whole object: one window.
    assert {stream.table_window(p) for p in parts} == {RowWindow("_source_key",
                                                                 values=("big.jsonl",))}
    assert stream.count_window(parts[0]).count == 8 * 25
    # Rows added to an object since, and an object gone since, count as they are now.
    write(tmp_path, "a.jsonl", encode(ROWS[:12], "jsonl"))
    (tmp_path / "b.jsonl").unlink()
    assert stream.count_window(group).count == 12
