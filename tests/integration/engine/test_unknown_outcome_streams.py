"""What the other streams of a run do when one commit's outcome is unknown.

In-process, real Spark, the fake destination (``FakeDestination`` of
``headwater.destinations.testing``) made
to raise :class:`~headwater.errors.CommitOutcomeUnknownError` after one of
``users``' commits landed (the classification itself is each real
destination's, tested with them).  Every stream starts no further checkpoint
(as on a stop request); the checkpoint ``orders`` had in flight commits; the run
is ``stopped``, and resumed, it finishes both streams with every row once.
"""

from __future__ import annotations

import threading
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from headwater.connectors.sample import SampleSource
from headwater.destinations.testing import FakeDestination
from headwater.errors import CommitOutcomeUnknownError, ExitCode
from tests.integration._connections import connection_file, engine

pytestmark = pytest.mark.spark

SOURCE = {"seed": 3, "users": 300, "orders": 300, "rows_per_partition": 100}
STREAMS = [{"name": "users", "sync_mode": "incremental", "destination_sync_mode": "append",
            "cursor_field": "updated_at"},
           {"name": "orders", "sync_mode": "full_refresh", "destination_sync_mode": "append"}]
#: A guard against a hang if the engine never reaches the moment waited for.
GUARD_S = 300


class LosesUsersSecondAnswer(FakeDestination):
    """``users``' second commit lands, then raises as a destination whose lookup failed;
    ``orders``' first commit waits for that, so it is in flight when it happens."""

    def __init__(self, config: dict[str, Any]) -> None:
        super().__init__(config)
        self.users_commits = 0
        self.raised = threading.Event()

    def commit(self, spark: Any, plan: Any, checkpoint: Any, rows: Any, marker: Any) -> Any:
        if plan.stream.name == "orders" and not self.raised.is_set():
            assert self.raised.wait(GUARD_S), "users' unknown outcome never came"
        result = super().commit(spark, plan, checkpoint, rows, marker)
        if plan.stream.name == "users":
            self.users_commits += 1
            if self.users_commits == 2:
                self.raised.set()
                raise CommitOutcomeUnknownError(
                    f"commit of checkpoint {marker.checkpoint_index} to the fake table",
                    error="OSError: answer lost", lookup="OSError: unreachable",
                    stream="users", checkpoint=marker.checkpoint_index)
        return result


def _ids(destination: FakeDestination, stream: str) -> Counter[int]:
    return Counter(destination.read_arrow(stream).column("id").to_pylist())


def test_every_stream_stops_after_its_commit_in_flight_and_the_resumed_run_lands_all_once(
        spark: Any, tmp_path: Path) -> None:
    path = connection_file(tmp_path, name="halt", source=SOURCE, streams=STREAMS,
                           checkpoint={"partitions_per_checkpoint": 1})
    lake = {"path": str(tmp_path / "fake")}
    first = engine(path, LosesUsersSecondAnswer(lake)).run()
    assert first.status == "stopped" and first.exit_code == ExitCode.FAILED, first.to_dict()
    users, orders = first.streams
    assert (users.status, users.outcome_unknown, users.checkpoints_done) == ("stopped", True, 1)
    assert "could not check whether checkpoint" in (users.error or "")
    # orders' first checkpoint was in flight: it committed, and no other started.
    assert (orders.status, orders.checkpoints_done, orders.error) == ("stopped", 1, None)
    assert first.stop_reason is not None and first.stop_reason.startswith("users: commit of")

    fake = FakeDestination(lake)
    resumed = engine(path, fake).run()
    assert (resumed.run_id, resumed.status) == (first.run_id, "succeeded"), resumed.to_dict()
    assert ("users", 2) not in {(name, version) for name, _, version, _ in fake.calls}
    for stream in ("users", "orders"):
        ids = _ids(fake, stream)
        expected = SampleSource(SOURCE).expected_rows(stream).column("id").to_pylist()
        assert ids == Counter(expected), stream  # every row once: none lost, none twice
