"""A run that ended says what became of each partition it did not commit (issue 39 item 4):
the failing partition has the error, once; the others of its checkpoint were cancelled;
checkpoints never started say why.  It used to repeat the checkpoint's error on every
partition and show "No partition finished yet." after the run was over."""

from __future__ import annotations

from datetime import UTC, datetime

from headwater.metadata_store import CheckpointRecord
from headwater.ui._partition_outcomes import failing_partition, stream_outcomes

ERROR = "ConnectorError: HTTP 500 from the API (stream=users, partition=users:p2)"
PLANNED = {1: ["users:p1", "users:p2", "users:p3"], 2: ["users:p4"], 3: ["users:p10"]}


def _checkpoint(index: int, status: str, **stats: object) -> CheckpointRecord:
    return CheckpointRecord(run_id="r", stream="users", index=index,
                            checkpoint_id=f"c{index}", status=status, stats=dict(stats),
                            updated_at=datetime(2026, 11, 29, tzinfo=UTC))


def test_the_failing_partition_has_the_error_and_the_rest_say_why_not() -> None:
    found = stream_outcomes("users", PLANNED, [_checkpoint(1, "failed", error=ERROR)],
                            "failed", ERROR)
    assert found.errors == [{"stream": "users", "checkpoint_index": 1,
                             "partition_id": "users:p2", "message": ERROR}]
    outcomes = {p["partition_id"]: (p["status"], p["error"]) for p in found.partitions}
    assert outcomes == {
        "users:p1": ("cancelled", "cancelled: partition users:p2 of its checkpoint failed"),
        "users:p2": ("failed", ERROR),
        "users:p3": ("cancelled", "cancelled: partition users:p2 of its checkpoint failed"),
        "users:p4": ("not started", "not started: the stream stopped when checkpoint 1 failed"),
        "users:p10": ("not started",
                      "not started: the stream stopped when checkpoint 1 failed"),
    }


def test_an_error_naming_no_partition_is_the_checkpoints_said_once() -> None:
    commit = "DestinationError: the commit failed"
    found = stream_outcomes("users", PLANNED,
                            [_checkpoint(1, "committed"), _checkpoint(2, "released"),
                             _checkpoint(3, "failed", error=commit)], "failed",
                            "a checkpoint failed (see the log)")
    # A one-partition checkpoint's error is its partition's.
    assert found.errors == [{"stream": "users", "checkpoint_index": 3,
                             "partition_id": "users:p10", "message": commit}]
    assert [(p["partition_id"], p["status"]) for p in found.partitions] == [
        ("users:p10", "failed")]
    several = stream_outcomes("users", {1: ["users:p1", "users:p2"]},
                              [_checkpoint(1, "failed", error=commit)], "failed", commit)
    assert several.errors == [{"stream": "users", "checkpoint_index": 1,
                               "partition_id": None, "message": commit}]
    assert {p["status"] for p in several.partitions} == {"not committed"}


def test_a_stopped_or_running_run_and_a_stream_that_failed_before_reading() -> None:
    stopped = stream_outcomes("users", PLANNED, [_checkpoint(1, "released")], "stopped", None)
    assert stopped.errors == []
    assert [p["error"] for p in stopped.partitions] == [
        "not started: the run was stopped (the next sync resumes it here)"] * 2
    running = stream_outcomes("users", PLANNED, [_checkpoint(1, "released")], "running", None)
    assert running.partitions == []  # still to come
    early = stream_outcomes("users", PLANNED, [], "failed", "the table cannot be created")
    assert early.errors == [{"stream": "users", "checkpoint_index": None,
                             "partition_id": None, "message": "the table cannot be created"}]
    assert {p["error"] for p in early.partitions} == {
        "not started: the stream failed before it (see Errors)"}


def test_p1_is_not_taken_for_p10() -> None:
    assert failing_partition("boom (partition=p10)", ["p1", "p10"]) == "p10"
    assert failing_partition("boom (partition=p1, attempt=2)", ["p1", "p10"]) == "p1"
    assert failing_partition("boom", ["p1", "p10"]) is None
