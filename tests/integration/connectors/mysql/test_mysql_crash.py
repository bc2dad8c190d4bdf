"""A first load of a MariaDB table killed mid-snapshot resumes at the next uncommitted partition.

The kill is simulated in the test process (``tests/integration/_in_process.py``:
:class:`tests._faults.Killed` at the sync's second ``after-commit`` moment, between a
checkpoint's commit and its state's release, the run left
unfinished as SIGKILL leaves it); the real SIGKILL of a CLI sync at every moment is
proved source-independently by ``tests/integration/test_crash_resume.py`` and for a
database source by the postgres source's crash test.  What this test adds is the
mysql source's part: its key-range partitions are the persisted plan's, so the
resumed attempt reads exactly the partitions not committed, and never those that
were.  The proof: between the kill and the resume every row of the source is
changed; afterwards the rows of the committed checkpoints still hold the values read
before the kill (not read again), the others the new ones (read after), and every id
is in the table once.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from tests._mariadb import MariaDBServer
from tests.integration._cli import (
    FAULT,
    LAKEHOUSE,
    assert_each_checkpoint_committed_once,
    store,
)
from tests.integration._connections import connection_file
from tests.integration._in_process import sync_in_process

pytestmark = [pytest.mark.spark, pytest.mark.crash]

NAME = "my_crash"
STREAM = "orders"
ROWS = 800


def test_killed_mid_snapshot_resumes_at_the_next_uncommitted_partition(
        spark: Any, tmp_path: Path, mariadb_server: MariaDBServer) -> None:
    with mariadb_server.database() as database:
        mariadb_server.execute("CREATE TABLE orders (id BIGINT PRIMARY KEY, label VARCHAR(20), "
                               "amount DECIMAL(12, 2))", database)
        mariadb_server.execute(f"INSERT INTO orders SELECT seq * seq, 'before', seq / 100 "
                               f"FROM seq_1_to_{ROWS}", database)  # skewed keys
        path = connection_file(
            tmp_path, name=NAME, source_type="mysql",
            source=mariadb_server.source_config(database, rows_per_partition=100),
            streams=[{"name": STREAM, "sync_mode": "full_refresh",
                      "destination_sync_mode": "append"}],
            lake=LAKEHOUSE, store_file=None,
            checkpoint={"partitions_per_checkpoint": 2, "concurrent_checkpoints": 1})

        killed = sync_in_process(tmp_path, path, env={FAULT: "after-commit:2"})
        assert killed.exit_code == -9, killed.describe()
        run = store(tmp_path).find_unfinished_run(NAME)
        assert run is not None, "a killed sync must leave its run unfinished"
        [plan] = run.plan["streams"]
        assert len(plan["checkpoints"]) == 4  # 8 quantile ranges of 100 rows, 2 each
        committed = [c for c in store(tmp_path).list_checkpoints(run.run_id)
                     if c.status in ("committed", "released")]
        # Killed after checkpoint 2's commit, before its state: the store knows only 1;
        # the resumed attempt finds 2 in the table by its commit marker.
        assert sorted(c.index for c in committed) == [1]

        mariadb_server.execute("UPDATE orders SET label = 'after'", database)
        resumed = sync_in_process(tmp_path, path, "--one-run")
        assert resumed.exit_code == 0, resumed.describe()
        assert resumed.document is not None and resumed.document["run_id"] == run.run_id
        assert resumed.document["resumed"] is True

        location = str(tmp_path / LAKEHOUSE / STREAM)
        assert_each_checkpoint_committed_once(spark, location, tmp_path, run.run_id, STREAM)
        rows = spark.read.format("delta").load(location).select(
            "id", "label", "_hw_partition_id").toArrow().to_pylist()
        ids = Counter(r["id"] for r in rows)
        assert sorted(ids) == [n * n for n in range(1, ROWS + 1)], "ids missing or extra"
        assert max(ids.values()) == 1, "ids landed twice"
        by_checkpoint = {p["id"]: c["index"] for c in plan["checkpoints"]
                         for p in c["partitions"]}
        labels = Counter((by_checkpoint[r["_hw_partition_id"]], r["label"]) for r in rows)
        assert labels == {(1, "before"): 200, (2, "before"): 200,
                          (3, "after"): 200, (4, "after"): 200}, labels
