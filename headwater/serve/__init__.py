"""``headwater serve``: run every connection of a folder on its cron ``schedule``.

See :class:`Scheduler` for the guarantees (no overlapping runs of one
connection, retries with back-off, the catch-up policy, reloading edited
files, stopping cleanly; :class:`RunsInProgress` carries a stop to the runs).
The clock is injected, so tests drive it.
"""

from headwater.serve._clock import Clock, SystemClock
from headwater.serve._health_watch import HealthWatch
from headwater.serve._running import RunsInProgress, Stoppable
from headwater.serve._scheduler import (
    Runner,
    RunOutcome,
    ScheduledFile,
    ScheduleEvent,
    Scheduler,
    SchedulerSnapshot,
    last_run_started,
    next_firing,
    scan_folder,
)

__all__ = [
    "Clock",
    "HealthWatch",
    "RunOutcome",
    "Runner",
    "RunsInProgress",
    "ScheduleEvent",
    "ScheduledFile",
    "Scheduler",
    "SchedulerSnapshot",
    "Stoppable",
    "SystemClock",
    "last_run_started",
    "next_firing",
    "scan_folder",
]
