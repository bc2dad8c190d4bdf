"""An Iceberg checkpoint that fails before its commit: its tasks' files are removed by the
destination's ``abort``; every file a snapshot references (on any branch) stays."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from headwater.destinations.iceberg import IcebergDestination
from tests.integration._connections import connection_file, sync
from tests.integration.destinations.iceberg._catalogs import iceberg_config, load_table

pytestmark = pytest.mark.spark

SOURCE = {"seed": 5, "users": 10, "orders": 60, "rows_per_partition": 20}
APPEND = {"name": "orders", "sync_mode": "incremental", "destination_sync_mode": "append",
          "cursor_field": "updated_at"}
OVERWRITE = {"name": "orders", "sync_mode": "full_refresh", "destination_sync_mode": "overwrite"}


#: A file another writer of the table (Spark's naming) wrote and has not committed yet.
IN_FLIGHT = "00000-0-4a1f2c3d-5e6f-4a7b-8c9d-0e1f2a3b4c5d-0-00001.parquet"


class FailsTheLastCheckpoint(IcebergDestination):
    """Its last checkpoint's tasks write their files, then the commit (or staging) fails;
    meanwhile another writer left a file of its own in the table's data folder."""

    def _fails(self, plan: Any, checkpoint: Any, files: Any) -> None:
        if checkpoint.index == plan.checkpoints[-1].index:
            assert files.count() > 0  # the tasks ran and wrote their files
            folder = Path(self._folders[plan.stream.name].local_path())
            (folder / IN_FLIGHT).write_bytes(b"PAR1")
            raise RuntimeError("the commit did not land")

    def commit_files(self, spark: Any, plan: Any, checkpoint: Any, files: Any,
                     marker: Any) -> Any:
        self._fails(plan, checkpoint, files)
        return super().commit_files(spark, plan, checkpoint, files, marker)

    def stage_files(self, spark: Any, plan: Any, checkpoint: Any, files: Any,
                    marker: Any) -> Any:
        self._fails(plan, checkpoint, files)
        return super().stage_files(spark, plan, checkpoint, files, marker)


def _referenced(table: Any) -> set[str]:
    return {Path(entry.data_file.file_path).name
            for snapshot in table.snapshots() for manifest in snapshot.manifests(table.io)
            for entry in manifest.fetch_manifest_entry(table.io, discard_deleted=False)}


@pytest.mark.parametrize("stream", [APPEND, OVERWRITE], ids=["append", "staged-overwrite"])
def test_a_failed_checkpoint_leaves_no_files_and_referenced_ones_stay(
        spark: Any, tmp_path: Path, stream: dict[str, Any]) -> None:
    config = iceberg_config(tmp_path)
    path = connection_file(tmp_path, name="abort", source=SOURCE, streams=[stream],
                           checkpoint={"partitions_per_checkpoint": 1,
                                       "concurrent_checkpoints": 1},
                           destination={"type": "iceberg", "config": config})
    sync(path, FailsTheLastCheckpoint(config), expect="failed")
    table = load_table(config, "orders")
    referenced = _referenced(table)
    assert len(referenced) >= 2, "the earlier checkpoints committed (or staged) their files"
    data = Path(table.location().removeprefix("file://")) / "data"
    # The run's unreferenced files are gone; the other writer's in flight is not the run's.
    assert {p.name for p in data.rglob("*.parquet")} == referenced | {IN_FLIGHT}
