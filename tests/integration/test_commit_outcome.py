"""A commit is judged by the table, never by the error that came with it (issue 16, items 3-4).

* A commit that lands and then raises (delta-rs writes the log checkpoint
  after the commit file is durable, and raises if that fails; the
  ``raise-after-commit`` fault point does the same on either writer) counts as
  committed: the run succeeds, and no later run reads its data again.
* A metadata store restored from an older copy hands out checkpoint indices
  the table's lanes already hold.  The stream stops with a message saying so
  (on Spark's writer too, where Delta skips the write and no job runs), and
  ``headwater state realign`` brings the store back in step.

Each test runs the CLI's own command in the test process (``_in_process``): no
process is killed here, so a subprocess (a JVM start per sync) would prove nothing
more. The faults are raised, not kills: ``raise-commit-landed`` and a log checkpoint
that cannot be renamed.
"""

from __future__ import annotations

import sqlite3
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from tests.integration._cli import (
    HOME,
    LAKEHOUSE,
    CliResult,
    assert_table_equals_source,
    expected_rows,
    read_table,
    table_location,
)
from tests.integration._connections import connection_file
from tests.integration._in_process import run_in_process

pytestmark = pytest.mark.spark

NAME = "commits"
STREAM = "users"
#: 12 partitions, one per checkpoint: commits at versions 1-12, so delta-rs writes a
#: log checkpoint (after version 9) during the first sync.  No updates: every id once.
SOURCE: dict[str, Any] = {"seed": 5, "users": 2_400, "orders": 0, "rows_per_partition": 200,
                          "updates_per_generation": 0, "new_per_generation": 20}
CHECKPOINT = {"partitions_per_checkpoint": 1, "concurrent_checkpoints": 2}
APPEND = {"name": STREAM, "sync_mode": "incremental", "destination_sync_mode": "append",
          "cursor_field": "updated_at"}


def source(generation: int) -> dict[str, Any]:
    return {**SOURCE, "generation": generation}


def run_sync(tmp_path: Path, generation: int, *, writer: str = "auto",
             env: dict[str, str] | None = None) -> CliResult:
    path = connection_file(tmp_path, name=NAME, source=source(generation), streams=[APPEND],
                           lake=LAKEHOUSE, store_file=None, checkpoint=CHECKPOINT,
                           writer=writer)
    return run_in_process(tmp_path, "sync", str(path), "--json", env=env)


def succeeded(result: CliResult, written: int) -> dict[str, Any]:
    assert result.exit_code == 0, result.describe()
    document = result.document
    assert document is not None, result.describe()
    assert document["status"] == "succeeded", result.describe()
    assert document["streams"][0]["records_written"] == written, result.describe()
    return document


# --------------------------------------------------------------------------- scenarios
# Each is the case of the test of its name below.


def log_checkpoint_failing_after_the_commit(spark: Any, tmp_path: Path) -> None:
    """delta-rs raises after commit 9 is durable: checkpoint counted committed, no id twice."""
    log = Path(table_location(tmp_path, STREAM)) / "_delta_log"
    # A directory where delta-rs renames the checkpoint of version 9: the rename fails.
    blocked = log / f"{9:020d}.checkpoint.parquet"
    blocked.mkdir(parents=True)

    succeeded(run_sync(tmp_path, 0), SOURCE["users"])
    assert (log / f"{9:020d}.json").is_file(), "commit 9 must have landed"
    assert blocked.is_dir(), "the log checkpoint of version 9 must have failed"
    assert_table_equals_source(spark, table_location(tmp_path, STREAM), source(0), STREAM)

    blocked.rmdir()  # the disk is fixed; the next sync reads only what is new
    succeeded(run_sync(tmp_path, 1), SOURCE["new_per_generation"])
    assert_table_equals_source(spark, table_location(tmp_path, STREAM), source(1), STREAM)


def commit_raising_after_it_landed(spark: Any, tmp_path: Path, writer: str) -> None:
    """The destination raises right after its second commit landed: still a success."""
    result = run_sync(tmp_path, 0, writer=writer, env={"HEADWATER_FAULT": "raise-commit-landed:2"})
    succeeded(result, SOURCE["users"])
    assert "counts as committed" in result.stderr, result.describe()
    assert_table_equals_source(spark, table_location(tmp_path, STREAM), source(0), STREAM)

    succeeded(run_sync(tmp_path, 1, writer=writer), SOURCE["new_per_generation"])
    assert_table_equals_source(spark, table_location(tmp_path, STREAM), source(1), STREAM)


def _copy_store(src: Path, dst: Path) -> None:
    """A consistent copy of a SQLite store (WAL included), as a backup tool makes one."""
    dst.unlink(missing_ok=True)
    with sqlite3.connect(src) as source_db, sqlite3.connect(dst) as copy:
        source_db.backup(copy)


def store_restored_from_an_older_copy(spark: Any, tmp_path: Path, writer: str) -> None:
    """Sync, back the store up, sync, restore it, sync: stopped, realigned, then exact."""
    store_file = tmp_path / HOME / "headwater.db"
    backup = tmp_path / "backup.db"
    location = table_location(tmp_path, STREAM)
    succeeded(run_sync(tmp_path, 0, writer=writer), SOURCE["users"])
    _copy_store(store_file, backup)
    later = succeeded(run_sync(tmp_path, 1, writer=writer), SOURCE["new_per_generation"])
    for suffix in ("-wal", "-shm"):
        Path(f"{store_file}{suffix}").unlink(missing_ok=True)
    _copy_store(backup, store_file)

    behind = run_sync(tmp_path, 2, writer=writer)
    assert behind.exit_code == 1, behind.describe()
    assert behind.document is not None and behind.document["status"] == "failed"
    error = behind.document["streams"][0]["error"] or ""
    assert "metadata store is behind the table" in error, behind.describe()
    assert "headwater state realign" in error and location in error, error
    # Nothing lost and nothing twice.  A lane whose txn version the table did not hold
    # yet may have committed its checkpoint (of generation 2's rows): that one is exact.
    ids = Counter(read_table(spark, location, ["id"]).column("id").to_pylist())
    assert not [i for i, n in ids.items() if n > 1]
    assert set(expected_rows(source(1), STREAM).column("id").to_pylist()) <= set(ids)
    landed = behind.document["streams"][0]["records_written"]
    assert len(ids) == SOURCE["users"] + SOURCE["new_per_generation"] + landed

    connection = tmp_path / f"{NAME}.yaml"
    realigned = run_in_process(tmp_path, "state", "realign", str(connection), "--drop-unknown-runs",
                        "--yes", "--json")
    assert realigned.exit_code == 0, realigned.describe()
    assert realigned.document is not None, realigned.describe()
    stream = realigned.document["streams"][0]
    # The stopped sync's own allocation may have moved the counter past the lanes already.
    top = max(stream["lanes"].values())
    assert stream["behind"] is (stream["next_index_before"] <= top), stream
    assert stream["next_index_after"] > top, stream
    assert stream["unknown_runs"] == {later["run_id"]: SOURCE["new_per_generation"]}, stream
    assert stream["deleted_rows"] == SOURCE["new_per_generation"], stream

    # The store's state is generation 0's (plus what the stopped sync committed): the
    # sync reads the rest of generations 1 and 2, once.
    succeeded(run_sync(tmp_path, 2, writer=writer), 2 * SOURCE["new_per_generation"] - landed)
    assert_table_equals_source(spark, location, source(2), STREAM)


# --------------------------------------------------------------------------- tests


def test_log_checkpoint_failing_after_the_commit(spark: Any, tmp_path: Path) -> None:
    log_checkpoint_failing_after_the_commit(spark, tmp_path)


@pytest.mark.parametrize("writer", ["auto", "spark"])
def test_commit_raising_after_it_landed(spark: Any, tmp_path: Path, writer: str) -> None:
    commit_raising_after_it_landed(spark, tmp_path, writer)


@pytest.mark.parametrize("writer", ["auto", "spark"])
def test_store_restored_from_an_older_copy(spark: Any, tmp_path: Path, writer: str) -> None:
    store_restored_from_an_older_copy(spark, tmp_path, writer)
