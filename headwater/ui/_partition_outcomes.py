"""What became of each planned partition of a run that did not commit it, in words.

A failed checkpoint records one error for all its partitions.  Repeating it on
each of them (what the run page did) hides which partition failed; and a run
that ended left its unread partitions out of the page altogether ("No
partition finished yet." after the run was over).  Here each one gets its own
outcome: the partition the error names has the error; the others of its
checkpoint were cancelled when it failed; checkpoints never started say why
(the stream stopped at a failed checkpoint, the run was stopped...).

The failing partition is read from the error: a task adds ``partition=ID`` to the
error of the partition it was reading (:mod:`headwater.engine._task`).  An error
that names none (a commit that failed) belongs to the checkpoint, said once.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from headwater.metadata_store import DURABLE_CHECKPOINT_STATUSES, CheckpointRecord


def failing_partition(error: str | None, ids: Sequence[str]) -> str | None:
    """The partition of ``ids`` that ``error`` names (``partition=ID``), the only one
    when the checkpoint had one, else ``None``."""
    if len(ids) == 1:
        return ids[0]
    if not error:
        return None
    for pid in sorted(ids, key=len, reverse=True):  # "p1" must not match "p10"
        if f"partition={pid})" in error or f"partition={pid}," in error:
            return pid
    return None


@dataclass
class StreamOutcomes:
    """One stream's errors (once each) and the rows of its partitions not committed."""

    errors: list[dict[str, Any]] = field(default_factory=list)
    partitions: list[dict[str, Any]] = field(default_factory=list)


def _row(index: int, pid: str, status: str, why: str) -> dict[str, Any]:
    return {"checkpoint_index": index, "partition_id": pid, "records": None, "bytes": None,
            "duration_s": None, "status": status, "error": why}


def stream_outcomes(name: str, planned: Mapping[int, Sequence[str]],
                    checkpoints: Sequence[CheckpointRecord], run_status: str,
                    stream_error: str | None) -> StreamOutcomes:
    """Errors and uncommitted partitions of stream ``name`` (``planned``: checkpoint
    index -> partition ids, the run's plan; ``checkpoints``: the stream's records)."""
    found = StreamOutcomes()
    recorded = {c.index: c for c in checkpoints}
    failed_at = min((c.index for c in checkpoints if c.status == "failed"), default=None)
    for index in sorted(planned):
        ids = list(planned[index])
        record = recorded.get(index)
        if record is not None and record.status in DURABLE_CHECKPOINT_STATUSES:
            continue  # its partitions are the committed ones, with their figures
        if record is not None and record.status == "failed":
            error = str(record.stats.get("error") or "checkpoint failed")
            culprit = failing_partition(error, ids)
            found.errors.append({"stream": name, "checkpoint_index": index,
                                 "partition_id": culprit, "message": error})
            for pid in ids:
                if pid == culprit:
                    found.partitions.append(_row(index, pid, "failed", error))
                elif culprit is not None:
                    found.partitions.append(_row(
                        index, pid, "cancelled",
                        f"cancelled: partition {culprit} of its checkpoint failed"))
                else:
                    found.partitions.append(_row(
                        index, pid, "not committed",
                        f"not committed: checkpoint {index} failed (see Errors)"))
            continue
        if run_status == "running" or record is not None:
            continue  # still to come (or in flight)
        found.partitions += [_row(index, pid, "not started",
                                  _why_not_started(run_status, failed_at, stream_error))
                             for pid in ids]
    said = {e["message"] for e in found.errors}
    if stream_error and stream_error not in said and not (
            found.errors and stream_error.startswith("a checkpoint failed")):
        found.errors.insert(0, {"stream": name, "checkpoint_index": None,
                                "partition_id": None, "message": stream_error})
    return found


def _why_not_started(run_status: str, failed_at: int | None, stream_error: str | None) -> str:
    if failed_at is not None:
        return f"not started: the stream stopped when checkpoint {failed_at} failed"
    if run_status == "stopped":
        return "not started: the run was stopped (the next sync resumes it here)"
    if stream_error:
        return "not started: the stream failed before it (see Errors)"
    return f"not started: the run ended {run_status} before it"


__all__ = ["StreamOutcomes", "failing_partition", "stream_outcomes"]
