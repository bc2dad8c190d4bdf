"""Objects into partitions: many small objects in one, one per object, or several for a
large one.

A partition's params say which object (key, path, identity) and which part:

* ``unit: objects`` — several small whole objects, read in key order:
  ``objects`` lists ``[key, identity, size]`` of each, ``root`` is the path their
  keys are relative to (see :func:`group_partition`);
* ``unit: object`` — the whole object (``start 0``, ``end 1``, ``total 1``);
* ``unit: bytes`` — the lines that *start* in ``[start, end)`` of an uncompressed
  CSV/JSONL object of ``total`` bytes (see :func:`._io.line_blocks`);
* ``unit: row_groups`` — row groups ``[start, end)`` of a Parquet object of
  ``total`` row groups, with ``records`` rows.

Cuts depend only on the object's size (or footer) and ``split_bytes``, and a
range left over by a failed sync is cut again by the same rule, so every
record belongs to exactly one partition.  Which small objects share a
partition is decided when the run is planned, and the plan is persisted: a
resumed or replayed run reads the same groups, whatever was listed since.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterable, Iterator
from typing import Any

import fsspec

from headwater.connectors.object_storage._config import StreamConfig
from headwater.connectors.object_storage._cursor import Decision
from headwater.connectors.object_storage._io import StorageFile, compression_of
from headwater.connectors.object_storage._listing import ObjectInfo
from headwater.sdk import Partition

__all__ = ["group_members", "group_partition", "object_partitions", "plan", "split_unit"]


def split_unit(obj: ObjectInfo, config: StreamConfig) -> str:
    """How a large object of this stream is cut: ``bytes``, ``row_groups`` or ``object``."""
    if obj.size <= config.split_bytes or compression_of(obj.key, config.compression):
        return "object"
    fmt = config.format
    if fmt.type == "jsonl" or (fmt.type == "csv" and not fmt.newlines_in_values):
        return "bytes"
    if fmt.type == "parquet":
        return "row_groups"
    return "object"


def _partition(stream: str, obj: ObjectInfo, unit: str, start: int, end: int, total: int,
               records: int | None = None) -> Partition:
    params: dict[str, Any] = {"key": obj.key, "path": obj.path, "identity": obj.identity,
                              "size": obj.size, "unit": unit, "start": start, "end": end,
                              "total": total}
    if records is not None:
        params["records"] = records
    suffix = "" if unit == "object" else f"#{unit}:{start}-{end}"
    return Partition(stream, f"{obj.key}@{obj.identity}{suffix}", params)


def _row_groups(fs: fsspec.AbstractFileSystem, obj: ObjectInfo) -> list[tuple[int, int]]:
    """(compressed bytes, rows) of each row group, from the Parquet footer."""
    import pyarrow.parquet as pq

    with StorageFile(fs, obj.path) as raw:
        metadata = pq.ParquetFile(raw).metadata
        return [(metadata.row_group(i).total_byte_size, metadata.row_group(i).num_rows)
                for i in range(metadata.num_row_groups)]


def object_partitions(fs: fsspec.AbstractFileSystem, stream: str, obj: ObjectInfo,
                      config: StreamConfig, decision: Decision) -> list[Partition]:
    """The partitions that read what ``decision`` says of ``obj``."""
    unit = split_unit(obj, config)
    resume = decision.ranges if decision.unit == unit else None
    if unit == "bytes":
        ranges = resume or ((0, obj.size),)
        step = config.split_bytes
        return [_partition(stream, obj, unit, a, min(a + step, high), obj.size)
                for low, high in ranges for a in range(low, high, step)]
    if unit == "row_groups":
        try:
            groups = _row_groups(fs, obj)
        except Exception:  # not Parquet after all: read whole, the reader records why
            return [_partition(stream, obj, "object", 0, 1, 1)]
        wanted = resume or ((0, len(groups)),)
        parts: list[Partition] = []
        for low, high in wanted:
            start, size, rows = low, 0, 0
            for index in range(low, high):
                size += groups[index][0]
                rows += groups[index][1]
                if size >= config.split_bytes or index == high - 1:
                    parts.append(_partition(stream, obj, unit, start, index + 1, len(groups),
                                            rows))
                    start, size, rows = index + 1, 0, 0
        return parts
    return [_partition(stream, obj, "object", 0, 1, 1)]


def group_partition(stream: str, root: str, objects: list[ObjectInfo]) -> Partition:
    """One partition reading ``objects`` (small, whole, consecutive in key order).

    Its id names the first and last key, the count and a digest of every
    (key, identity): the same objects give the same id, and an object that
    changed gives another.  Each object is ``[key, identity, size]`` and its
    path is ``root/key`` (the listing's rule), which keeps a persisted plan of
    a million objects to about the bytes of their keys and ETags.
    """
    digest = hashlib.sha256()
    for obj in objects:
        digest.update(f"{obj.key}\0{obj.identity}\n".encode())
    members = [[obj.key, obj.identity, obj.size] for obj in objects]
    params: dict[str, Any] = {"unit": "objects", "root": root, "objects": members,
                              "size": sum(obj.size for obj in objects)}
    return Partition(stream, f"{objects[0].key}..{objects[-1].key}#objects:{len(objects)}:"
                             f"{digest.hexdigest()[:16]}", params)


def group_members(params: dict[str, Any] | Any) -> Iterator[tuple[str, str, str, int]]:
    """(key, path, identity, size) of each object of a ``unit: objects`` partition."""
    root = str(params["root"])
    for key, identity, size in params["objects"]:
        yield str(key), f"{root}/{key}" if root else str(key), str(identity), int(size)


def plan(fs: fsspec.AbstractFileSystem, stream: str, root: str, objects: Iterable[ObjectInfo],
         config: StreamConfig, decide: Callable[[str, str], Decision]) -> Iterator[Partition]:
    """Partitions for every listed object ``decide(key, identity)`` says to read, in key order.

    Consecutive small objects read whole go into one partition, up to
    ``split_bytes`` and ``objects_per_partition`` objects; a lone small object
    keeps a partition of its own (``unit: object``).  A generator: only the
    group being filled is held, so ``objects`` can be a listing in progress.
    """
    group: list[ObjectInfo] = []
    group_bytes = 0

    def flush() -> Iterator[Partition]:
        if len(group) == 1:
            yield _partition(stream, group[0], "object", 0, 1, 1)
        elif group:
            yield group_partition(stream, root, group)
        group.clear()

    for obj in objects:
        decision = decide(obj.key, obj.identity)
        if not decision.read:
            continue
        if decision.ranges is not None or obj.size > config.split_bytes:
            yield from flush()
            group_bytes = 0
            yield from object_partitions(fs, stream, obj, config, decision)
            continue
        if group and (len(group) >= config.objects_per_partition
                      or group_bytes + obj.size > config.split_bytes):
            yield from flush()
            group_bytes = 0
        group.append(obj)
        group_bytes += obj.size
    yield from flush()
