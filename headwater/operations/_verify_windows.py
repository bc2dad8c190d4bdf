"""Which windows ``headwater verify`` compares, and which partitions re-read one.

The windows are the partitions past runs committed, as the metadata store
persisted them with each run's plan (as ``headwater replay`` finds them), or
those a backfill of a window the user gives would read
(:meth:`~headwater.sdk.Stream.window_partitions`).  Partitions whose rows in the
table are the same (:meth:`~headwater.sdk.Stream.table_window` equal: the same
cursor window in two runs, the parts of one large object) are one window.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from headwater.metadata_store import (
    DURABLE_CHECKPOINT_STATUSES,
    UNFINISHED_STATUSES,
    MetadataStore,
)
from headwater.plan import RunPlan
from headwater.sdk import Partition, RowWindow, Stream
from headwater.sync_modes import DestinationSyncMode

__all__ = ["Window", "group_windows", "repair_partitions", "run_partitions"]

#: The most runs looked at when ``--since`` names a moment (newest first).
MOST_RUNS = 1000


@dataclass(frozen=True)
class Window:
    """One window of a stream: its rows in the table, and the partitions that read it."""

    rows: RowWindow
    partitions: tuple[Partition, ...]


def run_partitions(store: MetadataStore, connection: str, stream: str, *,
                   mode: DestinationSyncMode, runs: int = 1,
                   since: datetime | None = None) -> list[Partition]:
    """The partitions of ``stream`` committed by the connection's last ``runs`` finished
    syncs that read it (or by every sync started at or after ``since``), oldest first.
    Backfills and replays (and so repairs) re-read windows of those; ``--from/--to``
    verifies a backfilled window of its own.

    An ``overwrite`` table holds one run's rows: only the last run counts.
    """
    found: list[Partition] = []
    taken = 0
    wanted = 1 if mode is DestinationSyncMode.OVERWRITE else runs
    for run in store.list_runs(connection, limit=MOST_RUNS if since else max(wanted * 4, 20)):
        if since is not None and _utc(run.started_at) < _utc(since):
            break
        if run.kind != "sync" or run.status in UNFINISHED_STATUSES or run.status == "failed":
            continue  # a backfill or replay (a repair) re-read windows syncs planned
        partitions = _committed(store, run.run_id, RunPlan.from_dict(run.plan), stream)
        if not partitions:
            continue
        found = partitions + found
        taken += 1
        if since is None and taken >= wanted:
            break
        if mode is DestinationSyncMode.OVERWRITE:
            break
    return found


def _committed(store: MetadataStore, run_id: str, plan: RunPlan, stream: str) -> list[Partition]:
    """The partitions of ``stream`` a run committed (a staged overwrite only if published)."""
    checkpoints = [c for c in store.list_checkpoints(run_id) if c.stream == stream]
    published = any("published" in c.stats for c in checkpoints)
    committed = {c.index for c in checkpoints if c.status in DURABLE_CHECKPOINT_STATUSES
                 and (not c.stats.get("staged") or published)}
    return [p for s in plan.streams if s.stream.name == stream
            for c in s.checkpoints if c.index in committed for p in c.partitions]


def group_windows(stream: Stream, partitions: Sequence[Partition]) -> list[Window]:
    """``partitions`` as windows, in first-seen order; equal table windows are one.

    Raises :class:`~headwater.sdk.CannotCountWindow` for a partition with no window.
    """
    grouped: dict[RowWindow, list[Partition]] = {}
    for partition in partitions:
        rows = stream.table_window(partition)
        grouped.setdefault(rows, []).append(partition)
    return [Window(rows, tuple(parts)) for rows, parts in grouped.items()]


def repair_partitions(stream: Stream, windows: Sequence[Window]) -> list[Partition]:
    """What re-reads ``windows``, once each: a cursor window ``[start, end)`` through the
    stream's own :meth:`~headwater.sdk.Stream.window_partitions` (what ``backfill``
    reads: every row of the window now, no boundary filter of a past plan), any other
    window (objects, a key range, the cursor's NULL rows) by its own partitions."""
    chosen: dict[str, Partition] = {}
    for window in windows:
        for partition in _rereads(stream, window):
            chosen.setdefault(partition.id, partition)
    return list(chosen.values())


def _rereads(stream: Stream, window: Window) -> list[Partition]:
    bounds = _cursor_bounds(stream, window.partitions[0])
    if bounds is None:
        return list(window.partitions)
    return stream.window_partitions(*bounds)


def _cursor_bounds(stream: Stream, partition: Partition) -> tuple[Any, Any] | None:
    """The stored ``(start, end)`` of a cursor window partition, None for any other."""
    converter = stream.state_converter
    start, end = partition.params.get("start"), partition.params.get("end")
    if converter is None or not stream.cursor_field or start is None or end is None:
        return None
    try:
        return (start, end) if converter.parse(start) < converter.parse(end) else None
    except Exception:  # not values of the cursor (a byte range): not a cursor window
        return None


def _utc(moment: datetime) -> datetime:
    """``moment`` as an aware UTC time (the store keeps UTC, with or without its zone)."""
    return moment.replace(tzinfo=UTC) if moment.tzinfo is None else moment.astimezone(UTC)
