"""``sample`` rows -> PostgreSQL: Headwater's postgres destination against Spark's JDBC writer.

All in one run, the same rows (the ``sample`` source's ``orders``, read by the same
Python tasks on both sides) into the server ``scripts/postgres`` runs:

* **Spark JDBC** (the baseline): ``spark.range(P).mapInArrow(<the source's read>)`` ->
  ``df.write.jdbc`` (``batchsize`` 10,000, pgjdbc from Maven Central through
  ``spark.jars.packages``, as the engine fetches jars) into a table JDBC creates.
* **Headwater**: ``SyncEngine.run()``, full_refresh + append, the same partitions: the
  executors COPY (binary) into staging, one transaction per checkpoint moves the rows
  with its marker.  Headwater also writes its six ``_hw_*`` columns.
* **COPY ceiling**: the server's own ``COPY ... FROM '<file>' (FORMAT binary)`` of the
  rows Headwater landed (all its columns), exported to a file first: what the server
  ingests when nothing else runs.

Both Spark paths are warmed up first (a tiny write each), so neither pays the JVM's
start or the driver's loading; then they run alternately (``--rounds``, each after a server
``CHECKPOINT``) and the medians are compared.  Figures: seconds, rows/s, Headwater / Spark JDBC (aim
>= 3, issue 37) and Headwater / COPY ceiling.

Run: ``.venv/bin/python bench/postgres_destination.py [--rows 2000000] [--partitions 8]``
"""

from __future__ import annotations

import argparse
import logging
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import psycopg
import pyarrow as pa
import yaml
from _common import REPO, header, load_line, median, run_with_postgres, scratch_dir, table

os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)

PGJDBC = "org.postgresql:postgresql:42.7.4"


def sample_rows(spark: Any, source: dict[str, Any]) -> Any:
    """The sample source's ``orders`` as a DataFrame, read by Python tasks (one per partition)."""
    from pyspark.sql.pandas.types import from_arrow_schema

    from headwater.connectors.sample import SampleSource

    stream = SampleSource(source).stream("orders")
    partitions = stream.partitions(None)
    schema = SampleSource(source).expected_rows("orders").schema

    def read(positions: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        for batch in positions:
            for position in batch.column(0).to_pylist():
                for part in stream.read(partitions[position]):
                    yield part if isinstance(part, pa.RecordBatch) else \
                        pa.RecordBatch.from_pylist(list(part), schema=schema)

    return spark.range(0, len(partitions), 1, numPartitions=len(partitions)).mapInArrow(
        read, from_arrow_schema(schema))


def headwater_sync(folder: Path, parts: Any, source: dict[str, Any], schema: str,
                   partitions: int) -> float:
    from headwater.config import load_connection
    from headwater.engine import SyncEngine
    from headwater.metadata_store import MetadataStore

    document = {
        "name": f"bench_pg_{schema}",
        "source": {"type": "sample", "config": source},
        "destination": {"type": "postgres", "config": {
            "host": parts.hostname, "port": parts.port, "database": "headwater",
            "username": "headwater", "password": "headwater", "sslmode": "disable",
            "schema": schema}},
        "streams": [{"name": "orders", "sync_mode": "full_refresh",
                     "destination_sync_mode": "append"}],
        "metadata_store": f"sqlite:///{folder / f'{schema}.db'}",
        "checkpoint": {"partitions_per_checkpoint": max(1, partitions // 2),
                       "concurrent_checkpoints": 2},
    }
    path = folder / f"{schema}.yaml"
    path.write_text(yaml.safe_dump(document))
    connection = load_connection(path)
    began = time.perf_counter()
    result = SyncEngine(connection, MetadataStore(connection.metadata_store or "")).run()
    seconds = time.perf_counter() - began
    assert result.status == "succeeded", result.to_dict()
    return seconds


def settle(url: str) -> None:
    """A server CHECKPOINT: the last run's dirty pages are not the next one's to write."""
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("CHECKPOINT")


def count(url: str, table_name: str) -> int:
    with psycopg.connect(url) as conn:
        row = conn.execute(f"SELECT count(*) FROM {table_name}").fetchone()
    return int(row[0]) if row else 0


def copy_ceiling(url: str, landed: str, folder: Path) -> float:
    """Seconds of the server's COPY FROM a file of ``landed``'s rows into an empty copy."""
    dump = folder / "rows.copy"
    folder.chmod(0o777)  # the server (user postgres) writes and reads the file
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute(f"COPY {landed} TO '{dump}' (FORMAT binary)")
        conn.execute("DROP TABLE IF EXISTS bench_ceiling")
        conn.execute(f"CREATE TABLE bench_ceiling (LIKE {landed})")
        began = time.perf_counter()
        conn.execute(f"COPY bench_ceiling FROM '{dump}' (FORMAT binary)")
        seconds = time.perf_counter() - began
        conn.execute("DROP TABLE bench_ceiling")
    return seconds


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rows", type=int, default=2_000_000)
    parser.add_argument("--partitions", type=int, default=8)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    header("sample rows -> PostgreSQL: Headwater vs Spark's JDBC writer", sys.argv)
    # Each checkpoint's split: COPY into staging (the Spark job) and the moving transaction.
    logging.basicConfig(level=logging.WARNING, format="    %(message)s")
    logging.getLogger("headwater.destinations.postgres").setLevel(logging.INFO)
    url = subprocess.run([str(REPO / "scripts" / "postgres"), "start"], check=True,
                         capture_output=True, text=True).stdout.strip().splitlines()[-1]
    parts = urlsplit(url)
    with psycopg.connect(url, autocommit=True) as conn:
        for schema in ("bench_jdbc", "bench_warm", *(f"bench_hw{r}" for r in range(args.rounds))):
            conn.execute(f"DROP SCHEMA IF EXISTS {schema} CASCADE")
        conn.execute("CREATE SCHEMA bench_jdbc")
        conn.execute("DELETE FROM _headwater.commit_markers WHERE target LIKE '\"bench_%'"
                     if conn.execute("SELECT to_regclass('_headwater.commit_markers')"
                                     ).fetchone() != (None,) else "SELECT 1")

    from headwater.destinations.delta import DELTA_PACKAGE
    from headwater.engine import SparkSettings, get_spark

    spark: Any = get_spark(SparkSettings(
        master="local[*]", app_name="bench-postgres-destination",
        conf={"spark.jars.packages": f"{DELTA_PACKAGE},{PGJDBC}"}))
    source = {"seed": 7, "users": 0, "orders": args.rows,
              "rows_per_partition": -(-args.rows // args.partitions)}
    warm = {**source, "orders": 1000, "rows_per_partition": 500}
    jdbc_url = f"jdbc:postgresql://{parts.hostname}:{parts.port}/headwater"
    props = {"user": "headwater", "password": "headwater", "driver": "org.postgresql.Driver",
             "batchsize": "10000"}
    results: list[tuple[str, float]] = []
    with scratch_dir("hw-bench-pgdest-") as scratch:
        sample_rows(spark, warm).write.jdbc(jdbc_url, "bench_warm_jdbc", mode="overwrite",
                                            properties=props)
        headwater_sync(scratch, parts, warm, "bench_warm", 2)

        jdbc_times, hw_times = [], []
        for round_ in range(args.rounds):  # alternating, each after a server CHECKPOINT
            settle(url)
            began = time.perf_counter()
            sample_rows(spark, source).write.jdbc(jdbc_url, "bench_jdbc.orders",
                                                  mode="overwrite", properties=props)
            jdbc_times.append(time.perf_counter() - began)
            settle(url)
            hw_times.append(headwater_sync(scratch, parts, source, f"bench_hw{round_}",
                                           args.partitions))
            for name in ("bench_jdbc.orders", f"bench_hw{round_}.orders"):
                landed = count(url, name)
                assert landed == args.rows, f"{name}: {landed} rows, expected {args.rows}"
        print("Spark JDBC runs (s):", ", ".join(f"{t:.1f}" for t in jdbc_times))
        print("Headwater runs (s):", ", ".join(f"{t:.1f}" for t in hw_times))
        jdbc_s, hw_s = median(jdbc_times), median(hw_times)
        results.append((f"Spark JDBC writer (batchsize 10,000), median of {args.rounds}",
                        jdbc_s))
        results.append((f"Headwater -> postgres destination, median of {args.rounds}", hw_s))
        settle(url)
        ceiling_s = copy_ceiling(url, "bench_hw0.orders", scratch)
        results.append(("server COPY FROM a file (binary), Headwater's columns", ceiling_s))
    spark.stop()
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("DROP TABLE IF EXISTS bench_warm_jdbc")

    rows = [[name, f"{s:.1f}", f"{args.rows / s:,.0f}"] for name, s in results]
    print(table(["path", "seconds", "rows/s"], rows))
    print(f"Headwater / Spark JDBC (rows/s): {jdbc_s / hw_s:.2f} (aim >= 3)")
    print(f"Headwater / COPY ceiling (rows/s): {ceiling_s / hw_s:.2f}")
    print(load_line())


if __name__ == "__main__":
    run_with_postgres(main)
