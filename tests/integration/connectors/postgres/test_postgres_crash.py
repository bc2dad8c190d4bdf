"""SIGKILL a real ``headwater sync`` while it reads a PostgreSQL table in key ranges, then resume.

Every row must land exactly once: the resumed attempt re-executes the
persisted plan, skips the checkpoints whose Delta commit already landed, and
reads the others again from PostgreSQL.
"""

from __future__ import annotations

import random
import time
from collections import Counter
from pathlib import Path
from typing import Any

import psycopg
import pytest

from tests._postgres import PostgresServer
from tests.integration._cli import (
    HOME,
    LAKEHOUSE,
    READING_PAUSE,
    assert_each_checkpoint_committed_once,
    kill_cli,
    start_cli,
    store,
    sync,
)
from tests.integration._connections import connection_file

pytestmark = [pytest.mark.spark, pytest.mark.crash]

NAME = "pg_crash"
STREAM = "orders"
ROWS = 8_000


def landed(tmp_path: Path, run_id: str) -> int:
    return sum(1 for c in store(tmp_path).list_checkpoints(run_id)
               if c.status in ("committed", "released"))


def test_killed_while_reading_key_ranges_then_resumed(
        spark: Any, tmp_path: Path, postgres_server: PostgresServer) -> None:
    with postgres_server.database() as database:
        with psycopg.connect(postgres_server.database_url(database), autocommit=True) as conn:
            conn.execute("""
                CREATE TABLE orders (id bigint PRIMARY KEY, amount numeric(12, 2),
                                     placed_at timestamptz, note jsonb);
                INSERT INTO orders SELECT g, g / 100.0,
                       '2024-01-01'::timestamptz + g * interval '1 s', jsonb_build_object('g', g)
                FROM generate_series(1, 8000) g;
                ANALYZE orders;
            """)
        path = connection_file(
            tmp_path, name=NAME, source_type="postgres",
            source=postgres_server.source_config(database, rows_per_partition=1000),
            streams=[{"name": STREAM, "sync_mode": "full_refresh",
                      "destination_sync_mode": "append"}],
            lake=LAKEHOUSE, store_file=None,
            checkpoint={"partitions_per_checkpoint": 2, "concurrent_checkpoints": 2})

        process = start_cli(tmp_path, "sync", str(path), "--json", env=READING_PAUSE)
        db = tmp_path / HOME / "headwater.db"
        deadline = time.monotonic() + 600
        while True:
            assert process.poll() is None, "the sync ended before it could be killed"
            assert time.monotonic() < deadline, "the sync committed nothing in 600 s"
            run = store(tmp_path).find_unfinished_run(NAME) if db.exists() else None
            if run is not None and landed(tmp_path, run.run_id) >= 1:
                break
            time.sleep(0.1)
        time.sleep(random.Random("pg-while-reading").uniform(0.0, 2.0))
        killed = kill_cli(process)
        assert killed.exit_code == -9, killed.describe()
        run = store(tmp_path).find_unfinished_run(NAME)
        assert run is not None, "a killed sync must leave its run unfinished"
        assert len(run.plan["streams"][0]["checkpoints"]) == 4  # 8 key ranges, 2 each

        # --one-run: the killed run alone (a new run would append a second snapshot of
        # this full refresh).
        resumed = sync(tmp_path, path, "--one-run")
        assert resumed.exit_code == 0, resumed.describe()
        assert resumed.document is not None and resumed.document["run_id"] == run.run_id
        assert resumed.document["resumed"] is True

        location = str(tmp_path / LAKEHOUSE / STREAM)
        assert_each_checkpoint_committed_once(spark, location, tmp_path, run.run_id, STREAM)
        frame = spark.read.format("delta").load(location).select("id", "amount", "note")
        ids = Counter(r["id"] for r in frame.collect())
        assert sorted(ids) == list(range(1, ROWS + 1)), "ids missing or extra"
        assert max(ids.values()) == 1, "ids landed twice"
        with psycopg.connect(postgres_server.database_url(database)) as conn:
            expected = Counter(conn.execute("SELECT id, amount, note::text FROM orders"))
        actual = Counter((r["id"], r["amount"], r["note"]) for r in frame.collect())
        assert actual == expected
