"""Small objects grouped into partitions: fixed at plan time, each object recorded once."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from headwater.connectors.object_storage import ObjectCursor
from tests.unit.connectors.object_storage.conftest import read_all, rejected, source, write


def _keys(partition_params: dict) -> list[str]:  # type: ignore[type-arg]
    if partition_params["unit"] == "objects":
        return [m[0] for m in partition_params["objects"]]
    return [partition_params["key"]]


def test_consecutive_small_objects_share_partitions_up_to_a_count_and_bytes(
        tmp_path: Path) -> None:
    for i in range(7):
        write(tmp_path, f"a{i}.jsonl", b'{"n": %d}\n' % i)
    write(tmp_path, "b.jsonl", b'{"n": 100}\n' * 20)  # 220 bytes: over split_bytes
    write(tmp_path, "c0.jsonl", b'{"n": 200}\n')
    stream = source(str(tmp_path), objects_per_partition=3, split_bytes=100).streams()[0]
    partitions = stream.partitions(None)
    assert [(p.params["unit"], _keys(dict(p.params))) for p in partitions] == [
        ("objects", ["a0.jsonl", "a1.jsonl", "a2.jsonl"]),
        ("objects", ["a3.jsonl", "a4.jsonl", "a5.jsonl"]),
        ("object", ["a6.jsonl"]),          # alone before a large object: a partition of its own
        ("bytes", ["b.jsonl"]), ("bytes", ["b.jsonl"]), ("bytes", ["b.jsonl"]),
        ("object", ["c0.jsonl"]),
    ]
    # the byte budget closes a group too: 10 bytes each, 25 bytes at most
    tight = source(str(tmp_path), globs=["a*"], split_bytes=25).streams()[0].partitions(None)
    assert [len(_keys(dict(p.params))) for p in tight] == [2, 2, 2, 1]
    # the same objects plan the same partitions; a changed object changes its group's id
    again = stream.partitions(None)
    assert [p.id for p in again] == [p.id for p in partitions]
    write(tmp_path, "a4.jsonl", b'{"n": 4, "x": 1}\n')
    changed = stream.partitions(None)
    assert changed[0].id == partitions[0].id and changed[1].id != partitions[1].id
    # rows come in key order, every object's records numbered from 0
    table = read_all(stream, partitions)
    assert table.column("n").to_pylist() == [0, 1, 2, 3, 4, 5, 6] + [100] * 20 + [200]
    assert set(table.column("_source_record").to_pylist()[:7]) == {0}


def test_the_cursor_records_every_object_of_a_group_once(tmp_path: Path) -> None:
    for i in range(5):
        write(tmp_path, f"k{i}.jsonl", b'{"n": %d}\n' % i)
    stream = source(str(tmp_path), objects_per_partition=10, recent_keys=3).streams()[0]
    [group] = stream.partitions(None)
    cursor = ObjectCursor(None, recent_keys=3)
    cursor.close_partition(group)
    state = json.loads(json.dumps(cursor.state()))
    assert state["floor"] == "k1.jsonl" and sorted(state["recent"]) == [
        "k2.jsonl", "k3.jsonl", "k4.jsonl"]
    assert stream.partitions(state) == []  # nothing new, nothing read twice
    write(tmp_path, "k5.jsonl", b'{"n": 5}\n')
    [new] = stream.partitions(state)
    assert new.params["key"] == "k5.jsonl"


def test_a_bad_object_in_a_group_loses_only_its_own_records(tmp_path: Path) -> None:
    write(tmp_path, "a.jsonl", b'{"n": 1}\n{"n": 2}\n')
    write(tmp_path, "b.jsonl.gz", b"not gzip at all")
    write(tmp_path, "c.jsonl", b'{"n": 3}\n')
    write(tmp_path, "d.jsonl", b"")
    stream = source(str(tmp_path)).streams()[0]
    [group] = stream.partitions(None)
    assert len(group.params["objects"]) == 4
    table = read_all(stream, [group])
    assert [(r["key"], r["record"]) for r in rejected(table)] == [("b.jsonl.gz", 0)]
    good = [(k, n) for k, n in zip(table.column("_source_key").to_pylist(),
                                   table.column("n").to_pylist(), strict=True) if n is not None]
    assert good == [("a.jsonl", 1), ("a.jsonl", 2), ("c.jsonl", 3)]


def test_the_local_walk_lists_in_key_order_as_fsspec_find_does(tmp_path: Path) -> None:
    # "a-c" < "a/b" < "a0" as strings: a folder sorts by its keys, not by its name
    for key in ["a/b.jsonl", "a-c.jsonl", "a0.jsonl", "a/z/y.jsonl", "a/b0.jsonl", "é.jsonl",
                "Z.jsonl", "a/ä/x.jsonl", "empty/.keep"]:
        write(tmp_path, key, b'{"n": 1}\n')
    (tmp_path / "only-a-folder").mkdir()
    (tmp_path / "link.jsonl").symlink_to(tmp_path / "a0.jsonl")
    from fsspec.implementations.local import LocalFileSystem

    from headwater.connectors.object_storage._listing import identity_of, iter_objects

    fs = LocalFileSystem()
    listed = [(o.key, o.path, o.size, o.identity)
              for o in iter_objects(fs, str(tmp_path), "", ["**"])]
    found = fs.find(str(tmp_path), detail=True, withdirs=False)
    expected = sorted((p[len(str(tmp_path)) + 1:], p, int(i["size"]), identity_of(i))
                      for p, i in found.items())
    assert listed == expected
    assert [k for k, *_ in listed][:4] == ["Z.jsonl", "a-c.jsonl", "a/b.jsonl", "a/b0.jsonl"]
    assert [o.key for o in iter_objects(fs, str(tmp_path), "a", ["a/*.jsonl"])] == [
        "a/b.jsonl", "a/b0.jsonl"]
    assert list(iter_objects(fs, str(tmp_path), "missing", ["**"])) == []


def test_the_listing_starts_after_the_floor_and_skips_whole_folders_below_it(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from fsspec.implementations.local import LocalFileSystem

    from headwater.connectors.object_storage._listing import iter_objects

    keys = ["a-c.jsonl", "a/b.jsonl", "a/z/y.jsonl", "a0.jsonl", "b/c/d.jsonl", "b/e.jsonl",
            "c.jsonl"]
    for key in keys:
        write(tmp_path, key, b'{"n": 1}\n')
    fs = LocalFileSystem()
    for floor in ["", "a-c.jsonl", "a/", "a/b.jsonl", "a/zz", "b/c/d.jsonl", "b0", "c.jsonl"]:
        listed = [o.key for o in iter_objects(fs, str(tmp_path), "", ["**"], floor or None)]
        assert listed == [k for k in keys if k > floor], floor
    # a folder wholly below the floor is not opened
    opened: list[str] = []
    scandir = os.scandir

    def recording(path: str) -> Any:
        opened.append(os.path.relpath(path, tmp_path))
        return scandir(path)

    monkeypatch.setattr(os, "scandir", recording)
    assert [o.key for o in iter_objects(fs, str(tmp_path), "", ["**"], "a0.jsonl")] == \
        ["b/c/d.jsonl", "b/e.jsonl", "c.jsonl"]
    assert opened == [".", "b", "b/c"]


def test_a_sync_with_a_floor_plans_only_objects_above_it_and_samples_the_first(
        tmp_path: Path) -> None:
    for i in range(6):
        write(tmp_path, f"k{i}.jsonl", b'{"n": %d, "first": "x"}\n' % i if i == 0
              else b'{"n": %d}\n' % i)
    stream = source(str(tmp_path), recent_keys=2).streams()[0]
    cursor = ObjectCursor(None, recent_keys=2)
    for partition in stream.partitions(None):
        cursor.close_partition(partition)
    state = cursor.state()
    assert state["floor"] == "k3.jsonl" and cursor.skip_below() == "k3.jsonl"
    write(tmp_path, "k9.jsonl", b'{"n": 9}\n')
    [new] = stream.partitions(state)
    assert new.params["key"] == "k9.jsonl"
    assert "first" in stream.json_schema()["properties"]  # sampled from k0, below the floor
    # an object in flight at or below the floor keeps the whole listing
    state["in_flight"] = {"k1.jsonl": {"identity": "x", "unit": "bytes", "total": 10,
                                       "done": [[0, 5]], "records": None}}
    assert ObjectCursor(state, recent_keys=2).skip_below() is None
