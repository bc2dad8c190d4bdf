"""Headwater on a standalone cluster writing Delta to an S3-compatible server, against plain
Spark jobs writing the same rows to the same store in the same run (issue 20).

A master and two workers (``spark-class``, one core and ``--worker-memory`` each)
and moto's S3 server (``moto_server``) run on 127.0.0.1 for the whole run; this
process is the driver of one application on the cluster, with ``s3a://`` pointed
at the server.  Two pairs, each side writing a new Delta table in the bucket:

* ``sample``: the baseline is the plain Spark job of ``sync_vs_plain_spark.py``
  (the ``users`` stream's own reader under ``mapInArrow``, one Delta overwrite);
  Headwater is ``SyncEngine.run()`` of a ``sample`` connection (full_refresh +
  overwrite) into the bucket.
* ``jsonl``: ``--jsonl-files`` JSON Lines objects in the bucket (the rows of
  ``object_storage_vs_spark_reader.py``); the baseline is
  ``spark.read.schema(S).json("s3a://...")`` then a Delta overwrite; Headwater is an
  ``object_storage`` connection over ``s3://`` on the same server.

Each side is warmed up with a small run first; every table's row count is checked
(outside the timed part).  Ratio = baseline s / Headwater s (above 1: Headwater is
faster).  The writer each Headwater checkpoint took (``writer``/``writer_reason``
in the run's checkpoint records) is printed: Spark's Delta writer until the task
path writes to object stores.

The issue's sizes (5,000,000 sample rows, 2,000,000 JSONL rows) are ``--full``;
the defaults are smaller because moto keeps every object in its process's memory
and answers one request at a time per connection.

Run: ``.venv/bin/python bench/cluster_s3.py [--full | --rows N --jsonl-rows N]``
"""

from __future__ import annotations

import argparse
import logging
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import yaml
from _common import header, load_line, scratch_dir, table
from object_storage_vs_spark_reader import JSON_SCHEMA, SPARK_SCHEMA, write_files
from sync_vs_plain_spark import plain_spark, source_config

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # for tests.integration

from headwater.config import load_connection
from headwater.engine import SparkSettings, SyncEngine, SyncObserver, SyncOptions, get_spark
from headwater.metadata_store import MetadataStore
from tests.integration._cluster import standalone_cluster
from tests.integration._s3 import S3Server, moto_server

BUCKET = "bench-lake"
ROWS_PER_PARTITION = 50_000


def sync(scratch: Path, name: str, document: dict[str, Any]) -> tuple[float, int, set[str]]:
    """Seconds, rows written and writers of one ``SyncEngine.run`` on the running session."""
    document = {"name": name, "metadata_store": f"sqlite:///{scratch / f'{name}.db'}",
                **document}
    path = scratch / f"{name}.yaml"
    path.write_text(yaml.safe_dump(document, sort_keys=False))
    config = load_connection(path)
    store = MetadataStore(config.metadata_store or "")
    began = time.perf_counter()
    result = SyncEngine(config, store, SyncOptions(), SyncObserver()).run()
    elapsed = time.perf_counter() - began
    if result.status != "succeeded":
        raise SystemExit(f"{name}: the sync failed: {result.to_dict()}")
    writers = {f"{c.stats.get('writer')} ({c.stats.get('writer_reason')})"
               for c in store.list_checkpoints(result.run_id)}
    store.close()
    return elapsed, result.streams[0].records_written, writers


def sample_sync(scratch: Path, name: str, rows: int) -> tuple[float, int, set[str]]:
    return sync(scratch, name, {
        "source": {"type": "sample", "config": source_config(rows, ROWS_PER_PARTITION)},
        "destination": {"type": "delta", "config": {"path": f"s3a://{BUCKET}/{name}"}},
        "streams": [{"name": "users", "sync_mode": "full_refresh",
                     "destination_sync_mode": "overwrite"}],
        "checkpoint": {"partitions_per_checkpoint": 16},
    })


def jsonl_sync(scratch: Path, s3: S3Server, name: str, prefix: str) -> tuple[float, int, set[str]]:
    return sync(scratch, name, {
        "source": {"type": "object_storage", "config": s3.source_config(
            f"{BUCKET}/{prefix}",
            streams=[{"name": "jsonl", "globs": ["*.jsonl"], "format": {"type": "jsonl"},
                      "schema": JSON_SCHEMA}])},
        "destination": {"type": "delta", "config": {"path": f"s3a://{BUCKET}/{name}"}},
        "streams": [{"name": "jsonl", "sync_mode": "full_refresh",
                     "destination_sync_mode": "overwrite"}],
        "checkpoint": {"partitions_per_checkpoint": 64},
    })


def upload_jsonl(s3: S3Server, prefix: str, rows: int, files: int) -> int:
    """Write the rows as ``files`` JSON Lines objects under ``prefix``; their bytes."""
    with tempfile.TemporaryDirectory(prefix="hw-bench-jsonl-") as folder:
        local = Path(folder) / "files"
        write_files(local, "jsonl", rows, files)
        client = s3.client()
        for path in sorted(local.iterdir()):
            client.upload_file(str(path), BUCKET, f"{prefix}/{path.name}")
        return sum(p.stat().st_size for p in local.iterdir())


def spark_json(spark: Any, prefix: str, target: str) -> float:
    began = time.perf_counter()
    spark.read.schema(SPARK_SCHEMA).json(f"s3a://{BUCKET}/{prefix}/") \
        .write.format("delta").mode("overwrite").save(target)
    return time.perf_counter() - began


def count(spark: Any, location: str, wanted: int, what: str) -> None:
    counted = spark.read.format("delta").load(location).count()
    if counted != wanted:
        raise SystemExit(f"{what}: {counted:,} rows in {location}, not {wanted:,}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=1_000_000, help="sample rows")
    parser.add_argument("--jsonl-rows", type=int, default=400_000)
    parser.add_argument("--jsonl-files", type=int, default=8)
    parser.add_argument("--full", action="store_true",
                        help="the issue's sizes: 5,000,000 sample rows, 2,000,000 JSONL rows")
    parser.add_argument("--worker-memory", default="2g")
    parser.add_argument("--pairs", default="sample,jsonl")
    args = parser.parse_args()
    if args.full:
        args.rows, args.jsonl_rows = 5_000_000, 2_000_000
    logging.basicConfig(level=logging.WARNING)
    header("Standalone cluster + S3-compatible server: Headwater vs plain Spark -> Delta",
           [sys.executable, *sys.argv])
    results = []
    with scratch_dir("hw-bench-cluster-s3-") as scratch, \
            moto_server(scratch / "moto.log") as s3, \
            standalone_cluster(scratch, memory=args.worker_memory) as cluster:
        s3.bucket(BUCKET)
        spark = get_spark(SparkSettings(
            master=cluster.master_url, app_name="bench-cluster-s3",
            conf={**s3.spark_conf(), "spark.executor.memory": "1g",
                  "spark.sql.shuffle.partitions": "4"}))
        print(f"cluster {cluster.master_url}, S3 {s3.endpoint}, executors' cores: "
              f"{spark.sparkContext.defaultParallelism}", file=sys.stderr)
        pairs = args.pairs.split(",")
        if "sample" in pairs:
            results.append(sample_pair(spark, scratch, args.rows))
        if "jsonl" in pairs:
            results.append(jsonl_pair(spark, scratch, s3, args.jsonl_rows, args.jsonl_files))
        spark.stop()
    print(table(["pair", "rows", "baseline", "baseline s", "headwater s", "ratio",
                 "headwater writer"], results))
    print(f"\nworkers: 2 x (1 core, {args.worker_memory}); end: {load_line()}")


def sample_pair(spark: Any, scratch: Path, rows: int) -> list[str]:
    plain_spark(spark, 20_000, 10_000, f"s3a://{BUCKET}/warm-plain")  # type: ignore[arg-type]
    sample_sync(scratch, "warm-sample", 20_000)
    location = f"s3a://{BUCKET}/plain-sample"
    baseline = plain_spark(spark, rows, ROWS_PER_PARTITION, location)  # type: ignore[arg-type]
    hw_s, written, writers = sample_sync(scratch, "hw-sample", rows)
    if written != rows:
        raise SystemExit(f"sample: the sync wrote {written:,} rows, not {rows:,}")
    count(spark, location, rows, "plain Spark")
    count(spark, f"s3a://{BUCKET}/hw-sample/users", rows, "Headwater")
    print(f"sample: plain {baseline:.2f}s headwater {hw_s:.2f}s ({load_line()})", file=sys.stderr)
    return ["sample", f"{rows:,}", "plain Spark job", f"{baseline:.2f}", f"{hw_s:.2f}",
            f"{baseline / hw_s:.2f}x", "; ".join(sorted(writers))]


def jsonl_pair(spark: Any, scratch: Path, s3: S3Server, rows: int, files: int) -> list[str]:
    upload_jsonl(s3, "warm-jsonl", 2_000, 2)
    spark_json(spark, "warm-jsonl", f"s3a://{BUCKET}/warm-spark-jsonl")
    jsonl_sync(scratch, s3, "warm-hw-jsonl", "warm-jsonl")
    size = upload_jsonl(s3, "in-jsonl", rows, files)
    location = f"s3a://{BUCKET}/spark-jsonl"
    baseline = spark_json(spark, "in-jsonl", location)
    hw_s, written, writers = jsonl_sync(scratch, s3, "hw-jsonl", "in-jsonl")
    if written != rows:
        raise SystemExit(f"jsonl: the sync wrote {written:,} rows, not {rows:,}")
    count(spark, location, rows, "spark.read.json")
    count(spark, f"s3a://{BUCKET}/hw-jsonl/jsonl", rows, "Headwater")
    print(f"jsonl ({size / 2**20:,.0f} MiB): spark {baseline:.2f}s headwater {hw_s:.2f}s "
          f"({load_line()})", file=sys.stderr)
    return ["jsonl", f"{rows:,}", "spark.read.json", f"{baseline:.2f}", f"{hw_s:.2f}",
            f"{baseline / hw_s:.2f}x", "; ".join(sorted(writers))]


if __name__ == "__main__":
    main()
