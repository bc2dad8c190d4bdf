"""Headwater's metadata store: everything about a connection that is not data.

State of each stream (with its history), checkpoint index counters, runs with
their plans, attempts, checkpoints and log lines, and the lock that keeps two syncs of one
connection from running at once.  SQLite in ``.headwater/headwater.db`` by
default, any PostgreSQL URL for a team; see :class:`MetadataStore`.
"""

from headwater.metadata_store._figures import (
    DurationHistogram,
    ExpectationTotals,
    LastRun,
    RunCount,
    StoreFigures,
    StreamState,
    StreamTotals,
)
from headwater.metadata_store._lock import LockHandle
from headwater.metadata_store._models import (
    DURABLE_CHECKPOINT_STATUSES,
    SUCCEEDED_STATUSES,
    UNFINISHED_STATUSES,
    AttemptRecord,
    AttemptStatus,
    CheckpointRecord,
    CheckpointStatus,
    LiveFigure,
    LockHolder,
    RunLogLine,
    RunRecord,
    RunStatus,
    RunSummary,
    StateHistoryRecord,
)
from headwater.metadata_store._schema import SCHEMA_VERSION
from headwater.metadata_store._store import FIRST_CHECKPOINT_INDEX, MetadataStore

__all__ = [
    "DURABLE_CHECKPOINT_STATUSES",
    "FIRST_CHECKPOINT_INDEX",
    "SCHEMA_VERSION",
    "SUCCEEDED_STATUSES",
    "UNFINISHED_STATUSES",
    "AttemptRecord",
    "AttemptStatus",
    "CheckpointRecord",
    "CheckpointStatus",
    "DurationHistogram",
    "ExpectationTotals",
    "LastRun",
    "LiveFigure",
    "LockHandle",
    "LockHolder",
    "MetadataStore",
    "RunCount",
    "RunLogLine",
    "RunRecord",
    "RunStatus",
    "RunSummary",
    "StateHistoryRecord",
    "StoreFigures",
    "StreamState",
    "StreamTotals",
]
