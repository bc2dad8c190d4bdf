"""``append_dedup`` ties: the later checkpoint, then the later partition, then the later record.

Rows of one key with the same cursor value are told apart by where they came
from.  ``_hw_raw_id`` is ``<partition digest>-<record number>``: ordered as text,
record 9 beat records 10 and 11 of the same object, and across partitions the
digest (a hash) decided.  These tests commit through the destination itself, on
real Spark and Delta, with rows built so that both text orders are wrong.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from headwater.destinations._base import CommitMarker
from headwater.destinations.delta import DeltaDestination
from headwater.engine._task import _partition_digest
from headwater.plan import CheckpointPlan, StreamPlan
from headwater.sdk import Partition
from tests.integration._merge_ties import SCHEMA, STREAM, tie_rows

pytestmark = pytest.mark.spark

def _commit(spark: Any, tmp_path: Path, partitions: tuple[Partition, ...],
            records: list[tuple[Partition, int, int]], index: int = 1) -> int:
    """Commit ``records`` as checkpoint ``index``; return the version the table keeps for id 1."""
    import pyarrow as pa

    destination = DeltaDestination({"path": str(tmp_path / "lake")})
    checkpoint = CheckpointPlan(index=index, checkpoint_id=f"ckpt-{index}", lane=0,
                                partitions=partitions)
    plan = StreamPlan(stream=STREAM, state_before=None, lanes=1, checkpoints=(checkpoint,),
                      json_schema=SCHEMA)
    destination.prepare(spark, plan, pa.schema([pa.field("id", pa.int64()),
                                                pa.field("updated", pa.int64()),
                                                pa.field("version", pa.int64())]))
    marker = CommitMarker(app_id="test/items/0", version=index, run_id="run-1", stream="items",
                          checkpoint_index=index)
    destination.commit(spark, plan, checkpoint, tie_rows(spark, records, index), marker)
    table = spark.read.format("delta").load(str(tmp_path / "lake" / "items"))
    kept = table.select("version").collect()
    assert len(kept) == 1
    return int(kept[0]["version"])


def test_the_later_record_of_a_partition_wins_a_tie_as_a_number(
        spark: Any, tmp_path: Path) -> None:
    one = Partition(stream="items", id="objects/a.jsonl")
    # Records 0..11 of one object, every one at the same cursor: as text "9" > "11".
    kept = _commit(spark, tmp_path, (one,), [(one, n, n) for n in range(12)])
    assert kept == 11


def test_the_later_partition_of_a_checkpoint_wins_a_tie(spark: Any, tmp_path: Path) -> None:
    first = Partition(stream="items", id="window-1")
    second = Partition(stream="items", id="window-2")
    # Pick the order whose digests sort the wrong way, so the digest cannot decide.
    early, late = sorted((first, second), key=_partition_digest, reverse=True)
    kept = _commit(spark, tmp_path, (early, late), [(late, 0, 200), (early, 7, 100)])
    assert kept == 200


def test_the_later_checkpoint_wins_a_tie(spark: Any, tmp_path: Path) -> None:
    part = Partition(stream="items", id="p")
    assert _commit(spark, tmp_path, (part,), [(part, 5, 1)], index=1) == 1
    assert _commit(spark, tmp_path, (part,), [(part, 0, 2)], index=2) == 2
