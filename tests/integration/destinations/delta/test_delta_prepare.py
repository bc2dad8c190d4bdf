"""A table Headwater creates keeps file statistics on the columns readers filter on only."""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pyarrow as pa
import pytest

from headwater.destinations.delta import DeltaDestination, _delta_rs
from headwater.destinations.delta._sql import table_properties
from headwater.destinations.delta._stats import STATS_PROPERTY
from headwater.plan import TableLayout

pytestmark = pytest.mark.spark


def _plan(name: str) -> Any:
    """``prepare`` reads only the stream's name, mode and table layout from its plan."""
    return SimpleNamespace(stream=SimpleNamespace(name=name, destination_sync_mode="append",
                                                  table_layout=TableLayout()))


def _file_stats(table: Path) -> list[dict[str, Any]]:
    stats = []
    for log in sorted((table / "_delta_log").glob("*.json")):
        for line in log.read_text().splitlines():
            action = json.loads(line)
            if "add" in action and action["add"].get("stats"):
                stats.append(json.loads(action["add"]["stats"]))
    return stats


@pytest.mark.parametrize("writer", ["spark", "auto"])
def test_statistics_columns_are_set_at_creation_and_follow_new_columns(
        spark: Any, tmp_path: Path, writer: str) -> None:
    """Whichever library creates the table (Spark, or delta-rs for task-written files)."""
    destination = DeltaDestination({"path": str(tmp_path / "lake"), "writer": writer})
    first = pa.schema([("id", pa.int64()), ("active", pa.bool_()),
                       ("tags", pa.list_(pa.string()))])
    destination.prepare(spark, _plan("items"), first)
    location = destination.table_location("items")
    listed = (table_properties(spark, location) or {})[STATS_PROPERTY]
    assert listed == "`_hw_extracted_at`,`_hw_run_id`,`_hw_checkpoint`,`id`"

    second = pa.schema([*first, pa.field("score", pa.float64())])
    destination.prepare(spark, _plan("items"), second)
    assert (table_properties(spark, location) or {})[STATS_PROPERTY] == listed + ",`score`"

    spark.sql(f"INSERT INTO delta.`{location}` (_hw_raw_id, _hw_extracted_at, _hw_run_id, "
              "_hw_partition_id, _hw_checkpoint, id, active, score) VALUES ('p-0', "
              "TIMESTAMP'2024-01-01 00:00:00', 'run', 'p', 3, 7, true, 1.5)")
    [stats] = _file_stats(Path(location))
    assert stats["minValues"] == {"_hw_extracted_at": stats["minValues"]["_hw_extracted_at"],
                                  "_hw_run_id": "run", "_hw_checkpoint": 3, "id": 7,
                                  "score": 1.5}
    assert "_hw_raw_id" not in stats["nullCount"]


def test_file_writer_takes_the_statistics_columns_prepare_read(
        spark: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """One log read per stream where the tasks write the files: prepare's, not a second one."""
    loads: list[str] = []
    read_table = _delta_rs.table_state

    def counted(folder: str) -> _delta_rs.TableState | None:
        loads.append(folder)
        return read_table(folder)

    monkeypatch.setattr(_delta_rs, "table_state", counted)
    destination = DeltaDestination({"path": str(tmp_path / "lake")})
    first = pa.schema([("id", pa.int64())])
    listed = ["_hw_extracted_at", "_hw_run_id", "_hw_checkpoint", "id"]
    for _ in range(2):  # the run that creates the table, then one that finds it
        destination.prepare(spark, _plan("items"), first)
        loads.clear()
        writer = destination.file_writer(spark, _plan("items"))
        assert writer is not None and list(writer.stats_columns) == listed
        assert loads == []

    # Where prepare did not run on this object, or changed the table through Spark
    # (a new column, a longer statistics list), the log is read again.
    elsewhere = DeltaDestination({"path": str(tmp_path / "lake")}).file_writer(
        spark, _plan("items"))
    assert elsewhere is not None and list(elsewhere.stats_columns) == listed
    assert len(loads) == 1
    destination.prepare(spark, _plan("items"), pa.schema([*first, ("score", pa.float64())]))
    loads.clear()
    writer = destination.file_writer(spark, _plan("items"))
    assert writer is not None and list(writer.stats_columns) == [*listed, "score"]
    assert len(loads) == 1
