"""A sync on a real multi-process Spark cluster lands the same tables as on local Spark.

``headwater sync --master spark://...`` runs its driver in the CLI process
and its tasks in an executor JVM that the standalone worker launches: the
partitions, the readers and the task function travel pickled between
processes, and the executors fetch Delta's jars from the driver.  The tables
must equal the source, and the worker's work dir must show that the
executors, not the driver, did the reading.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.integration._cli import (
    assert_each_checkpoint_committed_once,
    assert_table_equals_source,
    store,
    sync,
    table_location,
    write_connection,
)
from tests.integration._cluster import StandaloneCluster, standalone_cluster

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


@pytest.fixture
def cluster(tmp_path: Path) -> Iterator[StandaloneCluster]:
    with standalone_cluster(tmp_path) as running:
        yield running


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
    status = cluster.status()
    applications = status.get("completedapps", []) + status.get("activeapps", [])
    assert f"headwater-{NAME}" in {app["name"] for app in applications}
    logs = list(cluster.work_dir.glob("app-*/*/stderr"))
    assert logs, f"no executor ran in the worker's work dir {cluster.work_dir}"
    # ... which read every partition (one mapInArrow Python task each) ...
    started = sum(len(PYTHON_TASK_STARTED.findall(log.read_text(errors="replace"))) for log in logs)
    assert started >= planned_partitions(tmp_path, document["run_id"]), logs
    # ... with Delta's jars, which it fetched from the driver.
    assert any(any(log.parent.glob("io.delta_delta-spark_*.jar")) for log in logs)


def planned_partitions(tmp_path: Path, run_id: str) -> int:
    run = store(tmp_path).get_run(run_id)
    assert run is not None
    return sum(len(c["partitions"]) for s in run.plan["streams"] for c in s["checkpoints"])
