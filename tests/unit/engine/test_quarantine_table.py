"""The quarantine table is one more stream to the destination: an ``append`` table named
``<stream>_quarantine`` over the same checkpoints, committed under the checkpoint's marker
with ``_quarantine`` added to its app id (``headwater/engine/_quarantine.py``)."""

from __future__ import annotations

from typing import Any

import pyarrow as pa

from headwater.destinations._base import CommitMarker
from headwater.engine._commit_routes import CommitRows
from headwater.engine._quarantine import QuarantineTable
from headwater.expectations._quarantine import quarantine_columns, quarantine_plan
from headwater.plan import CheckpointPlan, ConfiguredStream, StreamPlan, TableLayout
from headwater.sdk import Partition


def _plan() -> StreamPlan:
    stream = ConfiguredStream("users", "incremental", "append_dedup", "updated_at", ("id",),
                              table_layout=TableLayout(partition_by=("country",)),
                              deletes="hard")
    checkpoints = (CheckpointPlan(7, "c7", 1, (Partition("users", "p1", {}),)),)
    return StreamPlan(stream, {"cursor": 1}, 2, checkpoints, {"type": "object"})


def test_its_plan_is_an_append_table_of_the_same_checkpoints() -> None:
    plan = _plan()

    own = quarantine_plan(plan)

    assert own.stream.name == "users_quarantine"
    assert own.stream.destination_sync_mode == "append"
    assert (own.stream.primary_key, own.stream.cursor_field) == ((), None)
    assert own.stream.table_layout.is_default and own.stream.deletes == "soft"
    assert own.checkpoints == plan.checkpoints and own.lanes == plan.lanes
    assert own.state_before is None


def test_its_columns_and_marker() -> None:
    data = pa.schema([("id", pa.int64()), ("country", pa.string())])
    assert quarantine_columns(data).names == ["id", "country", "_hw_failed_expectations"]
    destination: Any = None
    table = QuarantineTable(destination, quarantine_plan(_plan()), CommitRows(destination),
                            pa.schema([]))
    marker = CommitMarker(app_id="hw:store:conn:users:1", version=7, run_id="r", stream="users",
                          checkpoint_index=7, partition_states={"p1": {"a": 1}}, attempt=2)

    own = table.marker(marker)

    assert (own.app_id, own.version, own.run_id, own.checkpoint_index, own.attempt) == (
        "hw:store:conn:users:1_quarantine", 7, "r", 7, 2)
    assert own.stream == "users_quarantine" and own.partition_states is None
