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


class FailsTheSecondCommit(DeltaDestination):
    """Its second checkpoint's tasks write their files, then the commit fails unlanded."""

    def commit_files(self, spark: Any, plan: Any, checkpoint: Any, files: Any,
                     marker: Any) -> Any:
        if checkpoint.index == plan.checkpoints[1].index:
            assert files.count() > 0  # the tasks ran and wrote their files
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
    # Only what the log names is left in the folder: the failed checkpoint's files are gone.
    assert _data_files(table) == committed
    assert spark.read.format("delta").load(str(table)).count() == 20
