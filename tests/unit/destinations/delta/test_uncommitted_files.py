"""What the Delta destination's abort removes from a table's folder, and what it keeps."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from headwater.destinations._uncommitted import local_folder_of, run_started
from headwater.destinations.delta._abort import drop_uncommitted_files

RUN = "20261128T190000Z-abcdef"


def _file(table: Path, name: str, *, at: float) -> None:
    path = table / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(b"PAR1")
    os.utime(path, (at, at))


def test_only_the_runs_unnamed_files_go(tmp_path: Path) -> None:
    table, began = tmp_path / "orders", run_started(RUN)
    (table / "_delta_log").mkdir(parents=True)
    (table / "_delta_log" / "00000000000000000000.json").write_text(
        json.dumps({"add": {"path": "country%3DUS/part-committed.parquet"}}) + "\n"
        + json.dumps({"remove": {"path": "part-removed.parquet"}}) + "\n")
    # A checkpoint holds a commit whose JSON a short log retention already dropped.
    pq.write_table(pa.table({"add": [{"path": "part-checkpointed.parquet"}, None]}),
                   table / "_delta_log" / "00000000000000000001.checkpoint.parquet")
    staging = table / "_headwater_staging" / RUN
    staging.mkdir(parents=True)
    (staging / "3.json").write_text(json.dumps({"files": [{"path": "part-staged.parquet"}]}))
    _file(table, "country=US/part-committed.parquet", at=began + 5)
    _file(table, "part-removed.parquet", at=began + 5)
    _file(table, "part-staged.parquet", at=began + 5)
    _file(table, "part-older-run.parquet", at=began - 60)
    _file(table, "part-checkpointed.parquet", at=began + 5)
    _file(table, "part-failed.parquet", at=began + 5)
    _file(table, "country=US/part-failed-too.parquet", at=began + 6)

    assert sorted(drop_uncommitted_files(table, RUN)) == ["part-failed-too.parquet",
                                                          "part-failed.parquet"]
    left = sorted(p.name for p in table.rglob("part-*.parquet"))
    assert left == ["part-checkpointed.parquet", "part-committed.parquet",
                    "part-older-run.parquet", "part-removed.parquet", "part-staged.parquet"]


def test_not_a_delta_table_or_not_local_is_left_alone(tmp_path: Path) -> None:
    _file(tmp_path / "t", "part-x.parquet", at=run_started(RUN) + 1)
    assert drop_uncommitted_files(tmp_path / "t", RUN) == []
    assert local_folder_of("s3a://bucket/lake/orders") is None
    assert local_folder_of("file:///lake/orders") == Path("/lake/orders")
