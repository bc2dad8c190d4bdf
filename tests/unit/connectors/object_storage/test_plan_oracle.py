"""The batched planner against the per-object planner it replaced (kept here as the oracle).

The planner lists a page (a folder, an S3 page) at a time and decides, filters and
groups whole pages; the oracle lists with ``fs.find``, tests each key against the
globs, asks the cursor about each object and fills each group one object at a
time.  Both must give exactly the same partitions (ids, keys, identities, sizes,
grouping) and the same state once they are closed.
"""

from __future__ import annotations

import hashlib
import json
import re
from pathlib import Path
from typing import Any

import pytest
from fsspec.utils import glob_translate

from headwater.connectors.object_storage import ObjectCursor, ObjectStream
from headwater.connectors.object_storage._listing import ObjectInfo, identity_of, root_path
from headwater.connectors.object_storage._splitting import object_partitions
from headwater.sdk import Partition
from tests.unit.connectors.object_storage.conftest import source, write

SETTINGS: dict[str, Any] = {"globs": ["**/*.jsonl", "top*.csv"], "objects_per_partition": 4,
                            "split_bytes": 100, "recent_keys": 6}


def _oracle_group(stream: str, root: str, objects: list[ObjectInfo]) -> Partition:
    digest = hashlib.sha256()
    for obj in objects:
        digest.update(f"{obj.key}\0{obj.identity}\n".encode())
    params: dict[str, Any] = {"unit": "objects", "root": root,
                              "objects": [[o.key, o.identity, o.size] for o in objects],
                              "size": sum(o.size for o in objects)}
    return Partition(stream, f"{objects[0].key}..{objects[-1].key}#objects:{len(objects)}:"
                             f"{digest.hexdigest()[:16]}", params)


def _oracle(stream: ObjectStream, state: dict[str, Any] | None) -> list[Partition]:
    """The plan of ``stream`` from ``state``, one object at a time."""
    config = stream._config
    fs, root = stream._fs()
    cursor = ObjectCursor(state, stream._settings.recent_keys, config.changed_objects)
    wanted = re.compile("|".join(f"(?:{glob_translate(g)})" for g in config.globs))
    found = fs.find(root_path(root, config.prefix), detail=True, withdirs=False)
    partitions: list[Partition] = []
    group: list[ObjectInfo] = []
    group_bytes = 0

    def flush() -> None:
        if len(group) == 1:
            partitions.extend(object_partitions(fs, config.name, group[0], config,
                                                cursor.decide(group[0].key, group[0].identity)))
        elif group:
            partitions.append(_oracle_group(config.name, root, group))
        group.clear()

    for path in sorted(found):
        key = path[len(root) + 1:]
        if not wanted.fullmatch(key):
            continue
        obj = ObjectInfo(key, path, int(found[path]["size"]), identity_of(found[path]))
        decision = cursor.decide(obj.key, obj.identity)
        if not decision.read:
            continue
        if decision.ranges is not None or obj.size > config.split_bytes:
            flush()
            group_bytes = 0
            partitions.extend(object_partitions(fs, config.name, obj, config, decision))
            continue
        if group and (len(group) >= config.objects_per_partition
                      or group_bytes + obj.size > config.split_bytes):
            flush()
            group_bytes = 0
        group.append(obj)
        group_bytes += obj.size
    flush()
    return partitions


def _closed(state: dict[str, Any] | None, partitions: list[Partition]) -> dict[str, Any]:
    cursor = ObjectCursor(state, SETTINGS["recent_keys"])
    for partition in partitions:
        cursor.close_partition(partition)
    return json.loads(json.dumps(cursor.state()))


def _same(stream: ObjectStream, state: dict[str, Any] | None) -> list[Partition]:
    planned = stream.partitions(state)
    expected = _oracle(stream, state)
    assert [p.to_dict() for p in planned] == [p.to_dict() for p in expected]
    assert _closed(state, planned) == _closed(state, expected)
    return planned


def _landing(root: Path) -> None:
    write(root, "a.jsonl", b'{"n": 1}\n')
    write(root, "a/b.jsonl", b'{"n": 2}\n' * 3)
    write(root, "a/sub/deep/c.jsonl", b'{"n": 3}\n')
    write(root, "a/x.csv", b"n\n4\n")          # not top*.csv: excluded
    write(root, "a0.jsonl", b"")                # empty
    write(root, "big.jsonl", b'{"n": 5}\n' * 30)  # 270 bytes: three byte ranges
    write(root, "notes.txt", b"excluded")
    write(root, "top1.csv", b"n\n6\n")
    for i in range(25):  # mixed sizes, cut by count and by bytes across folders
        write(root, f"many/m{i:02d}.jsonl", b'{"n": %d}\n' % i * (1 + i % 4))
    write(root, "many/z/last.jsonl", b'{"n": 99}\n')
    write(root, "mid.jsonl", b'{"n": 7}\n' * 12)  # 108 bytes: alone, over split_bytes


@pytest.mark.parametrize("prefix", ["", "many"])
def test_the_batched_plan_is_the_per_object_plan_on_a_first_sync(tmp_path: Path,
                                                                  prefix: str) -> None:
    _landing(tmp_path)
    stream = source(str(tmp_path), prefix=prefix, **SETTINGS).streams()[0]
    planned = _same(stream, None)  # type: ignore[arg-type]
    assert len(planned) > 5


def _first_half(first: list[Partition]) -> list[Partition]:
    """The first half and one range of big.jsonl: the floor inside many/, an object in
    flight below it (so the listing starts from the top)."""
    big = next(p for p in first if p.params.get("key") == "big.jsonl")
    return [*(p for p in first[:len(first) // 2] if p.params.get("key") != "big.jsonl"), big]


def _spread(first: list[Partition]) -> list[Partition]:
    """Groups in a/ and many/ and one range of mid.jsonl: the floor in a/, remembered keys
    and an object in flight in pages above it (so the listing starts after the floor,
    and those pages are not all new: one for its remembered keys, one for the object
    in flight alone)."""
    return [first[0], next(p for p in first if p.id.startswith("many/m04.jsonl")),
            next(p for p in first if p.params.get("key") == "mid.jsonl")]


@pytest.mark.parametrize("closed", [_first_half, _spread])
@pytest.mark.parametrize("changed", ["reread", "ignore"])
def test_the_batched_plan_is_the_per_object_plan_above_a_cursor_floor(
        tmp_path: Path, closed: Any, changed: str) -> None:
    _landing(tmp_path)
    stream = source(str(tmp_path), changed_objects=changed, **SETTINGS).streams()[0]
    first = _same(stream, None)  # type: ignore[arg-type]
    state = _closed(None, closed(first))
    assert state["floor"] and state["recent"] and state["in_flight"]
    # since: a remembered object and the one in flight changed, new objects above and
    # below the floor, in folders
    write(tmp_path, max(state["recent"]), b'{"n": 1000}\n' * 2)
    write(tmp_path, next(iter(state["in_flight"])), b'{"n": 1001}\n')  # small now
    write(tmp_path, "a/aa.jsonl", b'{"n": 8}\n')
    write(tmp_path, "many/m24b.jsonl", b'{"n": 9}\n')
    write(tmp_path, "many/z/new/n.jsonl", b'{"n": 10}\n')
    write(tmp_path, "many/z/new/o.jsonl", b'{"n": 11}\n' * 11)  # over split_bytes
    write(tmp_path, "zz.jsonl", b'{"n": 12}\n')
    planned = _same(stream, state)  # type: ignore[arg-type]
    assert {"many/m24b.jsonl", "many/z/new/o.jsonl", "zz.jsonl"} <= {
        m[0] for p in planned for m in p.params.get("objects", [[p.params.get("key")]])}


def test_a_link_lists_with_its_targets_size_and_a_dangling_link_not_at_all(
        tmp_path: Path) -> None:
    from fsspec.implementations.local import LocalFileSystem

    from headwater.connectors.object_storage._listing import iter_objects

    write(tmp_path, "b.jsonl", b'{"n": 1}\n' * 3)
    (tmp_path / "a.jsonl").symlink_to(tmp_path / "b.jsonl")
    (tmp_path / "c.jsonl").symlink_to(tmp_path / "gone.jsonl")
    write(tmp_path, "d.jsonl", b"")
    listed = list(iter_objects(LocalFileSystem(), str(tmp_path), "", ["*"]))
    assert [(o.key, o.size) for o in listed] == [("a.jsonl", 27), ("b.jsonl", 27),
                                                 ("d.jsonl", 0)]
    link = (tmp_path / "a.jsonl").lstat()  # the link's own mtime, as fsspec's find gives
    assert listed[0].identity == f"27:{link.st_mtime}"


def test_a_store_without_paged_listing_plans_the_same_in_pages_of_its_find(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import fsspec

    from headwater.connectors.object_storage import _listing

    monkeypatch.setattr(_listing, "FOUND_PAGE", 7)  # many pages of fs.find's listing
    _landing(tmp_path)
    memory = fsspec.filesystem("memory")
    for path in sorted(tmp_path.rglob("*")):
        if path.is_file():
            memory.pipe(f"/oracle/{path.relative_to(tmp_path)}", path.read_bytes())
    try:
        stream = source("memory://oracle", **SETTINGS).streams()[0]
        first = _same(stream, None)  # type: ignore[arg-type]
        _same(stream, _closed(None, _spread(first)))  # type: ignore[arg-type]
    finally:
        memory.rm("/oracle", recursive=True)
