"""A PostgreSQL table -> Delta: Headwater's postgres source against Spark's own JDBC reader.

All in one run, on one table of mixed types (bigint key, numeric, timestamptz,
jsonb, text, boolean) in the server ``scripts/postgres`` runs:

* **COPY limit**: ``COPY (SELECT ...) TO STDOUT (FORMAT binary)`` read by psycopg
  and thrown away: the extraction limit, no Spark.
* **Spark JDBC** (the baseline): ``spark.read.jdbc`` partitioned on ``id``
  (``numPartitions`` = Headwater's partitions, ``fetchsize`` 10,000 so pgjdbc
  streams) -> ``write.format("delta")``; pgjdbc from Maven Central via
  ``spark.jars.packages``.  jsonb is read as text by pgjdbc.
* **Headwater**: ``SyncEngine.run()``, full_refresh + overwrite, same partitions.

Figures: rows/s, the ratio Headwater / Spark JDBC (aim >= 1.2, issue 17), the share
of COPY binary's time in each tool's (how close to the extraction limit), and the peak
resident memory of this process and its children (driver, JVM, Python
workers) during each phase, sampled every 0.2 s.

Run: ``.venv/bin/python bench/postgres_source.py [--rows 5000000] [--partitions 8]``
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from typing import Any
from urllib.parse import urlsplit

import psycopg
import yaml
from _common import REPO, dir_size, header, load_line, run_with_postgres, scratch_dir, table
from _peak_memory import PeakMemory

os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)

PGJDBC = "org.postgresql:postgresql:42.7.4"
COLUMNS = "id, amount, placed_at, payload, label, paid"


def prepare(url: str, rows: int) -> None:
    with psycopg.connect(url, autocommit=True) as conn:
        have = conn.execute("SELECT to_regclass('bench_orders') IS NOT NULL").fetchone()
        if have and have[0]:
            count = conn.execute("SELECT count(*) FROM bench_orders").fetchone()
            if count and count[0] == rows:
                return
        conn.execute("DROP TABLE IF EXISTS bench_orders")
        conn.execute("""
            CREATE TABLE bench_orders (id bigint PRIMARY KEY, amount numeric(12, 2),
              placed_at timestamptz, payload jsonb, label text, paid boolean)""")
        conn.execute("""
            INSERT INTO bench_orders
            SELECT g, (g %% 100000) / 100.0, '2024-01-01'::timestamptz + g * interval '1 s',
                   jsonb_build_object('sku', 'sku-' || (g %% 5000), 'qty', g %% 7,
                                      'tags', jsonb_build_array('a', 'b')),
                   'order number ' || g, g %% 3 = 0
            FROM generate_series(1, %s) g""", [rows])
        conn.execute("VACUUM ANALYZE bench_orders")


def copy_limit(url: str) -> tuple[float, int]:
    began = time.perf_counter()
    size = 0
    with psycopg.connect(url) as conn, conn.cursor() as cur, cur.copy(
            f"COPY (SELECT {COLUMNS} FROM bench_orders) TO STDOUT (FORMAT binary)") as copy:
        for chunk in copy:
            size += len(chunk)
    return time.perf_counter() - began, size


def breakdown(config: dict[str, Any]) -> list[tuple[str, float, int]]:
    """Where Headwater's time goes, Python side, no Spark, one process.

    The source's own read (ADBC binary COPY into Arrow) of every partition, then
    the same plus Headwater's task (typing every column, metadata columns).
    """
    import pyarrow as pa

    from headwater.connectors.postgres import PostgresSource
    from headwater.engine._task import TaskContext, read_partition
    from headwater.table_schema import arrow_schema_for

    stream = PostgresSource(config).stream("bench_orders")
    partitions = stream.partitions(None)
    out = []
    with PeakMemory() as memory:
        began = time.perf_counter()
        count = sum(b.num_rows for p in partitions for b in stream.read(p)
                    if isinstance(b, pa.RecordBatch))
        out.append(("source read() only, 1 process", time.perf_counter() - began, memory.peak))
    context = TaskContext(run_id="bench", checkpoint_index=1,
                          data_schema=arrow_schema_for(stream.json_schema()))
    with PeakMemory() as memory:
        began = time.perf_counter()
        typed = sum(b.num_rows for p in partitions for b in read_partition(stream, p, context))
        out.append(("read() + Headwater task, 1 process", time.perf_counter() - began,
                    memory.peak))
    assert count == typed
    return out


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rows", type=int, default=5_000_000)
    parser.add_argument("--partitions", type=int, default=8)
    args = parser.parse_args()
    header("PostgreSQL table -> Delta: Headwater vs Spark JDBC", sys.argv)
    url = subprocess.run([str(REPO / "scripts" / "postgres"), "start"], check=True,
                         capture_output=True, text=True).stdout.strip().splitlines()[-1]
    began = time.perf_counter()
    prepare(url, args.rows)
    print(f"table ready in {time.perf_counter() - began:.1f} s ({args.rows:,} rows)")

    from headwater.config import load_connection
    from headwater.destinations.delta import DELTA_PACKAGE
    from headwater.engine import SparkSettings, SyncEngine, get_spark
    from headwater.metadata_store import MetadataStore

    parts = urlsplit(url)
    spark: Any = get_spark(SparkSettings(
        master="local[*]", app_name="bench-postgres",
        conf={"spark.jars.packages": f"{DELTA_PACKAGE},{PGJDBC}"}))
    results: list[tuple[str, float, int]] = []
    with scratch_dir("hw-bench-pg-") as scratch:
        with PeakMemory() as memory:
            seconds, size = copy_limit(url)
        results.append(("COPY binary -> /dev/null", seconds, memory.peak))
        print(f"COPY binary: {size / 1e6:.0f} MB")

        # Spark JDBC warm-up (tiny read) so neither side pays for the JVM starting.
        jdbc_url = f"jdbc:postgresql://{parts.hostname}:{parts.port}/headwater"
        props = {"user": "headwater", "password": "headwater", "driver": "org.postgresql.Driver",
                 "fetchsize": "10000"}
        spark.read.jdbc(jdbc_url, "(SELECT 1 AS x) t", properties=props).count()
        with PeakMemory() as memory:
            began = time.perf_counter()
            frame = spark.read.jdbc(
                jdbc_url, f"(SELECT {COLUMNS} FROM bench_orders) t", column="id",
                lowerBound=1, upperBound=args.rows + 1, numPartitions=args.partitions,
                properties=props)
            frame.write.format("delta").mode("overwrite").save(str(scratch / "jdbc"))
            jdbc_s = time.perf_counter() - began
        results.append(("Spark JDBC -> Delta", jdbc_s, memory.peak))

        document = {
            "name": "bench_pg",
            "source": {"type": "postgres", "config": {
                "host": parts.hostname, "port": parts.port, "database": "headwater",
                "username": "headwater", "password": "headwater", "sslmode": "disable",
                "rows_per_partition": -(-args.rows // args.partitions),
                "max_partitions": args.partitions}},
            "destination": {"type": "delta", "config": {"path": str(scratch / "lake")}},
            "streams": [{"name": "bench_orders", "sync_mode": "full_refresh",
                         "destination_sync_mode": "overwrite"}],
            "metadata_store": f"sqlite:///{scratch / 'meta.db'}",
            "checkpoint": {"partitions_per_checkpoint": args.partitions},
        }
        path = scratch / "bench_pg.yaml"
        path.write_text(yaml.safe_dump(document))
        connection = load_connection(path)
        with PeakMemory() as memory:
            began = time.perf_counter()
            result = SyncEngine(connection, MetadataStore(connection.metadata_store or "")).run()
            hw_s = time.perf_counter() - began
        assert result.status == "succeeded", result.to_dict()
        results.append(("Headwater -> Delta", hw_s, memory.peak))
        landed = spark.read.format("delta").load(str(scratch / "lake" / "bench_orders")).count()
        assert landed == args.rows, f"Headwater landed {landed} rows, expected {args.rows}"
        sizes = dir_size(scratch / "jdbc"), dir_size(scratch / "lake" / "bench_orders")
    spark.stop()

    results += breakdown(document["source"]["config"])
    rows = [[name, f"{s:.1f}", f"{args.rows / s:,.0f}", f"{peak / 2**30:.2f}"]
            for name, s, peak in results]
    print(table(["path", "seconds", "rows/s", "peak RSS GiB"], rows))
    print(f"Headwater / Spark JDBC (rows/s): {jdbc_s / hw_s:.2f}")
    print(f"Headwater / COPY limit (rows/s): {results[0][1] / hw_s:.2f}")
    # The share of the sync's time that the extraction alone (COPY binary into
    # /dev/null, one connection, no typing, no Spark) would take: the rest is the
    # typing, Spark's transfer and the Delta write.
    print(f"share of COPY (FORMAT binary) -> /dev/null in the time of: Headwater "
          f"{results[0][1] / hw_s:.0%}, Spark JDBC {results[0][1] / jdbc_s:.0%}")
    print(f"Delta bytes: Spark JDBC {sizes[0] / 1e6:.0f} MB, Headwater {sizes[1] / 1e6:.0f} MB")
    print(load_line())


if __name__ == "__main__":
    run_with_postgres(main)
