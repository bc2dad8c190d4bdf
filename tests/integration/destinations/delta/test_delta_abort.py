"""A Delta checkpoint that fails before its commit: its tasks' files are removed by the
destination's ``abort``, and every committed file (and row) stays."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from deltalake import DeltaTable

from headwater.destinations.delta import DeltaDestination
from tests.integration._connections import connection_file, sync

pytestmark = pytest.mark.spark

SOURCE = {"seed": 5, "users": 10, "orders": 60, "rows_per_partition": 20}
APPEND = [{"name": "orders", "sync_mode": "incremental", "destination_sync_mode": "append",
           "cursor_field": "updated_at"}]


#: Files other writers of the table have written and not committed yet, meanwhile: a
#: user's job (Spark's naming) and another Headwater run (another run's tag).
IN_FLIGHT = ("part-00000-0b6f0e7a-5d2c-4d7e-9a51-3f2b8f1c0a11-c000.snappy.parquet",
             "part-1c3e5a7b-2d4f-4a6b-8c0d-9e1f2a3b4c5d-c000.hw-20200101T000000Z-abcdef"
             ".snappy.parquet")


class FailsTheSecondCommit(DeltaDestination):
    """Its second checkpoint's tasks write their files, then the commit fails unlanded;
    meanwhile other writers left files of their own in the table's folder."""

    def commit_files(self, spark: Any, plan: Any, checkpoint: Any, files: Any,
                     marker: Any) -> Any:
        if checkpoint.index == plan.checkpoints[1].index:
            assert files.count() > 0  # the tasks ran and wrote their files
            for name in IN_FLIGHT:
                (Path(self.table_location(plan.stream.name)) / name).write_bytes(b"PAR1")
            raise RuntimeError("the commit did not land")
        return super().commit_files(spark, plan, checkpoint, files, marker)


def _data_files(table: Path) -> set[str]:
    return {p.name for p in table.rglob("*.parquet") if not p.relative_to(table).parts[0]
            .startswith("_")}


def test_a_failed_checkpoint_leaves_no_files_and_the_committed_ones_stay(
        spark: Any, tmp_path: Path) -> None:
    path = connection_file(tmp_path, name="abort", source=SOURCE, streams=APPEND,
                           checkpoint={"partitions_per_checkpoint": 1,
                                       "concurrent_checkpoints": 1})
    lake = tmp_path / "lake"
    sync(path, FailsTheSecondCommit({"path": str(lake)}), expect="failed")
    table = lake / "orders"
    committed = {Path(uri).name for uri in DeltaTable(str(table)).file_uris()}
    assert committed, "the first checkpoint committed"
    # Only what the log names is left of the run's files: the failed checkpoint's are gone;
    # other writers' files in flight are not the run's to remove.
    assert _data_files(table) == committed | set(IN_FLIGHT)
    assert spark.read.format("delta").load(str(table)).count() == 20
