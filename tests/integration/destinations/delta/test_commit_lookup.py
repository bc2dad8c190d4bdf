"""How the Delta destination reads a checkpoint's txn version that is already taken.

On a run's first attempt nothing of the run can be in the table, so a taken
version means the metadata store went back in time: an error, never "already
committed".  On a resumed attempt it means an earlier attempt committed the
checkpoint, even when the history no longer lists that commit, unless the
lane's commit belongs to another run.
"""

from __future__ import annotations

import threading
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pyarrow as pa
import pytest

from headwater.destinations._base import CommitMarker
from headwater.destinations.delta import DeltaDestination, _delta_rs
from headwater.errors import StoreBehindTableError
from headwater.plan import TableLayout
from headwater.sync_modes import DestinationSyncMode

pytestmark = pytest.mark.spark

SCHEMA = pa.schema([pa.field("id", pa.int64())])
LANE = "headwater/store/conn/users/0"


def marker(run_id: str, index: int, attempt: int) -> CommitMarker:
    return CommitMarker(app_id=LANE, version=index, run_id=run_id, stream="users",
                        checkpoint_index=index, attempt=attempt)


def find(spark: Any, destination: DeltaDestination, mark: CommitMarker) -> Any:
    plan = SimpleNamespace(stream=SimpleNamespace(name="users"))
    return destination.find_commit(spark, plan, mark)  # type: ignore[arg-type]


def test_a_taken_txn_version(spark: Any, tmp_path: Path) -> None:
    destination = DeltaDestination({"path": str(tmp_path)})
    folder = str(tmp_path / "users")
    _delta_rs.create_table(folder, SCHEMA, {})
    # Run "older" committed checkpoint 5 on lane 0, tagged.
    _delta_rs.commit_files(folder, [], mode="append", app_id=LANE, version=5,
                           tag=marker("older", 5, 1).tag)

    # A new run given index 5 again: the store is behind, whatever the attempt.
    with pytest.raises(StoreBehindTableError, match="metadata store is behind the table") as e:
        find(spark, destination, marker("new", 5, 1))
    assert folder in str(e.value) and LANE in str(e.value) and "run older" in str(e.value)
    assert "headwater state realign" in str(e.value)
    with pytest.raises(StoreBehindTableError):
        find(spark, destination, marker("new", 5, 2))
    # The run that committed it finds its commit.
    found = find(spark, destination, marker("older", 5, 2))
    assert found is not None and found.already_committed and found.version == 1

    # Checkpoint 7 committed with no tag left in the history (log cleaned up): a resumed
    # attempt counts it committed; a first attempt cannot have committed it.
    _delta_rs.commit_files(folder, [], mode="append", app_id=LANE, version=7, tag="{}")
    resumed = find(spark, destination, marker("run", 7, 2))
    assert resumed is not None and resumed.already_committed and resumed.rows == 0
    with pytest.raises(StoreBehindTableError):
        find(spark, destination, marker("run", 7, 1))
    # Not taken: nothing found, the checkpoint is written.
    assert find(spark, destination, marker("run", 8, 2)) is None


def test_a_resumed_commit_through_spark_s_writer_takes_the_earlier_one(
        spark: Any, tmp_path: Path) -> None:
    """Spark's writer skips a txn version the table holds and runs no job: a resumed
    attempt handed such a checkpoint (its caller's lookup missed it) must answer with
    the earlier commit, not wait for the counts of a job that never ran."""
    destination = DeltaDestination({"path": str(tmp_path), "writer": "spark"})
    plan = SimpleNamespace(stream=SimpleNamespace(
        name="users", destination_sync_mode=DestinationSyncMode.APPEND,
        table_layout=TableLayout()), checkpoints=[SimpleNamespace(index=3)])
    checkpoint = SimpleNamespace(index=3)
    destination.prepare(spark, plan, SCHEMA)  # type: ignore[arg-type]
    rows = _rows_of(spark, str(tmp_path / "users"), 2)
    first = destination.commit(spark, plan, checkpoint, rows,  # type: ignore[arg-type]
                               marker("run", 3, 1))
    assert (first.rows, first.already_committed) == (2, False)

    answers: list[Any] = []
    resumed = threading.Thread(target=lambda: answers.append(destination.commit(
        spark, plan, checkpoint, rows, marker("run", 3, 2))), daemon=True)  # type: ignore[arg-type]
    resumed.start()
    resumed.join(300)  # a guard against a hang, not a measurement
    assert answers, "the resumed commit waited for counts of a write Delta skipped"
    again = answers[0]
    assert again.already_committed and again.version == first.version and again.rows == 2
    assert spark.read.format("delta").load(str(tmp_path / "users")).count() == 2


def _rows_of(spark: Any, location: str, count: int) -> Any:
    """``count`` rows in the table's columns: ids from 1, a value in each metadata column."""
    from pyspark.sql import functions as F
    from pyspark.sql.types import StringType, TimestampType

    def column(field: Any) -> Any:
        if field.name == "id":
            return F.col("id")
        if isinstance(field.dataType, StringType):
            return F.lit("x")
        if isinstance(field.dataType, TimestampType):
            return F.current_timestamp()
        return F.lit(None).cast(field.dataType)

    table = spark.read.format("delta").load(location)
    return spark.range(1, count + 1).select(*[column(f).alias(f.name) for f in table.schema])
