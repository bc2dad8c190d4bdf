"""The plain Spark baseline of the Iceberg benchmarks: Spark 4.1.4 + Iceberg's Spark runtime.

Runs in the venv ``bench/setup-alternatives spark41-iceberg`` makes (PySpark
4.1.4; ``iceberg-spark-runtime-4.1_2.13:1.12.0`` on ``spark.jars``), never in
the project's venv: no Iceberg runtime loads on Spark 4.2.  One table, written
in one job and one snapshot (``writeTo(...).create()``) into Iceberg's Hadoop
catalog at ``--warehouse``:

* ``sample``: ``spark.range(P, numPartitions=P).mapInArrow(fn)``, ``fn`` calling
  the ``sample`` source's own ``users`` reader for the same P partitions
  Headwater plans (as ``bench/sync_vs_plain_spark.py``'s Delta baseline);
* ``json``: ``spark.read.schema(S).json(folder)`` with an explicit schema.

Prints one JSON line: ``session_s`` (the session up, the jar loaded) and
``write_s`` (the job and its commit).

Run by ``bench/iceberg_*.py``; alone: ``.bench-venvs/spark41-iceberg/bin/python
bench/_spark41_iceberg.py json --folder F --schema S --jar J --warehouse W``.
"""

from __future__ import annotations

import argparse
import json
import time
from collections.abc import Iterator
from typing import Any

CATALOG = "ice"
NAMESPACE = "bench"


def session(jar: str, warehouse: str, master: str) -> Any:
    from pyspark.sql import SparkSession

    return (SparkSession.builder.master(master).appName("bench-spark41-iceberg")
            .config("spark.jars", jar)
            .config("spark.ui.enabled", "false")
            .config("spark.ui.showConsoleProgress", "false")
            .config("spark.sql.session.timeZone", "UTC")
            .config("spark.sql.execution.arrow.pyspark.enabled", "true")
            .config("spark.sql.extensions",
                    "org.apache.iceberg.spark.extensions.IcebergSparkSessionExtensions")
            .config(f"spark.sql.catalog.{CATALOG}", "org.apache.iceberg.spark.SparkCatalog")
            .config(f"spark.sql.catalog.{CATALOG}.type", "hadoop")
            .config(f"spark.sql.catalog.{CATALOG}.warehouse", warehouse)
            .getOrCreate())


def sample_frame(spark: Any, rows: int, rows_per_partition: int) -> Any:
    """The ``sample`` source's ``users`` rows, read by its own reader in Spark tasks."""
    import pyarrow as pa
    from pyspark.sql.pandas.types import from_arrow_schema

    from headwater.connectors.sample import SampleSource
    from headwater.table_schema import arrow_schema_for

    stream = SampleSource({"seed": 42, "users": rows, "orders": 0,
                           "rows_per_partition": rows_per_partition}).stream("users")
    partitions = stream.partitions(None)
    schema = from_arrow_schema(arrow_schema_for(stream.json_schema()))

    def read(positions: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        for batch in positions:
            for position in batch.column(0).to_pylist():
                yield from stream.read(partitions[position])

    count = len(partitions)
    return spark.range(count, numPartitions=count).mapInArrow(read, schema)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("what", choices=["sample", "json"])
    parser.add_argument("--jar", required=True, help="iceberg-spark-runtime-4.1_2.13 jar")
    parser.add_argument("--warehouse", required=True, help="the Hadoop catalog's folder")
    parser.add_argument("--table", required=True)
    parser.add_argument("--master", default="local[*]")
    parser.add_argument("--rows", type=int, default=0)
    parser.add_argument("--rows-per-partition", type=int, default=100_000)
    parser.add_argument("--folder", help="json: the folder of JSON Lines files")
    parser.add_argument("--schema", help="json: the Spark DDL schema of the files")
    args = parser.parse_args()

    began = time.perf_counter()
    spark = session(args.jar, args.warehouse, args.master)
    spark.sql(f"CREATE NAMESPACE IF NOT EXISTS {CATALOG}.{NAMESPACE}")
    ready = time.perf_counter()
    if args.what == "sample":
        frame = sample_frame(spark, args.rows, args.rows_per_partition)
    else:
        frame = spark.read.schema(args.schema).json(args.folder)
    frame.writeTo(f"{CATALOG}.{NAMESPACE}.{args.table}").using("iceberg").create()
    done = time.perf_counter()
    print(json.dumps({"session_s": ready - began, "write_s": done - ready,
                      "spark": spark.version}), flush=True)
    spark.stop()


if __name__ == "__main__":
    main()
