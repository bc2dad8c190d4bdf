"""What the Delta destination's abort removes from a table's folder, and what it keeps."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from headwater.destinations._uncommitted import local_folder_of, run_file_tag, run_started
from headwater.destinations.delta._abort import drop_uncommitted_files

RUN = "20261128T190000Z-abcdef"


def _file(table: Path, name: str, *, at: float) -> None:
    path = table / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(b"PAR1")
    os.utime(path, (at, at))


def _ours(name: str, run_id: str = RUN) -> str:
    """``name`` as the run's tasks name their files (the run's tag before the extension)."""
    return name.replace(".parquet", f".{run_file_tag(run_id)}.snappy.parquet")


def test_only_the_runs_unnamed_files_go(tmp_path: Path) -> None:
    table, began = tmp_path / "orders", run_started(RUN)
    committed, removed, staged, checkpointed = (
        _ours(n) for n in ("part-committed.parquet", "part-removed.parquet",
                           "part-staged.parquet", "part-checkpointed.parquet"))
    (table / "_delta_log").mkdir(parents=True)
    (table / "_delta_log" / "00000000000000000000.json").write_text(
        json.dumps({"add": {"path": f"country%3DUS/{committed}"}}) + "\n"
        + json.dumps({"remove": {"path": removed}}) + "\n")
    # A checkpoint holds a commit whose JSON a short log retention already dropped.
    pq.write_table(pa.table({"add": [{"path": checkpointed}, None]}),
                   table / "_delta_log" / "00000000000000000001.checkpoint.parquet")
    staging = table / "_headwater_staging" / RUN
    staging.mkdir(parents=True)
    (staging / "3.json").write_text(json.dumps({"files": [{"path": staged}]}))
    for name in (f"country=US/{committed}", removed, staged, checkpointed):
        _file(table, name, at=began + 5)
    _file(table, _ours("part-failed.parquet"), at=began + 5)
    _file(table, "country=US/" + _ours("part-failed-too.parquet"), at=began + 6)
    # Not the run's: an older run's, another run's tag, and another writer's in flight
    # (Spark's naming, written during the run, named by no commit yet).
    _file(table, _ours("part-older-run.parquet"), at=began - 60)
    other = _ours("part-other-run.parquet", "20261128T190500Z-123456")
    _file(table, other, at=began + 5)
    _file(table, "part-in-flight-c000.snappy.parquet", at=began + 5)

    assert sorted(drop_uncommitted_files(table, RUN)) == [
        _ours("part-failed-too.parquet"), _ours("part-failed.parquet")]
    left = sorted(p.name for p in table.rglob("part-*.parquet"))
    assert left == sorted([checkpointed, committed, "part-in-flight-c000.snappy.parquet",
                           _ours("part-older-run.parquet"), other, removed, staged])


def test_not_a_delta_table_or_not_local_is_left_alone(tmp_path: Path) -> None:
    _file(tmp_path / "t", _ours("part-x.parquet"), at=run_started(RUN) + 1)
    assert drop_uncommitted_files(tmp_path / "t", RUN) == []
    assert local_folder_of("s3a://bucket/lake/orders") is None
    assert local_folder_of("file:///lake/orders") == Path("/lake/orders")
