"""A checkpoint that fails before its commit is aborted: the destination's ``abort``
drops what it left (here the fake's half-written staging), once every lane ended,
and what earlier checkpoints committed or staged stays as it was."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from headwater.destinations import CommitMarker, CommitResult
from headwater.destinations.testing import FakeDestination
from tests.integration._connections import connection_file, sync

pytestmark = pytest.mark.spark

SOURCE = {"seed": 3, "users": 10, "orders": 60, "rows_per_partition": 20}
OVERWRITE = [{"name": "orders", "sync_mode": "full_refresh",
              "destination_sync_mode": "overwrite"}]


class FailsStagingTheSecond(FakeDestination):
    """Writes the second checkpoint's staging half way (its ``.tmp``), then fails."""

    def stage(self, spark: Any, plan: Any, checkpoint: Any, rows: Any,
              marker: CommitMarker) -> CommitResult:
        if checkpoint.index == plan.checkpoints[1].index:
            self.calls.append((plan.stream.name, marker.app_id, marker.version, "stage"))
            self._staged_file(plan.stream.name, marker).with_suffix(".tmp").write_bytes(b"x")
            raise RuntimeError("the store went away while staging")
        return super().stage(spark, plan, checkpoint, rows, marker)


def test_a_checkpoint_that_fails_before_its_commit_leaves_no_staging(
        spark: Any, tmp_path: Path) -> None:
    path = connection_file(tmp_path, name="abort", source=SOURCE, streams=OVERWRITE,
                           checkpoint={"partitions_per_checkpoint": 1})
    destination = FailsStagingTheSecond({"path": str(tmp_path / "fake")})
    # A table from an earlier, successful run: committed data the abort must not touch.
    first = sync(path, FakeDestination({"path": str(tmp_path / "fake")}))
    before = destination.read_arrow("orders")
    assert before.num_rows == 60

    failed = sync(path, destination, expect="failed")
    staging = tmp_path / "fake" / "orders" / "staging" / failed.run_id
    staged = [version for _, _, version, kind in destination.calls if kind == "stage"]
    aborted = [version for _, _, version, kind in destination.calls if kind == "abort"]
    assert len(staged) == 2 and aborted == [staged[1]], destination.calls
    # The first checkpoint's staging is durable and stays; the second left no ``.tmp``.
    assert sorted(p.name for p in staging.iterdir()) == [f"{staged[0]}.parquet"]
    # The table readers see is the first run's, untouched.
    assert destination.read_arrow("orders").equals(before)
    assert destination.log("orders")[-1]["tag"] == FakeDestination(
        {"path": str(tmp_path / "fake")}).log("orders")[-1]["tag"]
    assert first.status == "succeeded"
