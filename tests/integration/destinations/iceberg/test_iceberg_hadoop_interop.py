"""Our Hadoop-layout catalog and Spark's ``HadoopCatalog`` (Iceberg 1.12, Spark 4.1) on one folder.

The point of the layout: a table our catalog wrote is a table Spark's and
Trino's Hadoop catalogs read from the folder, and the other way round, and
commits from both sides follow one version chain.  Spark here is Spark 4.1.4
with ``iceberg-spark-runtime-4.1_2.13:1.12.0`` in a venv of its own (no Iceberg
runtime loads on the project's Spark 4.2), run as a separate process:
``spark41/hadoop_side.py``, through ``_spark41.py`` (which says how it is set up).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from pyiceberg.catalog import Catalog, load_catalog
from pyiceberg.table import Table

from tests.integration.destinations.iceberg._spark41 import RUNTIME_JAR, run_spark41

pytestmark = pytest.mark.cluster  # Spark 4.1 in a process of its own

SCHEMA = pa.schema([pa.field("id", pa.int64()), pa.field("name", pa.string()),
                    pa.field("ts", pa.timestamp("us", tz="UTC")),
                    pa.field("amount", pa.float64()), pa.field("day", pa.date32())])


def batch(*rows: tuple[int, str, int, float, int]) -> pa.Table:
    """Rows as ``hadoop_side.py`` prints them: ts in epoch microseconds, day in epoch days."""
    ids, names, micros, amounts, days = (list(column) for column in zip(*rows, strict=True))
    return pa.table([pa.array(ids, pa.int64()), pa.array(names),
                     pa.array(micros, pa.int64()).cast(pa.timestamp("us", tz="UTC")),
                     pa.array(amounts, pa.float64()),
                     pa.array(days, pa.int32()).cast(pa.date32())], schema=SCHEMA)


def rows_of(table: Table) -> list[list[Any]]:
    read = table.refresh().scan().to_arrow().sort_by("id")
    return [list(row) for row in zip(
        read["id"].to_pylist(), read["name"].to_pylist(),
        read["ts"].cast(pa.int64()).to_pylist(), read["amount"].to_pylist(),
        read["day"].cast(pa.int32()).to_pylist(), strict=True)]


def ours(warehouse: Path) -> Catalog:
    return load_catalog("ours", **{
        "py-catalog-impl": "headwater.destinations.iceberg._hadoop.HadoopCatalog",
        "warehouse": warehouse.as_uri()})


def spark_side(warehouse: Path, mode: str, tmp_path: Path) -> dict[str, Any]:
    found, stderr = run_spark41("hadoop_side.py", [str(RUNTIME_JAR), warehouse.as_uri(), mode],
                                tmp_path)
    # Java read every version-hint.text we wrote (a stale Hadoop checksum beside it
    # would make it fall back to listing the metadata folder, with this warning).
    assert "Error reading version hint file" not in stderr, stderr[-4000:]
    return found


def versions(table_folder: Path) -> tuple[list[int], str]:
    metadata = table_folder / "metadata"
    found = sorted(int(p.name[1:].split(".")[0]) for p in metadata.glob("v*.metadata.json"))
    return found, (metadata / "version-hint.text").read_text().strip()


def test_spark_and_our_catalog_read_and_commit_each_other_s_tables(tmp_path: Path) -> None:
    warehouse = tmp_path / "warehouse"
    catalog = ours(warehouse)
    catalog.create_namespace("ns")
    table = catalog.create_table("ns.ours", schema=SCHEMA)
    table.append(batch((1, "a", 1_767_323_045_123_456, 1.5, 20_455),
                       (2, "b", -1, -0.5, -1)))
    table.append(batch((3, "c", 0, 2.0, 0)))
    written = rows_of(table)
    assert versions(warehouse / "ns" / "ours") == ([1, 2, 3], "3")

    # Spark reads what we wrote, writes a table of its own, and commits onto ours.
    spark = spark_side(warehouse, "write", tmp_path)
    assert spark["ours_before"] == written
    assert versions(warehouse / "ns" / "spark_made") == ([1, 2, 3], "3")
    assert versions(warehouse / "ns" / "ours") == ([1, 2, 3, 4], "4")

    # A fresh client of ours reads both as Spark does.
    reader = ours(warehouse)
    assert sorted(reader.list_tables("ns")) == [("ns", "ours"), ("ns", "spark_made")]
    spark_made = reader.load_table("ns.spark_made")
    assert rows_of(spark_made) == spark["spark_made"]
    assert [row[0] for row in spark["spark_made"]] == [1, 2, 3]
    theirs_on_ours = reader.load_table("ns.ours")
    assert theirs_on_ours.metadata_location.endswith("/v4.metadata.json")
    assert rows_of(theirs_on_ours) == spark["ours"]
    assert [row[0] for row in spark["ours"]] == [1, 2, 3, 100]

    # We commit onto both; Spark reads our commits on its own table and on ours.
    spark_made.append(batch((4, "ours on spark's", 86_400_000_000, 4.0, 1)))
    theirs_on_ours.append(batch((101, "ours again", 172_800_000_000, 5.5, 2)))
    assert versions(warehouse / "ns" / "spark_made") == ([1, 2, 3, 4], "4")
    assert versions(warehouse / "ns" / "ours") == ([1, 2, 3, 4, 5], "5")
    again = spark_side(warehouse, "read", tmp_path)
    assert again["spark_made"] == rows_of(spark_made)
    assert [row[0] for row in again["spark_made"]] == [1, 2, 3, 4]
    assert again["ours"] == rows_of(theirs_on_ours)
    assert [row[0] for row in again["ours"]] == [1, 2, 3, 100, 101]
