"""SIGKILL a real ``headwater sync`` into PostgreSQL, resume it, and count from outside.

Two CLI syncs run side by side (one JVM each, on the machine's two cores), each into a
schema of its own: one is killed from outside while it reads, once a checkpoint has
landed; the other kills itself right after a commit is durable and before its state
is released (the destination's ``commit-landed`` moment).  Each is then resumed in
the test process, and plain psycopg, not Headwater, counts the table's rows and keys:
every source row once, each planned checkpoint one commit marker, no staging left.
Incremental append is the strictest mode: a checkpoint landed twice shows as its rows
twice.  Two CLI JVMs, no more.
"""

from __future__ import annotations

import random
import subprocess
import time
from collections import Counter
from pathlib import Path
from typing import Any

import psycopg
import pytest

from headwater.connectors.sample import SampleSource
from tests._postgres import PostgresServer
from tests.integration._cli import (
    FAULT,
    HOME,
    READING_PAUSE,
    finish_cli,
    kill_cli,
    start_cli,
    store,
)
from tests.integration._connections import connection_file
from tests.integration._in_process import sync_in_process
from tests.integration.destinations.postgres._tables import config

pytestmark = [pytest.mark.spark, pytest.mark.crash]

NAME = "pg_killed"
SOURCE = {"seed": 3, "users": 0, "orders": 1600, "rows_per_partition": 200}
STREAMS = [{"name": "orders", "sync_mode": "incremental", "destination_sync_mode": "append",
            "cursor_field": "updated_at"}]


def landed(folder: Path, run_id: str) -> int:
    return sum(1 for c in store(folder).list_checkpoints(run_id)
               if c.status in ("committed", "released"))


def write(folder: Path, server: PostgresServer, database: str) -> Path:
    folder.mkdir()
    return connection_file(
        folder, name=NAME, source=SOURCE, streams=STREAMS, store_file=None,
        checkpoint={"partitions_per_checkpoint": 2, "concurrent_checkpoints": 2},
        destination={"type": "postgres",
                     "config": config(server, database, schema=folder.name)})


def kill_once_landed(folder: Path, process: subprocess.Popen[str]) -> None:
    """SIGKILL ``process`` from outside once its run has a landed checkpoint."""
    db = folder / HOME / "headwater.db"
    deadline = time.monotonic() + 600
    while True:
        assert process.poll() is None, "the sync ended before it could be killed"
        assert time.monotonic() < deadline, "the sync committed nothing in 600 s"
        run = store(folder).find_unfinished_run(NAME) if db.exists() else None
        if run is not None and landed(folder, run.run_id) >= 1:
            break
        time.sleep(0.1)
    time.sleep(random.Random("pg-destination").uniform(0.0, 1.0))
    assert kill_cli(process).exit_code == -9


def resume_and_count(folder: Path, path: Path, server: PostgresServer, database: str) -> None:
    run = store(folder).find_unfinished_run(NAME)
    assert run is not None, "a killed sync must leave its run unfinished"
    planned = [c["index"] for c in run.plan["streams"][0]["checkpoints"]]
    assert len(planned) == 4
    resumed = sync_in_process(folder, path, "--one-run")
    assert resumed.exit_code == 0, resumed.describe()
    assert resumed.document is not None and resumed.document["run_id"] == run.run_id
    assert resumed.document["resumed"] is True
    table = f'"{folder.name}".orders'
    with psycopg.connect(server.database_url(database)) as conn:
        ids = Counter(i for (i,) in conn.execute(f"SELECT id FROM {table}"))
        markers = Counter(v for (v,) in conn.execute(
            "SELECT version FROM _headwater.commit_markers WHERE run_id = %s AND "
            "kind = 'commit'", [run.run_id]))
        staging = conn.execute("SELECT count(*) FROM _headwater.staging WHERE target = %s",
                               [table]).fetchone()
    expected = SampleSource(SOURCE).expected_rows("orders").column("id").to_pylist()
    assert sum(ids.values()) == len(expected), f"{folder.name}: {sum(ids.values())} rows"
    assert ids == Counter(expected), f"{folder.name}: rows missing or twice"
    assert markers == Counter(planned), markers
    assert staging == (0,), "staging left behind"


def test_killed_while_reading_and_after_a_commit_then_resumed_every_row_once(
        spark: Any, tmp_path: Path, postgres_server: PostgresServer) -> None:
    with postgres_server.database() as database:
        reading = write(tmp_path / "reading", postgres_server, database)
        landing = write(tmp_path / "landing", postgres_server, database)
        while_reading = start_cli(reading.parent, "sync", str(reading), "--json",
                                  env=READING_PAUSE)
        after_commit = start_cli(landing.parent, "sync", str(landing), "--json",
                                 env={FAULT: "commit-landed:2"})
        try:
            kill_once_landed(reading.parent, while_reading)
            killed = finish_cli(after_commit)
            assert killed.exit_code == -9, killed.describe()
        finally:
            for process in (while_reading, after_commit):
                if process.poll() is None:
                    kill_cli(process, whole_group=True)
        resume_and_count(reading.parent, reading, postgres_server, database)
        resume_and_count(landing.parent, landing, postgres_server, database)
