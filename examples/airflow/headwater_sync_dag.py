"""An Airflow DAG that syncs a Headwater connection, waits for the run, then replays it.

Used by ``scripts/airflow-check`` (``airflow dags test headwater_sync``);
``HEADWATER_CONNECTION_FILE`` and ``HEADWATER_METADATA_STORE`` point it at a
connection and its metadata store.
"""

from __future__ import annotations

import os
from datetime import datetime

from airflow.sdk import DAG

from headwater.integrations.airflow import HeadwaterRunSensor, HeadwaterSyncOperator

with DAG(dag_id="headwater_sync", start_date=datetime(2026, 1, 1), schedule=None,
         catchup=False):
    sync = HeadwaterSyncOperator(
        task_id="sync",
        connection_file=os.environ["HEADWATER_CONNECTION_FILE"],
        headwater_bin=os.environ.get("HEADWATER_BIN", "headwater"),
    )
    wait = HeadwaterRunSensor(
        task_id="wait",
        metadata_store=os.environ["HEADWATER_METADATA_STORE"],
        run_id="{{ ti.xcom_pull(task_ids='sync')['run_id'] }}",
        poke_interval=1,
        timeout=600,
    )
    replay = HeadwaterSyncOperator(
        task_id="replay",
        connection_file=os.environ["HEADWATER_CONNECTION_FILE"],
        command="replay",
        arguments=["{{ ti.xcom_pull(task_ids='sync')['run_id'] }}"],
        headwater_bin=os.environ.get("HEADWATER_BIN", "headwater"),
    )
    sync >> wait >> replay
