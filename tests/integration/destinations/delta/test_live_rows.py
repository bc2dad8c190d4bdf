"""The history commit's reader of a Delta table (``_live_rows.py``) against Delta's own reader.

``live_rows`` reads the files a replay of the log finds live at a version with Spark's
Parquet reader and leaves out the rows their deletion vectors delete.  It is a second
reader, so it is used only as far as this test holds it to Delta's: at every version of a
table that Spark's own writes gave deletion vectors (``DELETE`` and ``MERGE``, a file's
vector extended, a checkpoint of the log, a column added, a file removed whole), the same
rows, each at the same file and position (the positions are what the own commit's vectors
are made of).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from headwater.destinations._table_files._store import TableFolder
from headwater.destinations.delta import _live_rows
from headwater.destinations.delta._live_files import live_files
from headwater.destinations.delta._live_rows import FILE_COLUMN, live_rows, with_places

pytestmark = pytest.mark.spark


def _versions(spark: Any, table: str) -> None:
    """Versions 1 to 4 of ``table``, each by one of Spark's writes."""
    spark.sql(f"INSERT INTO delta.`{table}` SELECT /*+ REPARTITION(3) */ id, concat('n', id), "
              "timestamp_seconds(1700000000 + id), CAST(id / 7 AS DECIMAL(10, 2)) "
              "FROM range(900)")
    spark.sql(f"DELETE FROM delta.`{table}` WHERE id % 7 = 0")
    spark.sql("SELECT id, 'late' AS name, NULL AS at, CAST(NULL AS DECIMAL(10, 2)) AS amount, "
              "concat('x', id) AS extra FROM range(900, 950)").selectExpr(
        "id", "name", "CAST(at AS TIMESTAMP) AS at", "amount", "extra").write.format(
        "delta").mode("append").option("mergeSchema", "true").save(table)
    spark.sql(f"MERGE INTO delta.`{table}` t USING (SELECT id, id * 3 AS n FROM "
              "range(950) WHERE id % 5 = 0 OR id >= 900) s ON t.id = s.id "
              "WHEN MATCHED AND (t.id >= 900 OR t.id % 11 = 0) THEN DELETE "
              "WHEN MATCHED THEN UPDATE SET name = concat('m', s.n)")


#: The versions compared: no vector yet, the first vectors, a column added (its old files
#: read with it null), and the MERGE's (vectors extended, new files, a file removed whole).
COMPARED = (1, 2, 3, 4)


def test_live_rows_read_every_version_as_delta_reads_it(spark: Any, tmp_path: Path) -> None:
    from deltalake import DeltaTable
    from pyspark.sql.types import StructType

    table = str(tmp_path / "t")
    spark.sql(f"CREATE TABLE delta.`{table}` (id BIGINT, name STRING, at TIMESTAMP, "
              "amount DECIMAL(10, 2)) USING delta TBLPROPERTIES ("
              "'delta.enableDeletionVectors' = 'true', 'delta.checkpointInterval' = '2')")
    _versions(spark, table)
    folder = TableFolder(table)
    assert DeltaTable(table).version() == COMPARED[-1]
    assert (tmp_path / "t" / "_delta_log" / f"{4:020d}.checkpoint.parquet").exists()
    with_vectors = 0
    for version in COMPARED:
        live = live_files(folder, version)
        schema = StructType.fromJson(
            json.loads(DeltaTable(table, version=version).schema().to_json()))
        ours = live_rows(spark, folder, table, live, schema)
        assert ours is not None, version
        theirs = with_places(spark.read.format("delta").option("versionAsOf", version)
                             .load(table))
        assert ours.columns == theirs.columns, version
        named = [*schema.names, _live_rows.ROW_COLUMN]
        expected = _rows(theirs, named)
        assert _rows(ours, named) == expected, version
        if version == COMPARED[-1]:  # the late rows' file is gone whole
            assert not any(r[1] == "late" for r in expected)
        if any(add.get("deletionVector") for add in live.adds.values()):
            with_vectors += 1
            stored = sum(int(_records(add)) for add in live.adds.values())
            assert len(expected) < stored, version  # rows were left out: the vectors applied
    assert with_vectors == 3


def test_more_deleted_rows_than_a_broadcast_holds_are_left_to_delta(
        spark: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from deltalake import DeltaTable
    from pyspark.sql.types import StructType

    table = str(tmp_path / "t")
    spark.range(20).selectExpr("id", "CAST(id AS STRING) AS name").write.format("delta") \
        .option("delta.enableDeletionVectors", "true").save(table)
    spark.sql(f"DELETE FROM delta.`{table}` WHERE id % 2 = 0")
    folder = TableFolder(table)
    schema = StructType.fromJson(json.loads(DeltaTable(table).schema().to_json()))
    live = live_files(folder, DeltaTable(table).version())
    monkeypatch.setattr(_live_rows, "MAX_DELETED_ROWS", 9)
    assert live_rows(spark, folder, table, live, schema) is None
    monkeypatch.setattr(_live_rows, "MAX_DELETED_ROWS", 10)
    read = live_rows(spark, folder, table, live, schema)
    assert read is not None
    assert sorted(r.id for r in read.collect()) == list(range(1, 20, 2))


def _rows(frame: Any, named: list[str]) -> list[tuple[Any, ...]]:
    """``frame``'s rows (``named`` columns and the file's name), in order."""
    from pyspark.sql import functions as F

    return sorted(tuple(r) for r in frame.select(
        *named, F.substring_index(F.col(FILE_COLUMN), "/", -1)).collect())


def _records(add: dict[str, Any]) -> int:
    return int(json.loads(add["stats"])["numRecords"])
