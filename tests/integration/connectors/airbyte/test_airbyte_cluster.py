"""An Airbyte connector's venv reaches cluster executors as a Spark archive.

``headwater sync --master spark://...`` runs the connector on an executor the
standalone worker launches.  The driver packs the connector's venv once and adds
it with ``addArchive`` (``spark.archives``); the executor unpacks it into its
working directory, and ``ConnectorEnv.command`` runs the connector from that
copy.  The rows must land as when run locally, and the executor's directory
must hold the unpacked venv.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from headwater.connectors.airbyte import ConnectorEnv, envs_root
from tests.integration._cli import sync, table_location
from tests.integration._cluster import StandaloneCluster
from tests.integration._connections import connection_file

pytestmark = [pytest.mark.cluster, pytest.mark.spark]

FAKER = {"package": "airbyte-source-faker", "version": "7.2.1"}
USERS = 120


def test_faker_runs_on_an_executor_from_the_shipped_venv(
        spark: Any, tmp_path: Path, cluster: StandaloneCluster) -> None:
    env = ConnectorEnv(package=FAKER["package"], version=FAKER["version"], root=str(envs_root()))
    env.ensure()
    connection = connection_file(
        tmp_path, name="ab-cluster", source_type="airbyte",
        source={**FAKER, "envs_dir": str(envs_root()),
                "config": {"count": USERS, "seed": 3, "parallelism": 1}},
        streams=[{"name": "users", "sync_mode": "full_refresh",
                  "destination_sync_mode": "overwrite"}],
        lake="lakehouse", store_file=None)

    result = sync(tmp_path, connection, "--master", cluster.master_url,
                  env={"SPARK_LOCAL_IP": "127.0.0.1"})

    assert result.exit_code == 0, result.describe()
    assert result.document is not None and result.document["status"] == "succeeded"
    rows = spark.read.format("delta").load(table_location(tmp_path, "users"))
    assert rows.count() == USERS
    assert rows.select("id").distinct().count() == USERS
    executors = cluster.executor_dirs("headwater-ab-cluster")
    assert executors, f"no executor ran in the worker's work dir {cluster.work_dir}"
    unpacked = [d / env.alias for d in executors if (d / env.alias / ".headwater-ready").exists()]
    assert unpacked, f"no executor unpacked {env.alias}: {[list(d.iterdir()) for d in executors]}"
    assert (unpacked[0] / "bin" / "source-faker").exists()
