"""A standalone cluster (master, two workers) syncing into Iceberg tables on an S3-compatible
server, two connections at once, every append and overwrite mode, compared with local syncs.

The CLI runs the driver (``--master spark://...``, the run's shared ``cluster``);
executors on the two workers read the source and upload each checkpoint's
Parquet files with pyarrow to the tables' ``data/`` prefixes on the run's moto
server (``s3_server``), with the store access the driver read from the
connection's ``spark.hadoop.fs.s3a.*`` (it travels with the task); the driver
commits them through PyIceberg and a SQL catalog (a SQLite file both
connections share).  Nothing of the tables is on this machine's disk.

Two connections of one project, each with one of the workers' cores, sync side
by side into tables of one warehouse, twice (source generations 0 and 1):

* ``ice-left``: ``users`` incremental ``append`` (partitioned by ``bucket(4, id)``)
  and ``orders`` full-refresh ``overwrite`` over several checkpoints (staged on
  a branch, then published);
* ``ice-right``: ``users`` full-refresh ``append`` and ``orders`` full-refresh
  ``overwrite``, each in one checkpoint (one snapshot).

Every table then equals, every column, the table the same two syncs make in a
local warehouse (in this process, on local Spark), read by PyIceberg's scan and
by Spark from the current snapshot's data files over ``s3a://``; each append
table holds each planned checkpoint of each run in exactly one snapshot; and the
executors' logs show a Python task per planned partition (they, not the driver, read).
The source is small: a sync's cost here is JVMs and Spark's per-job overhead.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from headwater.destinations.iceberg import _markers
from tests.integration import _connections
from tests.integration._cli import (
    READING_PAUSE,
    finish_cli,
    planned_partitions,
    start_cli,
    store,
)
from tests.integration._cluster import StandaloneCluster
from tests.integration._s3 import SECRET_KEY, S3Server
from tests.integration.destinations.delta._s3 import hadoop_settings, new_bucket
from tests.integration.destinations.delta._tables import session_settings
from tests.integration.destinations.iceberg.test_iceberg_s3 import (
    SOURCE,
    assert_same_table,
    reader,
)

pytestmark = [pytest.mark.cluster, pytest.mark.spark]

#: The driver of a CLI sync binds to loopback, as the workers do.
DRIVER_ENV = {"SPARK_LOCAL_IP": "127.0.0.1"}
#: Each connection's streams; its tables are ``headwater.<name>_<stream>``.
CONNECTIONS: dict[str, list[dict[str, Any]]] = {
    "ice-left": [
        {"name": "users", "sync_mode": "incremental", "destination_sync_mode": "append",
         "cursor_field": "updated_at", "partition_by": ["bucket(4, id)"]},
        # Five partitions, two per checkpoint: staged on a branch, then published.
        {"name": "orders", "sync_mode": "full_refresh", "destination_sync_mode": "overwrite"},
    ],
    "ice-right": [
        {"name": "users", "sync_mode": "full_refresh", "destination_sync_mode": "append"},
        {"name": "orders", "sync_mode": "full_refresh", "destination_sync_mode": "overwrite"},
    ],
}
#: Each connection's checkpoints: ``ice-right`` takes each stream in one (one snapshot).
CHECKPOINTS: dict[str, dict[str, int]] = {
    "ice-left": {"partitions_per_checkpoint": 2, "concurrent_checkpoints": 2},
    "ice-right": {"partitions_per_checkpoint": 8}}
APPENDS = {("ice-left", "users"), ("ice-right", "users")}


@dataclass(frozen=True)
class Lake:
    """The module's bucket; its warehouse is ``s3a://<bucket>/warehouse``."""

    bucket: str

    @property
    def warehouse(self) -> str:
        return f"s3a://{self.bucket}/warehouse"


@pytest.fixture(scope="module")
def lake(spark: Any, s3_server: S3Server) -> Iterator[Lake]:
    """A new bucket that this process's Spark reads too (per-bucket S3A settings)."""
    bucket = new_bucket(s3_server)
    with session_settings(spark, hadoop_settings(s3_server, bucket)):
        yield Lake(bucket)


def prefix(name: str) -> str:
    return name.replace("-", "_").removeprefix("ice_") + "_"


def write(folder: Path, name: str, warehouse: str, generation: int,
          spark_conf: Mapping[str, str] | None = None, store_file: str | None = None) -> Path:
    """``name``'s connection: its tables in ``warehouse`` through the SQL catalog in
    ``folder/catalog.db`` (shared by both connections)."""
    return _connections.connection_file(
        folder, name=name, source={**SOURCE, "generation": generation},
        streams=CONNECTIONS[name], store_file=store_file,
        checkpoint=CHECKPOINTS[name],
        destination={"type": "iceberg", "config": {
            "warehouse": warehouse, "table_prefix": prefix(name),
            "catalog": {"type": "sql", "uri": f"sqlite:///{folder}/catalog.db"}}},
        spark={"conf": dict(spark_conf)} if spark_conf else None)


def planned(tmp_path: Path, run_id: str, stream: str) -> list[int]:
    run = store(tmp_path).get_run(run_id)
    assert run is not None
    return [c["index"] for s in run.plan["streams"] if s["stream"]["name"] == stream
            for c in s["checkpoints"]]


def tagged(table: Any) -> Counter[tuple[str, int]]:
    """``(run id, checkpoint)`` of each snapshot's marker, counted."""
    tags: Counter[tuple[str, int]] = Counter()
    for snapshot in table.snapshots():
        summary = snapshot.summary.additional_properties if snapshot.summary else {}
        if _markers.TAG_KEY in summary:
            tag = json.loads(summary[_markers.TAG_KEY])["headwater"]
            tags[(tag["run_id"], tag["checkpoint"])] += 1
    return tags


def test_two_connections_sync_every_mode_to_s3_from_the_cluster_at_once(
        spark: Any, lake: Lake, s3_server: S3Server, cluster: StandaloneCluster,
        tmp_path: Path) -> None:
    on_cluster, local = tmp_path / "cluster", tmp_path / "local"
    on_cluster.mkdir()
    local.mkdir()
    conf = {**s3_server.spark_conf(), "spark.cores.max": "1"}
    runs: dict[str, list[str]] = {name: [] for name in CONNECTIONS}
    for generation in (0, 1):
        # Each task waits 1 s per partition: both are still reading when the other starts.
        started = [(name, start_cli(on_cluster, "sync", str(write(
            on_cluster, name, lake.warehouse, generation, conf)), "--json",
            "--master", cluster.master_url, env={**DRIVER_ENV, **READING_PAUSE}))
            for name in CONNECTIONS]
        for name, process in started:
            result = finish_cli(process)
            assert result.exit_code == 0, result.describe()
            assert result.document is not None, result.describe()
            assert result.document["status"] == "succeeded", result.describe()
            assert SECRET_KEY not in result.stdout + result.stderr
            runs[name].append(result.document["run_id"])
        for name in CONNECTIONS:  # the same syncs into a local warehouse, on local Spark
            _connections.sync(write(local, name, str(local / "warehouse"), generation,
                                    store_file="meta.db"))

    s3_catalog = reader(on_cluster, lake.warehouse, s3_server)
    local_catalog = reader(local, str(local / "warehouse"), s3_server)
    for name, streams in CONNECTIONS.items():
        for stream in streams:
            identifier = f"headwater.{prefix(name)}{stream['name']}"
            table = s3_catalog.load_table(identifier)
            assert_same_table(spark, table, local_catalog.load_table(identifier),
                              f"s3://{lake.bucket}/warehouse",
                              partitioned="partition_by" in stream)
            if (name, stream["name"]) in APPENDS:  # every checkpoint of every run, once
                assert tagged(table) == Counter(
                    (run_id, index) for run_id in runs[name]
                    for index in planned(on_cluster, run_id, stream["name"]))
    # Side by side, both times: each application ran while the other did.
    apps = [a for a in cluster.status().get("completedapps", [])
            if a["name"] in {f"headwater-{name}" for name in CONNECTIONS}]
    for generation in (0, 1):
        spans = sorted((a["starttime"], a["starttime"] + a["duration"])
                       for a in sorted(apps, key=lambda a: a["starttime"])
                       [generation * 2:generation * 2 + 2])
        assert len(spans) == 2 and spans[1][0] < spans[0][1], apps
    for name in CONNECTIONS:  # in executors the workers launched, a Python task a partition
        partitions = sum(planned_partitions(on_cluster, run_id) for run_id in runs[name])
        assert cluster.python_tasks_started(f"headwater-{name}") >= partitions, name
    assert not (on_cluster / "warehouse").exists()  # nothing of the tables on this disk
