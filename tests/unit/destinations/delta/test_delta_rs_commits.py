"""Commits of task-written files through delta-rs: idempotent, tagged, and overwrite-aware."""

from __future__ import annotations

import json
import threading
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from deltalake import DeltaTable

from headwater.destinations._base import CommitMarker, tagged_counts
from headwater.destinations._table_files import _store
from headwater.destinations._table_files._parquet import ParquetFiles, WrittenFile
from headwater.destinations.delta import _delta_rs
from headwater.errors import DestinationError

SCHEMA = pa.schema([pa.field("id", pa.int64()), pa.field("_hw_run_id", pa.string())])


def files(folder: Path, ids: list[int]) -> list[WrittenFile]:
    batch = pa.RecordBatch.from_pydict({"id": ids, "_hw_run_id": ["r"] * len(ids)}, SCHEMA)
    written = ParquetFiles(folder=str(folder), stats_columns=["id"]).write(iter([batch]))
    return [WrittenFile(**row) for b in written for row in b.to_pylist()]


def ids(folder: Path) -> list[int]:
    return sorted(DeltaTable(str(folder)).to_pyarrow_table().column("id").to_pylist())


def test_a_checkpoint_committed_once_is_skipped_when_committed_again(tmp_path: Path) -> None:
    folder = str(tmp_path)
    _delta_rs.create_table(folder, SCHEMA, {"delta.dataSkippingStatsColumns": "`id`"})
    marker = CommitMarker(app_id="hw/c/users/0", version=3, run_id="run-1", stream="users",
                          checkpoint_index=3)
    tag = marker.tag_with_counts(2, 0, 10)
    assert _delta_rs.commit_files(folder, files(tmp_path, [1, 2]), mode="append",
                                  app_id=marker.app_id, version=3, tag=tag
                                  ) == _delta_rs.Committed(made=True, version=1)
    # The retried attempt (same lane, same checkpoint) and an older one change nothing.
    assert not _delta_rs.commit_files(folder, files(tmp_path, [1, 2]), mode="append",
                                      app_id=marker.app_id, version=3, tag=tag).made
    assert not _delta_rs.commit_files(folder, files(tmp_path, [0]), mode="append",
                                      app_id=marker.app_id, version=2, tag=tag).made
    assert ids(tmp_path) == [1, 2]

    (latest,) = _delta_rs.history(folder, 1) or []
    assert latest["version"] == 1
    document = json.loads(latest["userMetadata"])
    assert document["headwater"] == {"run_id": "run-1", "stream": "users", "checkpoint": 3}
    assert tagged_counts(latest["userMetadata"]) == {"rows": 2, "rejected": 0, "bytes": 10}

    state = _delta_rs.table_state(folder)
    assert state is not None
    assert state.properties == {"delta.dataSkippingStatsColumns": "`id`",
                                "delta.checkpointInterval": "10"}
    assert [f["name"] for f in state.schema_json["fields"]] == ["id", "_hw_run_id"]
    assert all(f["nullable"] for f in state.schema_json["fields"])


def test_overwrite_replaces_the_files_and_an_empty_commit_still_counts(tmp_path: Path) -> None:
    folder = str(tmp_path)
    _delta_rs.create_table(folder, SCHEMA, {})
    _delta_rs.commit_files(folder, files(tmp_path, [1, 2, 3]), mode="append", app_id="a",
                           version=1, tag="{}")
    _delta_rs.commit_files(folder, files(tmp_path, [7]), mode="overwrite", app_id="a",
                           version=2, tag="{}")
    assert ids(tmp_path) == [7]
    assert _delta_rs.commit_files(folder, [], mode="append", app_id="a", version=3,
                                  tag="{}") == _delta_rs.Committed(made=True, version=3)
    assert DeltaTable(folder).transaction_version("a") == 3
    assert ids(tmp_path) == [7]


def test_only_local_folders_are_committed_by_delta_rs() -> None:
    assert _store.local_folder("/data/lake/users") == "/data/lake/users"
    assert _store.local_folder("file:///data/lake/users") == "/data/lake/users"
    assert _store.local_folder("s3a://bucket/lake/users") is None
    assert _delta_rs.table_state("/nonexistent/headwater/table") is None
    assert _delta_rs.history("/nonexistent/headwater/table") is None


def test_a_commit_s_version_is_found_past_commits_other_lanes_made(tmp_path: Path) -> None:
    """Lanes commit side by side: another lane's commit may land between a read and ours."""
    folder = str(tmp_path)
    _delta_rs.create_table(folder, SCHEMA, {})
    for lane, txn_version in (("lane-0", 1), ("lane-1", 2), ("lane-0", 3)):
        _delta_rs.commit_files(folder, files(tmp_path, [txn_version]), mode="append",
                               app_id=lane, version=txn_version, tag="{}")
    # Read at version 0: lane-1's commit is the second after it, lane-0's later one the third.
    assert _delta_rs._version_of(folder, 0, "lane-1", 2) == 2
    assert _delta_rs._version_of(folder, 0, "lane-0", 3) == 3
    assert _delta_rs._version_of(folder, 0, "lane-0", 1) == 1
    assert _delta_rs._version_of(folder, 0, "lane-2", 1) is None


def test_a_table_delta_rs_creates_checkpoints_its_log_every_ten_commits(tmp_path: Path) -> None:
    """As a table Spark creates would: readers then replay at most ten JSON commits."""
    folder = str(tmp_path)
    _delta_rs.create_table(folder, SCHEMA, {})  # version 0
    log = tmp_path / "_delta_log"
    for version in range(1, 10):
        assert not list(log.glob("*.checkpoint.parquet"))
        _delta_rs.commit_files(folder, files(tmp_path, [version]), mode="append", app_id="a",
                               version=version, tag="{}")
    # The tenth commit (version 9) is checkpointed by delta-rs itself.
    assert [p.name for p in log.glob("*.checkpoint.parquet")] == [
        "00000000000000000009.checkpoint.parquet"]
    assert DeltaTable(folder).transaction_version("a") == 9
    assert ids(tmp_path) == list(range(1, 10))


def test_history_numbers_commits_right_when_one_lands_while_it_is_read(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Another lane commits between loading the table and reading its history, once."""
    folder = str(tmp_path)
    _delta_rs.create_table(folder, SCHEMA, {})
    _delta_rs.commit_files(folder, [], mode="append", app_id="lane-0", version=1, tag="first")
    read_history = DeltaTable.history
    landed: list[bool] = []

    def commit_then_read(table: DeltaTable, limit: int | None = None) -> list[dict[str, Any]]:
        if not landed:
            landed.append(_delta_rs.commit_files(folder, [], mode="append", app_id="lane-1",
                                                 version=1, tag="second").made)
        return read_history(table, limit)

    monkeypatch.setattr(DeltaTable, "history", commit_then_read)
    commits = _delta_rs.history(folder, 2) or []
    assert landed == [True]
    assert [(c["version"], c.get("userMetadata")) for c in commits] == [
        (2, "second"), (1, "first")]


def test_creators_racing_on_one_local_table_get_it_from_one_create_commit(
        tmp_path: Path) -> None:
    """The losers of version 0 adopt the winner's table (``test_s3_commits`` on S3)."""
    start = threading.Barrier(4)

    def create(_: int) -> _delta_rs.TableState:
        start.wait()
        return _delta_rs.create_table(str(tmp_path), SCHEMA, {})

    with ThreadPoolExecutor(4) as pool:
        states = list(pool.map(create, range(4)))
    assert all(state == states[0] for state in states)
    assert sorted(p.name for p in (tmp_path / "_delta_log").glob("*.json")) == [
        f"{0:020d}.json"]
    # A create that finds the table already there adopts it too.
    assert _delta_rs.create_table(str(tmp_path), SCHEMA, {}) == states[0]


def test_a_table_created_first_with_another_schema_is_not_adopted(tmp_path: Path) -> None:
    _delta_rs.create_table(str(tmp_path), SCHEMA, {})
    other = pa.schema([pa.field("id", pa.string()), pa.field("_hw_run_id", pa.string())])
    with pytest.raises(DestinationError, match=r"another writer created the Delta table at "
                       rf"{tmp_path} at the same time with a different schema \(columns "
                       r"\['id', '_hw_run_id'\]"):
        _delta_rs.create_table(str(tmp_path), other, {})
    assert len(list((tmp_path / "_delta_log").glob("*.json"))) == 1
