"""Spark 4.1 + Iceberg's Spark runtime reads tables Headwater wrote: the Spark side of
``test_iceberg_read_by_spark.py``.

Run in the Spark 4.1 venv (``bench/setup-alternatives spark41-iceberg``), never in the
project's venv, where no Iceberg runtime loads.  Usage::

    python read_tables.py REQUEST_JSON

REQUEST_JSON: ``{"jar": ..., "jars": [more jars: JDBC drivers]}``.  The session starts,
then the reads come as one JSON line on standard input (so the process can start while
the tables are still being written): ``[{"catalog": {"type": "hadoop", "warehouse":
"file://..."} or {"type": "rest", "uri": "http://..."} or {"type": "jdbc", "uri":
"jdbc:sqlite:...", ...}, "name": the catalog's name, "tables": ["namespace.table", ...]},
...]``.  A JDBC catalog's tables are registered under the
writer's catalog name (``headwater``), so two JDBC catalogs take the same name: each read
runs in a session of its own (``newSession``: its own catalogs, one JVM for all, since a
Spark start costs tens of seconds here).

Prints one JSON line: ``{"spark": version, "reads": [{"tables": {name: {"columns": [...],
"rows": [[...], ...]}}}, ...]}`` in the order of ``reads``, each value in a form both sides
can produce exactly: timestamps as epoch microseconds, dates as epoch days, decimals as
text, nested values as JSON text; rows in no particular order (the test compares them as
multisets).
"""

from __future__ import annotations

import json
import sys
from typing import Any

CATALOG = "ice"


def session(jar: str, catalog: dict[str, str], name: str = CATALOG) -> Any:
    from pyspark.sql import SparkSession

    builder = (SparkSession.builder.master("local[1]").appName("headwater-read-by-spark41")
               .config("spark.jars", jar)
               .config("spark.ui.enabled", "false")
               .config("spark.ui.showConsoleProgress", "false")
               .config("spark.sql.session.timeZone", "UTC")
               .config("spark.sql.extensions",
                       "org.apache.iceberg.spark.extensions.IcebergSparkSessionExtensions")
               .config(f"spark.sql.catalog.{name}", "org.apache.iceberg.spark.SparkCatalog"))
    for key, value in catalog.items():
        builder = builder.config(f"spark.sql.catalog.{name}.{key}", value)
    return builder.getOrCreate()


def comparable(field: Any) -> Any:
    """The column expression that prints ``field`` as both sides can (module docstring)."""
    from pyspark.sql import functions as F
    from pyspark.sql import types as T

    column = F.col(f"`{field.name}`")
    kind = field.dataType
    if isinstance(kind, (T.TimestampType, T.TimestampNTZType)):
        return F.unix_micros(column.cast(T.TimestampType())).alias(field.name)
    if isinstance(kind, T.DateType):
        return F.unix_date(column).alias(field.name)
    if isinstance(kind, T.DecimalType):
        return column.cast("string").alias(field.name)
    if isinstance(kind, (T.StructType, T.ArrayType, T.MapType)):
        return F.to_json(column).alias(field.name)
    if isinstance(kind, T.BinaryType):
        return F.base64(column).alias(field.name)
    return column


def main() -> None:
    request = json.loads(sys.argv[1])
    base = session(",".join([request["jar"], *request.get("jars", [])]), {}, CATALOG)
    found: dict[str, Any] = {"spark": base.version, "reads": []}
    base.range(1).collect()  # the first job's start-up too, before the tables are ready
    for read in json.loads(sys.stdin.readline()):
        spark, catalog = base.newSession(), read.get("name") or CATALOG
        spark.conf.set(f"spark.sql.catalog.{catalog}", "org.apache.iceberg.spark.SparkCatalog")
        for key, value in read["catalog"].items():
            spark.conf.set(f"spark.sql.catalog.{catalog}.{key}", value)
        tables: dict[str, Any] = {}
        for name in read["tables"]:
            frame = spark.table(f"{catalog}.{name}")
            frame = frame.select(*(comparable(f) for f in frame.schema.fields))
            tables[name] = {"columns": frame.columns,
                            "rows": [list(row) for row in frame.collect()]}
        found["reads"].append({"tables": tables})
    print(json.dumps(found), flush=True)
    base.stop()


if __name__ == "__main__":
    main()
