"""Preparing a table Spark writes reads its log through delta-rs, and answers as Spark does.

A MERGE's table (``append_dedup``, ``history``) and every table off the task path's
allowlist are written by Spark; preparing one used to ask Spark (``DESCRIBE DETAIL`` and
a read of its schema: 0.6-2.5 s per sync) what delta-rs reads from the log in
milliseconds.  On each table shape a sync meets, what delta-rs reads from the log is what
Spark answered: the table's properties and layout, its columns' names and types (a
clustered table, whose clustering columns delta-rs does not read, is left to Spark).
"""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pyarrow as pa
import pytest
from pyspark.sql.types import StructType

from headwater.destinations.delta import DeltaDestination, _delta_rs, _sql
from headwater.destinations.delta import _destination as delta_destination
from headwater.plan import TableLayout
from headwater.sync_modes import DestinationSyncMode

pytestmark = pytest.mark.spark

DEDUP = DestinationSyncMode.APPEND_DEDUP
HISTORY = DestinationSyncMode.HISTORY
COLUMNS = pa.schema([("id", pa.int64()), ("name", pa.string()),
                     ("tags", pa.struct([("a", pa.int64())]))])
#: A later sync's columns: one new top-level column and one new struct field.
EVOLVED = pa.schema([("id", pa.int64()), ("name", pa.string()),
                     ("tags", pa.struct([("a", pa.int64()), ("b", pa.string())])),
                     ("score", pa.float64())])

#: The table shapes: (sync mode, the layout the table is created with).
SHAPES: dict[str, tuple[DestinationSyncMode, TableLayout]] = {
    "dedup": (DEDUP, TableLayout()),
    # Deletion vectors (Headwater's history default) and properties of the stream's own.
    "history": (HISTORY, TableLayout(properties={"delta.checkpointInterval": "5",
                                                 "owner.team": "data"})),
    "partitioned-column-mapped": (DEDUP, TableLayout(
        partition_by=("name",), properties={"delta.columnMapping.mode": "name"})),
    "clustered": (DEDUP, TableLayout(cluster_by=("id",))),
}


def _plan(name: str, mode: DestinationSyncMode, layout: TableLayout) -> Any:
    """``prepare`` reads only the stream's name, mode and table layout from its plan."""
    return SimpleNamespace(stream=SimpleNamespace(name=name, destination_sync_mode=mode,
                                                  table_layout=layout))


@pytest.mark.parametrize("shape", list(SHAPES))
def test_the_log_read_by_delta_rs_answers_what_spark_answers(
        spark: Any, tmp_path: Path, shape: str) -> None:
    """What ``prepare`` takes from the log in place of Spark's answer equals it: the
    table's properties and partition columns (``DESCRIBE DETAIL``), and its columns'
    names and types (Spark's reader); a clustered table is left to Spark."""
    mode, layout = SHAPES[shape]
    destination = DeltaDestination({"path": str(tmp_path)})
    destination.prepare(spark, _plan("t", mode, layout), COLUMNS)
    location = destination.table_location("t")
    state = _delta_rs.table_state(location)
    assert state is not None
    logged = _delta_rs.table_detail(state)
    by_spark = _sql.table_detail(spark, location)
    assert by_spark is not None
    if shape == "clustered":  # its clustering columns are Spark's to name
        assert logged is None and by_spark.clustering_columns == ("id",)
        return
    assert logged == by_spark
    assert by_spark.partition_columns == layout.partition_by  # the shape is what it says
    assert set(layout.properties.items()) <= set(by_spark.properties.items())
    # Names and types, nested ones included (the log's fields also carry the metadata
    # Spark's reader drops, column mapping's: no use of ``existing`` reads it).
    read = spark.read.format("delta").load(location).schema
    assert [(f.name, f.dataType.simpleString())
            for f in StructType.fromJson(state.schema_json)] == [
        (f.name, f.dataType.simpleString()) for f in read]


def test_a_dedup_and_a_history_sync_ask_spark_nothing_of_a_local_table(
        spark: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The speed-up itself: no ``DESCRIBE DETAIL`` and no schema read through Spark for a
    table in a local folder, in ``prepare`` and before a history commit."""
    for mode in (DEDUP, HISTORY):
        DeltaDestination({"path": str(tmp_path / mode)}).prepare(
            spark, _plan("t", mode, TableLayout()), COLUMNS)

    def refused(*_: Any) -> None:
        raise AssertionError("asked Spark what the table's log says")

    monkeypatch.setattr(_sql, "table_detail", refused)
    monkeypatch.setattr(_sql, "file_count", refused)
    for mode in (DEDUP, HISTORY):
        destination = DeltaDestination({"path": str(tmp_path / mode)})
        typed = destination.prepare(spark, _plan("t", mode, TableLayout()), EVOLVED)
        assert typed.names == EVOLVED.names
        location = destination.table_location("t")
        assert delta_destination._file_count(spark, location) == 0
    spark.sql(f"INSERT INTO delta.`{location}` (_hw_raw_id, id) VALUES ('p-0', 1)")
    assert delta_destination._file_count(spark, location) == 1
