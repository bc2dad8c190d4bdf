"""JSON Lines, flat and nested, into Delta: Headwater against ``spark.read.json``, same run.

Two shapes of ``--rows`` rows in ``--files`` local JSON Lines files:

* **flat**: six scalar columns, a microsecond ISO 8601 ``created_at``;
* **nested** (issue 17's shape): the flat columns plus ``updated_at`` with an
  offset, and ``customer``, an object holding an object (``address``) and an
  array of strings (``tags``), with a microsecond date-time of its own; about
  260 bytes a row.

Each shape lands in a new Delta table twice, in one Spark session, with the
same typed output (structs, arrays, timestamps; checked: the Headwater table's
data columns must have the baseline's schema, and both tables the row count):

* **Spark's reader** (the baseline): ``spark.read.schema(S).json(folder)``, then
  ``write.format("delta").mode("overwrite")``;
* **Headwater**: ``SyncEngine.run()`` of an ``object_storage`` connection over the
  folder (full_refresh + overwrite), its schema inferred from the files as a user
  would leave it.

``pyarrow alone`` is ``pyarrow.json.read_json`` of the same files under the same
schema, all threads, in this process: the floor of parsing, and its share of
Headwater's wall time.  Ratio = Spark s / Headwater s (above 1: Headwater faster).

Run: ``.venv/bin/python bench/jsonl_nested_vs_spark_json.py [--rows 2000000 --files 8]
[--shapes flat,nested] [--profile]``
"""

from __future__ import annotations

import argparse
import cProfile
import io
import logging
import os
import pstats
import sys
import time
from pathlib import Path
from typing import Any

import pyarrow.json as pa_json
import yaml
from _common import header, load_line, scratch_dir, table, timed_headwater_sync

from headwater.config import load_connection
from headwater.engine import SparkSettings, get_spark

SHAPES = ("flat", "nested")
FLAT = ("id BIGINT, user_id BIGINT, amount DOUBLE, currency STRING, status STRING, "
        "created_at TIMESTAMP")
SPARK_SCHEMA = {
    "flat": FLAT,
    "nested": FLAT + ", updated_at TIMESTAMP, customer STRUCT<name: STRING, email: STRING, "
    "since: TIMESTAMP, address: STRUCT<street: STRING, city: STRING, zip: STRING, "
    "country: STRING>, tags: ARRAY<STRING>>",
}
CURRENCIES = ("USD", "EUR", "GBP", "CAD")
STATUSES = ("placed", "paid", "shipped", "delivered")
CITIES = ("Paris", "Oslo", "Lima", "Kyoto", "Austin", "Porto", "Accra")
TAGS = ("vip", "new", "returning", "b2b", "mobile", "newsletter")


def _iso(seconds: int, micros: int, zone: str = "Z") -> str:
    minutes, second = divmod(seconds, 60)
    hours, minute = divmod(minutes, 60)
    days, hour = divmod(hours, 24)
    return (f"2024-{1 + days // 28 % 12:02d}-{1 + days % 28:02d}T{hour:02d}:{minute:02d}:"
            f"{second:02d}.{micros:06d}{zone}")


def _line(i: int, shape: str) -> str:
    flat = (f'{{"id":{i},"user_id":{i % 9973},"amount":{(i % 10_000) * 0.37:.2f},'
            f'"currency":"{CURRENCIES[i % 4]}","status":"{STATUSES[i % 4]}",'
            f'"created_at":"{_iso(i, i * 7919 % 1_000_000)}"')
    if shape == "flat":
        return flat + "}\n"
    tags = ",".join(f'"{TAGS[(i + j) % len(TAGS)]}"' for j in range(i % 4))
    return (flat + f',"updated_at":"{_iso(i + 3600, i * 104729 % 1_000_000, "+02:00")}",'
            f'"customer":{{"name":"Customer {i % 50_000}","email":"c{i % 50_000}@example.com",'
            f'"since":"{_iso(i % 86_400 * 7, i % 1_000_000)}",'
            f'"address":{{"street":"{i % 999} Main Street","city":"{CITIES[i % 7]}",'
            f'"zip":"{i % 100_000:05d}","country":"{CITIES[i % 7][:2].upper()}"}},'
            f'"tags":[{tags}]}}}}\n')


def write_files(folder: Path, shape: str, rows: int, files: int) -> None:
    folder.mkdir(parents=True)
    per = rows // files
    for n in range(files):
        count = per if n < files - 1 else rows - per * (files - 1)
        with open(folder / f"part-{n:03d}.jsonl", "w") as out:
            start = n * per
            for block in range(start, start + count, 10_000):
                out.write("".join(_line(i, shape)
                                  for i in range(block, min(block + 10_000, start + count))))


def spark_reader(spark: Any, folder: Path, shape: str, target: Path) -> float:
    began = time.perf_counter()
    spark.read.schema(SPARK_SCHEMA[shape]).json(str(folder)).write.format("delta").mode(
        "overwrite").save(str(target))
    return time.perf_counter() - began


def pyarrow_alone(spark: Any, folder: Path, shape: str) -> float:
    """``pyarrow.json.read_json`` of every file under the baseline's schema, all threads."""
    from pyspark.sql.pandas.types import to_arrow_schema

    struct = spark.createDataFrame([], SPARK_SCHEMA[shape]).schema
    schema = to_arrow_schema(struct, timezone="UTC")
    options = pa_json.ParseOptions(explicit_schema=schema)
    began = time.perf_counter()
    rows = 0
    for path in sorted(folder.iterdir()):
        rows += pa_json.read_json(path, parse_options=options).num_rows
    return time.perf_counter() - began


def connection(scratch: Path, folder: Path, name: str) -> Path:
    document = {
        "name": name,
        "source": {"type": "object_storage", "config": {
            "url": str(folder),
            "streams": [{"name": "events", "globs": ["*.jsonl"], "format": {"type": "jsonl"}}]}},
        "destination": {"type": "delta", "config": {"path": str(scratch / f"lake-{name}")}},
        "streams": [{"name": "events", "sync_mode": "full_refresh",
                     "destination_sync_mode": "overwrite"}],
        "metadata_store": f"sqlite:///{scratch / f'{name}.db'}",
        "checkpoint": {"partitions_per_checkpoint": 64},
    }
    path = scratch / f"{name}.yaml"
    path.write_text(yaml.safe_dump(document))
    return path


def headwater_sync(path: Path) -> tuple[float, int]:
    elapsed, result = timed_headwater_sync(path)
    stats = result.streams[0]
    assert stats.records_rejected == 0, stats
    return elapsed, stats.records_written


def check_same_types(spark: Any, ours: Path, theirs: Path) -> None:
    """Headwater's data columns have the baseline's names and types (so the same output)."""
    baseline = spark.read.format("delta").load(str(theirs)).schema
    table = spark.read.format("delta").load(str(ours)).select(*baseline.names).schema
    got = [(f.name, f.dataType.simpleString()) for f in table]
    want = [(f.name, f.dataType.simpleString()) for f in baseline]
    if got != want:
        raise SystemExit(f"different types: headwater {got}, spark {want}")


def profile_read(path: Path, out: io.StringIO) -> None:
    """Where the sync's task code spends its time: the stream read and typed, one process."""
    from headwater.engine import build_source
    from headwater.engine._task import TaskContext, read_partition
    from headwater.table_schema import arrow_schema_for

    config = load_connection(path)
    stream = build_source(config).stream("events")
    context = TaskContext("bench", 0, arrow_schema_for(stream.json_schema()))
    profiler = cProfile.Profile()
    profiler.enable()
    for partition in stream.partitions(None):
        for _ in read_partition(stream, partition, context):
            pass
    profiler.disable()
    pstats.Stats(profiler, stream=out).sort_stats("cumulative").print_stats(18)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=2_000_000)
    parser.add_argument("--files", type=int, default=8)
    parser.add_argument("--shapes", default=",".join(SHAPES))
    parser.add_argument("--profile", action="store_true",
                        help="also profile the task code's read + typing of each shape")
    args = parser.parse_args()
    logging.basicConfig(level=logging.WARNING)
    header("JSON Lines (flat, nested) vs spark.read.json -> Delta", [sys.executable, *sys.argv])
    spark = get_spark(SparkSettings(master="local[*]", app_name="bench-jsonl-nested",
                                    conf={"spark.sql.shuffle.partitions": "4"}))
    results = []
    profiles = io.StringIO()
    with scratch_dir("hw-bench-jsonl-") as scratch:
        for shape in args.shapes.split(","):
            folder = scratch / f"in-{shape}"
            write_files(folder, shape, args.rows, args.files)
            size = sum(f.stat().st_size for f in folder.iterdir())
            # Warm-ups: Spark's JSON reader and Delta writer, Headwater's sync path.
            warm = scratch / f"warm-{shape}"
            write_files(warm, shape, 2000, 2)
            spark_reader(spark, warm, shape, scratch / f"warm-spark-{shape}")
            headwater_sync(connection(scratch, warm, f"warm-{shape}"))
            baseline = spark_reader(spark, folder, shape, scratch / f"spark-{shape}")
            path = connection(scratch, folder, f"hw-{shape}")
            hw_s, written = headwater_sync(path)
            if written != args.rows:
                raise SystemExit(f"{shape}: the sync wrote {written:,} rows, not {args.rows:,}")
            counted = spark.read.format("delta").load(str(scratch / f"spark-{shape}")).count()
            if counted != args.rows:
                raise SystemExit(f"{shape}: Spark wrote {counted:,} rows, not {args.rows:,}")
            check_same_types(spark, scratch / f"lake-hw-{shape}" / "events",
                             scratch / f"spark-{shape}")
            alone = pyarrow_alone(spark, folder, shape)
            if args.profile:
                profiles.write(f"\n## {shape}: read + typing in one process\n")
                profile_read(path, profiles)
            results.append([shape, f"{size / 2**20:,.0f}", f"{baseline:.2f}", f"{hw_s:.2f}",
                            f"{baseline / hw_s:.2f}x", f"{alone:.2f}",
                            f"{alone / hw_s:.0%}"])
            print(f"{shape}: spark {baseline:.2f}s headwater {hw_s:.2f}s ({load_line()})",
                  file=sys.stderr)
    print(table(["shape", "MiB", "spark.read.json s", "headwater s", "ratio",
                 "pyarrow alone s", "pyarrow share"], results))
    print(f"\nrows: {args.rows:,} in {args.files} files; end: {load_line()}")
    if args.profile:
        print(profiles.getvalue())
    spark.stop()
    os._exit(0)


if __name__ == "__main__":
    main()
