"""The object storage source against Spark's own file readers, same files, same run.

For each format (JSON Lines, CSV, Parquet) the same ``--rows`` rows are written
into ``--files`` local files, then landed in a new Delta table twice, in one
Spark session:

* **Spark's reader** (the baseline): ``spark.read.schema(S).json(files)`` (or
  ``.csv`` with a header, or ``.parquet``) with the same explicit schema S, then
  ``write.format("delta").mode("overwrite")``;
* **Headwater**: ``SyncEngine.run()`` of an ``object_storage`` connection over the
  folder (full_refresh + overwrite, one checkpoint), which adds the metadata and
  source columns and checks every value's type.

Where Headwater's time goes is printed too: ``parse`` is the connector's
readers alone in this Python process, one core (all files, divided by the
cores to compare with the parallel runs); ``to JVM`` is the same Spark job as
the sync (readers, typing) handing its Arrow rows to Spark's ``noop`` sink (the
path of ``--writer spark``); ``tasks' files`` is the sync's job with the tasks
writing Parquet themselves (the default writer), into a scratch folder;
``commit etc.`` is the sync's time minus that (with ``--writer spark``: minus
``to JVM``, so it is the JVM's Delta write).  Ratio = Spark reader s /
Headwater s (above 1: Headwater is faster).

Run: ``.venv/bin/python bench/object_storage_vs_spark_reader.py [--rows 2000000 --files 8]
[--writer auto|spark]``
"""

from __future__ import annotations

import argparse
import io
import logging
import os
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.csv as pa_csv
import pyarrow.parquet as pq
import yaml
from _common import header, load_line, scratch_dir, table, timed_headwater_sync

from headwater.config import load_connection
from headwater.destinations._table_files._parquet import ParquetFiles
from headwater.engine import SparkSettings, get_spark
from headwater.engine._task import TaskContext, make_task
from headwater.table_schema import META_FIELDS, arrow_schema_for

FORMATS = ("jsonl", "csv", "parquet")
SPARK_SCHEMA = ("id BIGINT, user_id BIGINT, amount DOUBLE, currency STRING, status STRING, "
                "created_at TIMESTAMP")
JSON_SCHEMA = {
    "id": {"type": "integer"}, "user_id": {"type": "integer"}, "amount": {"type": "number"},
    "currency": {"type": "string"}, "status": {"type": "string"},
    "created_at": {"type": "string", "format": "date-time"},
}


def make_table(rows: int, offset: int) -> pa.Table:
    ids = np.arange(offset, offset + rows, dtype=np.int64)
    at = (np.datetime64("2024-01-01T00:00:00", "us") + ids * 1_000_000).astype("datetime64[us]")
    return pa.table({
        "id": ids, "user_id": ids % 9973, "amount": np.round((ids % 10_000) * 0.37, 2),
        "currency": pa.array(np.array(["USD", "EUR", "GBP", "CAD"])[ids % 4]),
        "status": pa.array(np.array(["placed", "paid", "shipped", "delivered"])[ids % 4]),
        "created_at": pa.array(at, pa.timestamp("us", tz="UTC")),
    })


def write_files(folder: Path, fmt: str, rows: int, files: int) -> None:
    folder.mkdir(parents=True)
    per = rows // files
    for n in range(files):
        data = make_table(per if n < files - 1 else rows - per * (files - 1), n * per)
        path = folder / f"part-{n:03d}.{fmt}"
        if fmt == "parquet":
            pq.write_table(data, path)
        elif fmt == "csv":
            pa_csv.write_csv(data, path)
        else:
            frame = data.to_pandas()
            frame["created_at"] = frame["created_at"].dt.strftime("%Y-%m-%dT%H:%M:%S.%fZ")
            buffer = io.StringIO()
            frame.to_json(buffer, orient="records", lines=True)
            path.write_text(buffer.getvalue())


def spark_reader(spark: Any, folder: Path, fmt: str, target: Path) -> float:
    began = time.perf_counter()
    reader = spark.read.schema(SPARK_SCHEMA)
    if fmt == "jsonl":
        frame = reader.json(str(folder))
    elif fmt == "csv":
        frame = reader.option("header", True).csv(str(folder))
    else:
        frame = spark.read.parquet(str(folder))
    frame.write.format("delta").mode("overwrite").save(str(target))
    return time.perf_counter() - began


def connection(scratch: Path, folder: Path, fmt: str, name: str, writer: str = "auto") -> Path:
    document = {
        "name": name,
        "source": {"type": "object_storage", "config": {
            "url": str(folder),
            "streams": [{"name": fmt, "globs": [f"*.{fmt}"], "format": {"type": fmt},
                         "schema": JSON_SCHEMA}]}},
        "destination": {"type": "delta", "config": {"path": str(scratch / f"lake-{name}"),
                                                    "writer": writer}},
        "streams": [{"name": fmt, "sync_mode": "full_refresh",
                     "destination_sync_mode": "overwrite"}],
        "metadata_store": f"sqlite:///{scratch / f'{name}.db'}",
        "checkpoint": {"partitions_per_checkpoint": 64},
    }
    path = scratch / f"{name}.yaml"
    path.write_text(yaml.safe_dump(document))
    return path


def headwater_sync(path: Path) -> tuple[float, int]:
    elapsed, result = timed_headwater_sync(path)
    return elapsed, result.streams[0].records_written


def split(spark: Any, path: Path, fmt: str, cores: int) -> tuple[float, float, float]:
    """(parse s per core, read + to JVM s, read + tasks' own Parquet files s)."""
    from pyspark.sql.pandas.types import from_arrow_schema

    config = load_connection(path)
    from headwater.engine import build_source

    stream = build_source(config).stream(fmt)
    partitions = stream.partitions(None)
    context = TaskContext("bench", 0, arrow_schema_for(stream.json_schema()))
    began = time.perf_counter()
    for partition in partitions:
        for _ in stream.read(partition):
            pass
    parse = (time.perf_counter() - began) / cores
    schema = pa.schema([f.with_nullable(True) for f in META_FIELDS + list(context.data_schema)])
    began = time.perf_counter()
    frame = spark.range(0, len(partitions), 1, len(partitions)).mapInArrow(
        make_task(stream, partitions, context), from_arrow_schema(schema))
    frame.write.format("noop").mode("overwrite").save()
    transfer = time.perf_counter() - began
    files = path.parent / f"files-{fmt}"
    files.mkdir()
    writer = ParquetFiles(folder=str(files), stats_columns=["_hw_extracted_at", "_hw_run_id",
                                                            "_hw_checkpoint"])
    began = time.perf_counter()
    spark.range(0, len(partitions), 1, len(partitions)).mapInArrow(
        writer.around(make_task(stream, partitions, context)),
        from_arrow_schema(writer.schema)).collect()
    return parse, transfer, time.perf_counter() - began


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=2_000_000)
    parser.add_argument("--files", type=int, default=8)
    parser.add_argument("--formats", default=",".join(FORMATS))
    parser.add_argument("--writer", default="auto", choices=["auto", "spark"],
                        help="the Delta destination's writer for the Headwater syncs")
    args = parser.parse_args()
    logging.basicConfig(level=logging.WARNING)
    header("Object storage source vs Spark's own reader -> Delta", [sys.executable, *sys.argv])
    spark = get_spark(SparkSettings(master="local[*]", app_name="bench-object-storage",
                                    conf={"spark.sql.shuffle.partitions": "4"}))
    cores = int(spark.sparkContext.defaultParallelism)
    results = []
    with scratch_dir("hw-bench-objects-") as scratch:
        # Warm-up of the sync path (Python workers, Delta classes, metadata store).
        write_files(scratch / "warm", "jsonl", 1000, 2)
        headwater_sync(connection(scratch, scratch / "warm", "jsonl", "warm", args.writer))
        for fmt in args.formats.split(","):
            folder = scratch / f"in-{fmt}"
            write_files(folder, fmt, args.rows, args.files)
            size = sum(f.stat().st_size for f in folder.iterdir())
            # warm-up of Spark's reader for this format
            spark_reader(spark, folder, fmt, scratch / f"warm-{fmt}")
            baseline = spark_reader(spark, folder, fmt, scratch / f"spark-{fmt}")
            hw_s, written = headwater_sync(connection(scratch, folder, fmt, f"hw-{fmt}",
                                                      args.writer))
            if written != args.rows:
                raise SystemExit(f"{fmt}: the sync wrote {written:,} rows, not {args.rows:,}")
            parse, transfer, tasks = split(
                spark, connection(scratch, folder, fmt, f"split-{fmt}"), fmt, cores)
            job = tasks if args.writer == "auto" else transfer
            results.append([fmt, f"{size / 2**20:,.0f}", f"{baseline:.2f}", f"{hw_s:.2f}",
                            f"{baseline / hw_s:.2f}x", f"{parse:.2f}", f"{transfer:.2f}",
                            f"{tasks:.2f}", f"{max(hw_s - job, 0):.2f}"])
            print(f"{fmt}: spark {baseline:.2f}s headwater {hw_s:.2f}s  ({load_line()})",
                  file=sys.stderr)
    print(table(["format", "MiB", "spark reader s", "headwater s", "ratio",
                 "parse s/core", "to JVM s", "tasks' files s", "commit etc. s"], results))
    print(f"\nrows: {args.rows:,} in {args.files} files; writer: {args.writer}; "
          f"end: {load_line()}")
    spark.stop()
    os._exit(0)


if __name__ == "__main__":
    main()
