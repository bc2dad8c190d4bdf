"""Tables off the task path's allowlist are written by Spark's writer, and runs say so.

Each table here is shaped by its "owner" through Spark SQL between syncs, as a
user of the lakehouse would: column mapping, a CHECK constraint, a generated
column, deletion vectors.  The task path's files would break the first three
(NULLs, committed violations, missing generated values); Spark's writer does not.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from headwater.cli.app import app
from headwater.config import load_connection
from headwater.connectors.sample import SampleSource
from headwater.destinations.delta import _delta_rs
from headwater.destinations.delta._table_features import task_path_refusal
from headwater.engine import SyncEngine, SyncResult
from headwater.metadata_store import MetadataStore
from tests.integration._connections import connection_file

pytestmark = pytest.mark.spark

SOURCE = {"seed": 5, "users": 600, "orders": 0, "rows_per_partition": 200,
          "updates_per_generation": 30, "new_per_generation": 20}
OVERWRITE = [{"name": "users", "sync_mode": "full_refresh", "destination_sync_mode": "overwrite"}]
APPEND = [{"name": "users", "sync_mode": "incremental", "destination_sync_mode": "append",
           "cursor_field": "updated_at"}]


def sync(folder: Path, streams: list[dict[str, Any]], writer: str = "auto",
         expect: str = "succeeded", **source: Any) -> SyncResult:
    path = connection_file(folder, name="features", source={**SOURCE, **source},
                           streams=streams, writer=writer,
                           checkpoint={"partitions_per_checkpoint": 1, "concurrent_checkpoints": 2})
    connection = load_connection(path)
    result = SyncEngine(connection, MetadataStore(connection.metadata_store or "")).run()
    assert result.status == expect, result.streams[0].error
    return result


def shown_checkpoints(folder: Path, run_id: str) -> list[dict[str, Any]]:
    """The checkpoints of ``run_id`` as ``headwater runs show --json`` prints them."""
    shown = CliRunner().invoke(app, ["runs", "--store", f"sqlite:///{folder / 'meta.db'}",
                                     "show", run_id, "--json"])
    assert shown.exit_code == 0, shown.output
    checkpoints: list[dict[str, Any]] = json.loads(shown.stdout)["checkpoints"]
    assert checkpoints
    return checkpoints


def writers(folder: Path, run_id: str) -> set[tuple[str, str]]:
    return {(c["writer"], c["writer_reason"]) for c in shown_checkpoints(folder, run_id)}


def test_a_table_headwater_creates_stays_on_the_task_path(spark: Any, tmp_path: Path) -> None:
    users = tmp_path / "lake" / "users"
    first = sync(tmp_path, OVERWRITE)
    state = _delta_rs.table_state(str(users))
    assert state is not None and task_path_refusal(state.protocol) is None
    [(writer, reason)] = writers(tmp_path, first.run_id)
    assert writer == "tasks+delta-rs" and "allowlist" in reason
    # And one Spark created (writer: spark) qualifies as well, once written by the tasks.
    spark_lake = tmp_path / "spark"
    spark_lake.mkdir()
    sync(spark_lake, OVERWRITE, writer="spark")
    created = _delta_rs.table_state(str(spark_lake / "lake" / "users"))
    assert created is not None and task_path_refusal(created.protocol) is None
    again = sync(spark_lake, OVERWRITE, generation=1)
    assert {w for w, _ in writers(spark_lake, again.run_id)} == {"tasks+delta-rs"}


def test_a_column_mapped_table_gets_a_new_column_through_spark(spark: Any,
                                                               tmp_path: Path) -> None:
    """The issue's case: the new column's values are read back, not NULL."""
    users = tmp_path / "lake" / "users"
    sync(tmp_path, OVERWRITE, writer="spark")
    spark.sql(f"ALTER TABLE delta.`{users}` SET TBLPROPERTIES ('delta.minReaderVersion' = '2', "
              "'delta.minWriterVersion' = '5', 'delta.columnMapping.mode' = 'name')")
    again = sync(tmp_path, OVERWRITE, schema_version=2, generation=1)

    rows = spark.read.format("delta").load(str(users))
    truth = SampleSource({**SOURCE, "schema_version": 2, "generation": 1}).expected_rows("users")
    assert rows.count() == truth.num_rows
    tiers = {r["id"]: r["loyalty_tier"] for r in rows.select("id", "loyalty_tier").collect()}
    assert tiers == dict(zip(truth.column("id").to_pylist(),
                             truth.column("loyalty_tier").to_pylist(), strict=True))
    assert any(tiers.values())
    assert writers(tmp_path, again.run_id) == {
        ("spark", "table uses column mapping (delta.columnMapping.mode=name)")}


def test_rows_violating_a_check_constraint_fail_the_sync_as_spark_s_writer_does(
        spark: Any, tmp_path: Path) -> None:
    users = tmp_path / "lake" / "users"
    sync(tmp_path, APPEND)
    spark.sql(f"ALTER TABLE delta.`{users}` ADD CONSTRAINT known_ids "
              f"CHECK (id < {SOURCE['users']})")
    # Generation 1 creates ids 600..619: each checkpoint holding one is refused whole.
    failed = sync(tmp_path, APPEND, expect="failed", generation=1)
    assert "known_ids" in (failed.streams[0].error or "")
    ids = [r["id"] for r in spark.read.format("delta").load(str(users)).select("id").collect()]
    assert max(ids) < SOURCE["users"]


def test_a_table_with_a_generated_column_is_written_by_spark(spark: Any,
                                                             tmp_path: Path) -> None:
    template = tmp_path / "template"
    template.mkdir()
    sync(template, OVERWRITE)
    columns = ", ".join(f"`{f.name}` {f.dataType.simpleString()}" for f in
                        spark.read.format("delta").load(str(template / "lake" / "users")).schema)
    users = tmp_path / "lake" / "users"
    spark.sql(f"CREATE TABLE delta.`{users}` ({columns}, "
              "id_bucket BIGINT GENERATED ALWAYS AS (id % 10)) USING delta")
    synced = sync(tmp_path, OVERWRITE)

    rows = spark.read.format("delta").load(str(users)).select("id", "id_bucket").collect()
    assert len(rows) == SOURCE["users"]
    assert all(r["id_bucket"] == r["id"] % 10 for r in rows)
    [(writer, reason)] = writers(tmp_path, synced.run_id)
    assert writer == "spark" and "generated" in reason


def test_deletion_vectors_stay_on_the_task_path_and_read_as_spark_s(spark: Any,
                                                                    tmp_path: Path) -> None:
    """New files need no deletion vector; an overwrite removes files that carry one."""
    users = tmp_path / "lake" / "users"
    sync(tmp_path, OVERWRITE, writer="spark")
    spark.sql(f"ALTER TABLE delta.`{users}` SET TBLPROPERTIES "
              "('delta.enableDeletionVectors' = 'true')")
    spark.sql(f"DELETE FROM delta.`{users}` WHERE id % 7 = 0")
    assert spark.sql(f"DESCRIBE DETAIL delta.`{users}`").first()["numFiles"] > 0
    added = [json.loads(line)["add"] for log in sorted((users / "_delta_log").glob("*.json"))
             for line in log.read_text().splitlines() if '"add"' in line]
    assert any(a.get("deletionVector") for a in added)  # the DELETE wrote vectors

    again = sync(tmp_path, OVERWRITE, generation=1)
    truth = SampleSource({**SOURCE, "generation": 1}).expected_rows("users")
    ids = sorted(r["id"] for r in spark.read.format("delta").load(str(users)).collect())
    assert ids == sorted(truth.column("id").to_pylist())
    assert {w for w, _ in writers(tmp_path, again.run_id)} == {"tasks+delta-rs"}
