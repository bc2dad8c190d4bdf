"""Many tiny objects, made cheaply, and what planning them costs the driver.

Shared by the million-object test and ``bench/object_storage_plan_million.py``:
the objects are one-line JSON files (``{"n": i}``), a thousand to a folder
(``d00012/o0012345.jsonl``), so a prefix of N objects lands N known rows.
"""

from __future__ import annotations

import json
import os
import resource
import time
import tracemalloc
from collections.abc import Iterator
from pathlib import Path
from typing import Any

PER_FOLDER = 1000


def object_key(index: int) -> str:
    return f"d{index // PER_FOLDER:05d}/o{index:07d}.jsonl"


def object_body(index: int) -> bytes:
    return b'{"n": %d}\n' % index


def make_local_objects(folder: Path, count: int) -> Path:
    """``count`` tiny objects under ``folder`` (made once: a marker beside it says done)."""
    done = folder.with_name(folder.name + ".done")
    if done.exists() and done.read_text() == str(count):
        return folder
    for index in range(count):
        if index % PER_FOLDER == 0:
            (folder / object_key(index)).parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(folder / object_key(index), os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        try:
            os.write(fd, object_body(index))
        finally:
            os.close(fd)
    done.write_text(str(count))
    return folder


def put_s3_objects(client: Any, bucket: str, count: int, threads: int = 16) -> None:
    """``count`` tiny objects in ``bucket`` (boto3 client), uploaded by a few threads."""
    from concurrent.futures import ThreadPoolExecutor

    def put(index: int) -> None:
        client.put_object(Bucket=bucket, Key=object_key(index), Body=object_body(index))

    with ThreadPoolExecutor(threads) as pool:
        for _ in pool.map(put, range(count)):
            pass


def rss_high_water_bytes() -> int:
    """This process's peak resident set (``ru_maxrss`` is in KiB on Linux)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


def scandir_walk(root: str) -> Iterator[tuple[str, int, float]]:
    """(key, size, mtime) of every file under ``root``, in key order: the baseline listing."""
    def walk(folder: str, prefix: str) -> Iterator[tuple[str, int, float]]:
        with os.scandir(folder) as entries:
            found = sorted(entries, key=lambda e: e.name)
        for entry in found:
            if entry.is_dir(follow_symlinks=False):
                yield from walk(entry.path, prefix + entry.name + "/")
            else:
                stat = entry.stat(follow_symlinks=False)
                yield prefix + entry.name, stat.st_size, stat.st_mtime
    yield from walk(root, "")


def measure_plan(config: dict[str, Any], trace: bool = False,
                 close_all: bool = False) -> dict[str, Any]:
    """Plan the first stream of an object storage ``config`` with no state; what it cost.

    Returns seconds (wall and CPU), partitions, objects planned, the plan's partitions as JSON
    (bytes), the driver's RSS high-water and, with ``trace``, tracemalloc's
    peak of Python allocations (tracing slows allocation: time it without).
    With ``close_all`` every partition is then closed on a cursor, as the
    commits of the sync would, and the state's JSON size is reported.
    """
    from headwater.connectors.object_storage import ObjectStorageSource
    from headwater.connectors.object_storage._cursor import ObjectCursor

    source = ObjectStorageSource(config)
    stream = source.streams()[0]
    if trace:
        tracemalloc.start()
    started, cpu = time.perf_counter(), time.process_time()
    partitions = stream.partitions(None)
    seconds, cpu = time.perf_counter() - started, time.process_time() - cpu
    plan_bytes = len(json.dumps([p.to_dict() for p in partitions]))
    peak = tracemalloc.get_traced_memory()[1] if trace else None
    if trace:
        tracemalloc.stop()
    objects = sum(len(p.params.get("objects") or ()) or 1 for p in partitions)
    result: dict[str, Any] = {"seconds": seconds, "cpu_seconds": cpu,
                              "partitions": len(partitions),
                              "objects": objects, "plan_bytes": plan_bytes,
                              "rss_high_water": rss_high_water_bytes(), "traced_peak": peak}
    if close_all:
        cursor = ObjectCursor(None, source._settings.recent_keys)
        started = time.perf_counter()
        for partition in partitions:
            cursor.close_partition(partition)
        result["close_seconds"] = time.perf_counter() - started
        result["state_bytes"] = len(json.dumps(cursor.state()))
    return result
