"""Spark 4.1 + Iceberg's Spark runtime on a Hadoop catalog: the Java side of the interop test.

Run by ``test_iceberg_hadoop_interop.py`` in the Spark 4.1 venv
(``bench/setup-alternatives spark41-iceberg``: PySpark 4.1.4 only), never in the
project's venv, where no Iceberg runtime loads.  Usage::

    python hadoop_side.py JAR WAREHOUSE write|read

``write`` reads ``ns.ours`` (the table our catalog wrote), then creates
``ns.spark_made`` with two inserts and inserts one row into ``ns.ours``;
``read`` only reads.  Prints one JSON line: each table's rows, ordered by id,
as ``[id, name, ts in epoch microseconds, amount, day in epoch days]``.
"""

from __future__ import annotations

import json
import sys
from typing import Any

# This script's folder is on the path (it is run as a script, beside read_tables.py).
from read_tables import CATALOG
from read_tables import session as iceberg_session

OURS = f"{CATALOG}.ns.ours"
SPARK_MADE = f"{CATALOG}.ns.spark_made"
ROW = "({id}, '{name}', TIMESTAMP '{ts}', {amount}, DATE '{day}')"


def session(jar: str, warehouse: str) -> Any:
    return iceberg_session(jar, {"type": "hadoop", "warehouse": warehouse})


def rows(spark: Any, table: str) -> list[list[Any]]:
    return [list(row) for row in spark.sql(
        f"SELECT id, name, unix_micros(ts), amount, unix_date(day) FROM {table} ORDER BY id"
    ).collect()]


def insert(spark: Any, table: str, *values: dict[str, Any]) -> None:
    spark.sql(f"INSERT INTO {table} VALUES " + ", ".join(ROW.format(**v) for v in values))


def main() -> None:
    jar, warehouse, mode = sys.argv[1:4]
    spark = session(jar, warehouse)
    found: dict[str, Any] = {"spark": spark.version}
    if mode == "write":
        found["ours_before"] = rows(spark, OURS)
        spark.sql(f"CREATE TABLE {SPARK_MADE} (id BIGINT, name STRING, ts TIMESTAMP, "
                  "amount DOUBLE, day DATE) USING iceberg")
        insert(spark, SPARK_MADE,
               {"id": 1, "name": "s1", "ts": "2026-01-02 03:04:05.123456", "amount": 1.5,
                "day": "2026-01-02"},
               {"id": 2, "name": "s2", "ts": "1999-12-31 23:59:59", "amount": -2.25,
                "day": "1999-12-31"})
        insert(spark, SPARK_MADE, {"id": 3, "name": "s3", "ts": "2030-06-30 12:00:00.5",
                                   "amount": 0.0, "day": "2030-06-30"})
        insert(spark, OURS, {"id": 100, "name": "from spark", "ts": "2026-11-26 02:00:00",
                             "amount": 100.125, "day": "2026-11-26"})
    found["ours"] = rows(spark, OURS)
    found["spark_made"] = rows(spark, SPARK_MADE)
    print(json.dumps(found), flush=True)
    spark.stop()


if __name__ == "__main__":
    main()
