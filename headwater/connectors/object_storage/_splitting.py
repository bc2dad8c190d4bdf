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

import contextlib
import gc
import hashlib
from bisect import bisect_right
from collections.abc import Iterable, Iterator
from itertools import accumulate
from typing import Any

import fsspec

from headwater.connectors.object_storage._config import StreamConfig
from headwater.connectors.object_storage._cursor import Decision, ObjectCursor
from headwater.connectors.object_storage._io import StorageFile, compression_of
from headwater.connectors.object_storage._listing import ObjectInfo, Page
from headwater.sdk import Partition

__all__ = ["collector_paused", "group_members", "group_partition", "object_partitions", "plan",
           "split_unit"]


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
    return _group_partition(stream, root, [o.key for o in objects],
                            [o.identity for o in objects], [o.size for o in objects])


def _group_partition(stream: str, root: str, keys: list[str], identities: list[str],
                     sizes: list[int]) -> Partition:
    """:func:`group_partition` of columns; the digest is of every ``key\\0identity\\n``,
    hashed in one update."""
    members = zip(keys, identities, strict=True)
    digest = hashlib.sha256(("\n".join(map("\0".join, members)) + "\n").encode())
    params: dict[str, Any] = {"unit": "objects", "root": root,
                              "objects": list(map(list, zip(keys, identities, sizes,
                                                            strict=True))),
                              "size": sum(sizes)}
    return Partition(stream, f"{keys[0]}..{keys[-1]}#objects:{len(keys)}:"
                             f"{digest.hexdigest()[:16]}", params)


def group_members(params: dict[str, Any] | Any) -> Iterator[tuple[str, str, str, int]]:
    """(key, path, identity, size) of each object of a ``unit: objects`` partition."""
    root = str(params["root"])
    for key, identity, size in params["objects"]:
        yield str(key), f"{root}/{key}" if root else str(key), str(identity), int(size)


class _Group:
    """The small whole objects being gathered into one partition, as columns.

    Objects come in runs (a page's, or those of a page the cursor decided one by
    one); a run is cut where the next object would pass ``objects_per_partition``
    or ``split_bytes``, found by bisecting the run's running byte total instead
    of testing each object.
    """

    def __init__(self, stream: str, root: str, config: StreamConfig) -> None:
        self._stream, self._root = stream, root
        self._most, self._budget = config.objects_per_partition, config.split_bytes
        self._keys: list[str] = []
        self._identities: list[str] = []
        self._sizes: list[int] = []
        self._first_path = ""
        self._bytes = 0

    def add(self, keys: list[str], paths: list[str], sizes: list[int], identities: list[str]
            ) -> Iterator[Partition]:
        """Add a run of small objects (each at most ``split_bytes``), in key order; yields
        the groups they close."""
        total = list(accumulate(sizes, initial=0))  # total[j]: bytes of the run's first j
        at, count = 0, len(keys)
        while at < count:
            room = self._most - len(self._keys)
            # the most objects from ``at`` on that fit in the count and the byte budget
            fit = 0 if room <= 0 else bisect_right(
                total, total[at] + self._budget - self._bytes, at, min(count, at + room) + 1
            ) - 1 - at
            if fit <= 0:
                if not self._keys:  # cannot happen (an empty group takes a small object)
                    raise AssertionError("an object over split_bytes among small ones")
                yield from self.flush()
                continue
            if not self._keys:
                self._first_path = paths[at]
            self._keys += keys[at:at + fit]
            self._identities += identities[at:at + fit]
            self._sizes += sizes[at:at + fit]
            self._bytes += total[at + fit] - total[at]
            at += fit

    def flush(self) -> Iterator[Partition]:
        """The group as a partition (a lone object keeps a ``unit: object`` one)."""
        if len(self._keys) == 1:
            obj = ObjectInfo(self._keys[0], self._first_path, self._sizes[0],
                             self._identities[0])
            yield _partition(self._stream, obj, "object", 0, 1, 1)
        elif self._keys:
            yield _group_partition(self._stream, self._root, self._keys, self._identities,
                                   self._sizes)
        self._keys, self._identities, self._sizes, self._bytes = [], [], [], 0


def plan(fs: fsspec.AbstractFileSystem, stream: str, root: str, pages: Iterable[Page],
         config: StreamConfig, cursor: ObjectCursor) -> Iterator[Partition]:
    """Partitions for every listed object the cursor says to read, in key order.

    Consecutive small objects read whole go into one partition, up to
    ``split_bytes`` and ``objects_per_partition`` objects; a lone small object
    keeps a partition of its own (``unit: object``).  A generator: only the
    group being filled is held, so ``pages`` can be a listing in progress.
    A page whose objects are all new (:meth:`.ObjectCursor.all_new`) and small
    joins the groups whole; any other is decided object by object.
    """
    group = _Group(stream, root, config)
    for page in pages:
        if page.sizes and max(page.sizes) <= config.split_bytes and cursor.all_new(page.keys):
            yield from group.add(*page)
            continue
        run = Page([], [], [], [])
        for obj in page.objects():
            decision = cursor.decide(obj.key, obj.identity)
            if not decision.read:
                continue
            if decision.ranges is None and obj.size <= config.split_bytes:
                run.keys.append(obj.key)
                run.paths.append(obj.path)
                run.sizes.append(obj.size)
                run.identities.append(obj.identity)
                continue
            yield from group.add(*run)
            yield from group.flush()
            run = Page([], [], [], [])
            yield from object_partitions(fs, stream, obj, config, decision)
        yield from group.add(*run)
    yield from group.flush()


@contextlib.contextmanager
def collector_paused() -> Iterator[None]:
    """Python's cyclic garbage collector off while a plan is made.

    Planning a million objects allocates millions of small containers (the
    listing's directory entries and stats, each group member's ``[key,
    identity, size]``) and keeps a million of them, none in a reference cycle;
    every collection their allocation triggers walks all those still alive, so
    the collector's passes grow with the plan (about a sixth of the CPU of
    planning 100,000 objects).  Reference counting frees all that is dropped
    meanwhile; a collector already paused by someone else is left as it is.
    """
    if not gc.isenabled():
        yield
        return
    gc.disable()
    try:
        yield
    finally:
        gc.enable()
