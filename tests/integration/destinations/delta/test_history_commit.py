"""Headwater's own history commit against Spark's MERGE, on the same checkpoints (issue 38).

The own commit (``_history_commit.py``: closed versions marked by deletion vectors the
driver writes, new versions in task-written files, one conditional put of the next log
entry) is a fast path, used only because this test holds the tables it leaves equal to
the reference: the same syncs through Spark's MERGE (``writer: spark``).

The cases: the sample source's users over four generations (updates spread over the
keys, new keys, several files), with the log checkpointed every 2 commits so delta-rs
writes a checkpoint of the own commits' vectors that Spark then reads; keys closed in
one file twice, so a file's vector is read and extended; and the last sync of the own
table through Spark's MERGE, which must read the vectors the own commits wrote and
extend them.  Compared through Spark's reader: every row (all columns but the run's
own metadata), ``count()`` (which Delta answers from the files' statistics less the
vectors' cardinality) and a filtered read.
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest

from headwater.destinations.delta._history_commit import ENGINE_INFO
from headwater.table_schema import META_NAMES
from tests.integration._connections import connection_file, sync

pytestmark = pytest.mark.spark

STREAM = {"name": "users", "sync_mode": "incremental", "destination_sync_mode": "history",
          "cursor_field": "updated_at", "primary_key": ["id"],
          "table_properties": {"delta.checkpointInterval": "2"}}
GENERATIONS = 4


def source(generation: int) -> dict[str, Any]:
    return {"seed": 11, "users": 240, "orders": 0, "rows_per_partition": 60,
            "updates_per_generation": 70, "new_per_generation": 15,
            "generation": generation, "days_per_generation": 1}


def test_own_history_commits_leave_the_rows_spark_merge_leaves(tmp_path: Path,
                                                                 spark: Any) -> None:
    own, reference = tmp_path / "own", tmp_path / "reference"
    # The first sync appends into the empty table whoever writes: made once, copied.
    sync(connection_file(reference, name="h", source=source(0), streams=[STREAM],
                         writer="spark"))
    shutil.copytree(reference, own)
    for generation in range(1, GENERATIONS):
        last = generation == GENERATIONS - 1
        sync(connection_file(own, name="h", source=source(generation), streams=[STREAM],
                             writer="spark" if last else None))
        sync(connection_file(reference, name="h", source=source(generation), streams=[STREAM],
                             writer="spark"))
    own_table, reference_table = str(own / "lake" / "users"), str(reference / "lake" / "users")

    commits = spark.sql(f"DESCRIBE HISTORY delta.`{own_table}`").orderBy("version").collect()
    engines = [c["engineInfo"] or "" for c in commits]
    # create, the first sync's append, two own commits, then Spark's MERGE on top of them
    assert [e.startswith(ENGINE_INFO) for e in engines] == [False, False, True, True, False]
    assert engines[-1].startswith("Apache-Spark"), engines
    metrics = [c["operationMetrics"] for c in commits[2:4]]
    assert all(int(m["numTargetDeletionVectorsAdded"]) > 0 for m in metrics), metrics
    # the second own commit closed versions in files the first had put vectors on
    assert int(metrics[1]["numTargetDeletionVectorsUpdated"]) > 0, metrics
    assert (own / "lake" / "users" / "_delta_log" / f"{2:020d}.checkpoint.parquet").exists()

    def rows(location: str, where: str = "true") -> list[tuple[Any, ...]]:
        frame = spark.read.format("delta").load(location).where(where)
        compared = sorted(c for c in frame.columns if c not in META_NAMES)
        return sorted(tuple(r) for r in frame.select(*compared).collect())

    expected = rows(reference_table)
    assert rows(own_table) == expected
    assert len(expected) > 240 + 15 * (GENERATIONS - 1)  # closed versions are there too
    for where in ("_hw_is_current", "NOT _hw_is_current AND id % 3 = 0"):
        assert rows(own_table, where) == rows(reference_table, where), where
    counts = [spark.read.format("delta").load(t).count() for t in (own_table, reference_table)]
    assert counts == [len(expected)] * 2
