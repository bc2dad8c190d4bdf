"""The CLI's progress bars, fed the events the engine emits."""

from __future__ import annotations

import io

from rich.console import Console

from headwater.cli._render import ProgressObserver
from headwater.destinations import CommitResult
from headwater.engine import StreamStats
from headwater.engine._plan import group_checkpoints
from headwater.plan import ConfiguredStream, RunPlan, StreamPlan
from headwater.sdk import Partition

PARTS = [Partition("users", f"p{i}", {"start": i, "end": i + 1}) for i in range(3)]
PLAN = RunPlan("c", (StreamPlan(
    ConfiguredStream("users", "incremental", "append", "updated_at", ("id",)), None, 1,
    group_checkpoints(PARTS, first_index=1, per_checkpoint=1, lanes=1, overwrite=False)),))


def bar_after(events: list[tuple[str, tuple[object, ...]]]) -> tuple[str, float, float, int]:
    """The stream's bar (as printed when the run ends, completed, total, rows) after
    ``events`` (observer method and arguments) from a run of :data:`PLAN`."""
    out = io.StringIO()
    observer = ProgressObserver(Console(file=out, width=120, color_system=None))
    with observer:
        for method, args in events:
            getattr(observer, method)(*args)
    [task] = observer.progress.tasks
    return out.getvalue(), task.completed, task.total or 0, task.fields["rows"]


def committed(rows: int) -> tuple[str, tuple[object, ...]]:
    return "checkpoint_committed", ("users", 1, CommitResult(rows=rows, rejected=0, bytes=1,
                                                              version=3))


def finished(records: int) -> tuple[str, tuple[object, ...]]:
    stats = StreamStats(name="users", mode="incremental+append", status="succeeded",
                        records_read=records, records_written=records, partitions=3,
                        checkpoints=3, checkpoints_done=3)
    return "stream_finished", (stats,)


def test_a_resumed_run_starts_where_earlier_attempts_left_and_ends_full() -> None:
    """The second attempt of a run whose first released two of three checkpoints (100
    rows each): the bar starts at 2/3 and 200 rows, ends at 3/3 and 300, as the
    summary (the run's figures, over every attempt) says."""
    text, completed, total, rows = bar_after([
        ("run_started", ("run-1", PLAN, True)), ("stream_resumed", ("users", 2, 200)),
        ("checkpoint_started", ("users", 3)), committed(100), finished(300)])
    assert (completed, total, rows) == (3, 3, 300)
    assert "Resuming run run-1" in text
    assert "3/3 partitions" in text and "300 rows" in text


def test_a_new_run_counts_from_zero() -> None:
    text, completed, total, rows = bar_after([
        ("run_started", ("run-1", PLAN, False)), committed(100), committed(100)])
    assert (completed, total, rows) == (2, 3, 200)
    assert "Starting run run-1" in text and "2/3 partitions" in text
