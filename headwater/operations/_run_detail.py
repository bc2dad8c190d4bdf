"""Per-partition and per-stream detail of one run, for ``headwater runs show`` and the web page."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from headwater.metadata_store import CheckpointRecord, RunRecord


def partition_rows(checkpoints: Sequence[CheckpointRecord]) -> list[dict[str, Any]]:
    """One row per partition the run committed: stream, checkpoint, and its figures.

    Figures come from the executors that read the partition (records read,
    written, rejected; output bytes; seconds; task retries).  A checkpoint
    committed by a killed attempt and found again on resume, or a run under
    Spark Connect, has no per-partition figures: its partitions are listed
    with ``None`` figures.
    """
    rows: list[dict[str, Any]] = []
    for checkpoint in checkpoints:
        figures = checkpoint.stats.get("partition_stats")
        if figures:
            rows += [{"stream": checkpoint.stream, "checkpoint": checkpoint.index,
                      "status": checkpoint.status, **f} for f in figures]
            continue
        for partition in checkpoint.stats.get("partitions", []):
            rows.append({"stream": checkpoint.stream, "checkpoint": checkpoint.index,
                         "status": checkpoint.status, "partition": partition,
                         "records_read": None, "records_written": None,
                         "records_rejected": None, "bytes": None, "duration_s": None,
                         "retries": None})
    return rows


def stream_rows(run: RunRecord) -> list[dict[str, Any]]:
    """The run's per-stream figures, each with the stream's state before and after."""
    before = run.state_before or {}
    after = run.state_after or {}
    return [{**stream, "state_before": before.get(stream.get("name")),
             "state_after": after.get(stream.get("name"))}
            for stream in (run.stats or {}).get("streams", [])]


def commit_id_key(run: RunRecord) -> str:
    """Under which key the run's destination records each commit's identifier
    (``delta_version``, ``snapshot_id``...), read from the destination it recorded."""
    from headwater.destinations import get_destination_class
    from headwater.errors import ConfigError

    kind = ((run.config_redacted or {}).get("destination") or {}).get("type") or "delta"
    try:
        return get_destination_class(kind).capabilities.commit_id
    except ConfigError:  # a destination this version does not know
        return "commit_version"


__all__ = ["commit_id_key", "partition_rows", "stream_rows"]
