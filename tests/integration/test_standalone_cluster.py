"""A sync on a real multi-process Spark cluster lands the same tables as on local Spark.

``headwater sync --master spark://...`` runs its driver in the CLI process
and its tasks in an executor JVM that the standalone worker launches: the
partitions, the readers and the task function travel pickled between
processes, and the executors fetch Delta's jars from the driver.  The tables
must equal the source, and the worker's work dir must show that the
executors, not the driver, did the reading.

Both destinations run here, on the cluster the whole test run shares (``cluster``) (each
test's application is told apart by its name): Delta, and Iceberg, whose
tasks write the table's Parquet files on the executors into the warehouse
folder (an absolute path, shared because the worker runs on this machine)
and whose driver commits them through PyIceberg.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

from tests.integration._cli import (
    assert_each_checkpoint_committed_once,
    assert_table_equals_source,
    expected_rows,
    hadoop_table,
    store,
    sync,
    table_location,
    write_connection,
)
from tests.integration._cluster import StandaloneCluster
from tests.integration._connections import connection_file

pytestmark = [pytest.mark.cluster, pytest.mark.spark]

NAME = "on-cluster"
SOURCE: dict[str, Any] = {
    "seed": 5,
    "users": 5_000,
    "orders": 6_000,
    "rows_per_partition": 1_000,
    "generation": 2,
}
STREAMS: list[dict[str, Any]] = [
    {
        "name": "users",
        "sync_mode": "incremental",
        "destination_sync_mode": "append_dedup",
        "cursor_field": "updated_at",
        "primary_key": ["id"],
    },
    {"name": "orders", "sync_mode": "full_refresh", "destination_sync_mode": "overwrite"},
]
#: What an executor logs (at INFO, its default) when it starts a mapInArrow task's Python.
PYTHON_TASK_STARTED = re.compile(r"MapInBatchEvaluator.*Starting Python task execution")


def executor_logs(cluster: StandaloneCluster, app_name: str) -> list[Path]:
    """The stderr of every executor the worker launched for the application ``app_name``."""
    executors = cluster.executor_dirs(app_name)
    assert executors, f"{app_name} did not run on {cluster.master_url}"
    return [d / "stderr" for d in executors if (d / "stderr").is_file()]


def python_tasks_started(logs: list[Path]) -> int:
    """How many mapInArrow Python tasks the executors behind ``logs`` started."""
    return sum(len(PYTHON_TASK_STARTED.findall(log.read_text(errors="replace")))
               for log in logs)


def test_sync_on_a_standalone_cluster(
    spark: Any, tmp_path: Path, cluster: StandaloneCluster
) -> None:
    connection = write_connection(
        tmp_path,
        name=NAME,
        source=SOURCE,
        streams=STREAMS,
        checkpoint={"partitions_per_checkpoint": 3, "concurrent_checkpoints": 2},
    )

    result = sync(
        tmp_path, connection, "--master", cluster.master_url, env={"SPARK_LOCAL_IP": "127.0.0.1"}
    )

    assert result.exit_code == 0, result.describe()
    document = result.document
    assert document is not None, result.describe()
    assert document["status"] == "succeeded"
    written = {s["name"]: s["records_written"] for s in document["streams"]}
    for stream in ("users", "orders"):
        location = table_location(tmp_path, stream)
        assert_table_equals_source(spark, location, SOURCE, stream)
        assert_each_checkpoint_committed_once(spark, location, tmp_path, document["run_id"], stream)
    assert written["orders"] == 6_000 + 2 * 10  # two generations add ten orders each

    # The application ran on this cluster, in an executor the worker launched ...
    logs = executor_logs(cluster, f"headwater-{NAME}")
    assert logs, f"no executor ran in the worker's work dir {cluster.work_dir}"
    # ... which read every partition (one mapInArrow Python task each) ...
    started = python_tasks_started(logs)
    assert started >= planned_partitions(tmp_path, document["run_id"]), logs
    # ... with Delta's jars, which it fetched from the driver.
    assert any(any(log.parent.glob("io.delta_delta-spark_*.jar")) for log in logs)


def planned_partitions(tmp_path: Path, run_id: str) -> int:
    run = store(tmp_path).get_run(run_id)
    assert run is not None
    return sum(len(c["partitions"]) for s in run.plan["streams"] for c in s["checkpoints"])


# --------------------------------------------------------------------------- Iceberg

ICEBERG_NAME = "iceberg-on-cluster"
ICEBERG_SOURCE: dict[str, Any] = {
    "seed": 7,
    "users": 3_000,
    "orders": 0,
    "rows_per_partition": 500,
    "updates_per_generation": 200,
    "new_per_generation": 150,
}
ICEBERG_STREAMS: list[dict[str, Any]] = [
    {
        "name": "users",
        "sync_mode": "incremental",
        "destination_sync_mode": "append",
        "cursor_field": "updated_at",
    }
]


def test_iceberg_incremental_append_on_a_standalone_cluster(
    tmp_path: Path, cluster: StandaloneCluster
) -> None:
    """Two incremental syncs through the CLI on the cluster: every row version once, one
    snapshot per checkpoint carrying its marker, every partition read by an executor."""
    warehouse = tmp_path / "warehouse"
    runs = []
    for generation in (0, 1):
        connection = connection_file(
            tmp_path,
            name=ICEBERG_NAME,
            source={**ICEBERG_SOURCE, "generation": generation},
            streams=ICEBERG_STREAMS,
            store_file=None,
            checkpoint={"partitions_per_checkpoint": 2, "concurrent_checkpoints": 2},
            destination={"type": "iceberg", "config": {"warehouse": "warehouse"}},
        )
        result = sync(tmp_path, connection, "--master", cluster.master_url,
                      env={"SPARK_LOCAL_IP": "127.0.0.1"})
        assert result.exit_code == 0, result.describe()
        assert result.document is not None and result.document["status"] == "succeeded"
        runs.append(result.document)
    first, second = runs
    assert first["streams"][0]["records_written"] == 3_000
    assert second["streams"][0]["records_written"] == 200 + 150

    table = hadoop_table(warehouse / "headwater" / "users")
    # Every row version once: the world at generation 0, plus what generation 1 changed.
    before = expected_rows({**ICEBERG_SOURCE, "generation": 0}, "users")
    after = expected_rows({**ICEBERG_SOURCE, "generation": 1}, "users")
    columns = after.column_names
    wanted = _rows(before, columns) + (_rows(after, columns) - _rows(before, columns))
    landed = _rows(as_micros(table.scan().to_arrow(), columns), columns)
    assert landed == wanted, (
        f"missing {sum((wanted - landed).values())}, extra {sum((landed - wanted).values())}")

    # One snapshot per planned checkpoint of each run, each with its marker.
    tags: Counter[tuple[str, int]] = Counter()
    for snapshot in table.snapshots():
        assert snapshot.summary is not None
        summary = snapshot.summary.additional_properties
        assert {"headwater.app_id", "headwater.version", "headwater.tag"} <= set(summary)
        tag = json.loads(summary["headwater.tag"])["headwater"]
        assert int(summary["headwater.version"]) == tag["checkpoint"]
        tags[(tag["run_id"], tag["checkpoint"])] += 1
    planned = Counter((run["run_id"], index) for run in runs
                      for index in planned_checkpoints(tmp_path, run["run_id"]))
    assert tags == planned

    # The executors the worker launched read every partition and wrote the files.
    logs = executor_logs(cluster, f"headwater-{ICEBERG_NAME}")
    assert logs, f"no executor ran in the worker's work dir {cluster.work_dir}"
    partitions = sum(planned_partitions(tmp_path, run["run_id"]) for run in runs)
    assert python_tasks_started(logs) >= partitions, logs


def as_micros(table: pa.Table, columns: list[str]) -> pa.Table:
    """``columns`` of ``table``, timestamps as microseconds (as ``expected_rows`` gives them)."""
    import pyarrow.compute as pc

    return pa.table([pc.cast(table.column(c), pa.int64())
                     if pa.types.is_timestamp(table.schema.field(c).type) else table.column(c)
                     for c in columns], names=columns)


def _rows(table: pa.Table, columns: list[str]) -> Counter[tuple[Any, ...]]:
    return Counter(zip(*(table.column(c).to_pylist() for c in columns), strict=True))


def planned_checkpoints(tmp_path: Path, run_id: str) -> list[int]:
    run = store(tmp_path).get_run(run_id)
    assert run is not None
    return [c["index"] for s in run.plan["streams"] for c in s["checkpoints"]]
