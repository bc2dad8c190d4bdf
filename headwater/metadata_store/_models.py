"""Plain records the metadata store hands back: no session, no lazy loading.

Every timestamp is an aware ``datetime`` in UTC.  JSON columns come back as
fresh ``dict``/``list`` objects, so a caller may change them freely.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from datetime import datetime
from typing import Any, Literal, TypeVar

R = TypeVar("R")

#: ``running`` until :meth:`MetadataStore.finish_run` / ``finish_attempt`` says otherwise.
#: ``stopped``: asked to stop, it ended after its commits in flight with checkpoints
#: left; unfinished like ``running`` (the next sync resumes it), but no process runs it.
#: ``warned``: succeeded (committed, state moved, finished), but a stream's result looks
#: wrong: every record it read was rejected, or its table has columns it no longer
#: writes (:func:`headwater.engine._results.stream_warnings`).  Kept to 16 characters, the
#: status columns' width.
RunStatus = Literal["running", "stopped", "succeeded", "warned", "failed"]
AttemptStatus = RunStatus
#: ``committed``: its data is durable; ``released``: its state moved too; ``failed``.
CheckpointStatus = Literal["committed", "released", "failed"]

RUN_STATUSES: frozenset[str] = frozenset({"running", "stopped", "succeeded", "warned",
                                          "failed"})
#: Runs that committed everything and finished: what a schedule, a sensor or a metric
#: counts as a success (``warned`` ones say so besides).
SUCCEEDED_STATUSES: frozenset[str] = frozenset({"succeeded", "warned"})
#: Runs the next sync of their connection resumes.
UNFINISHED_STATUSES: frozenset[str] = frozenset({"running", "stopped"})
#: What :meth:`MetadataStore.finish_run` may close a run with: then it never changes.
FINISHED_STATUSES: frozenset[str] = RUN_STATUSES - UNFINISHED_STATUSES
#: How an attempt may end: a stopped attempt leaves its run ``stopped``.
ATTEMPT_END_STATUSES: frozenset[str] = FINISHED_STATUSES | {"stopped"}
CHECKPOINT_STATUSES: frozenset[str] = frozenset({"committed", "released", "failed"})
#: Checkpoints whose records are durable in the destination: what a run's figures sum.
DURABLE_CHECKPOINT_STATUSES: frozenset[str] = frozenset({"committed", "released"})


@dataclass(frozen=True)
class AttemptRecord:
    """One try at executing a run's plan, by one process.

    An attempt killed before it could finish stays ``running`` until the next
    attempt of the same run starts and marks it ``failed``.
    """

    run_id: str
    number: int
    status: str
    pid: int
    host: str
    started_at: datetime
    ended_at: datetime | None
    error: str | None


@dataclass(frozen=True)
class RunRecord:
    """One sync (or other run ``kind``) of a connection.

    ``plan`` is exactly what the engine persisted before reading any data, so
    a resumed attempt re-executes the same checkpoints.  ``state_after`` and
    ``ended_at`` are ``None`` while the run is ``running``; a ``stopped`` run
    has both (when it stopped, the state then) until an attempt resumes it.
    """

    run_id: str
    connection: str
    kind: str
    status: str
    started_at: datetime
    ended_at: datetime | None
    plan: dict[str, Any]
    state_before: dict[str, Any]
    state_after: dict[str, Any] | None
    stats: dict[str, Any]
    error: str | None
    config_redacted: dict[str, Any]
    attempts: list[AttemptRecord] = field(default_factory=list)


@dataclass(frozen=True)
class RunSummary:
    """A run without its plan, states and config: what a list of many runs needs.

    Read by :meth:`MetadataStore.list_run_summaries`, which never loads the
    (possibly large) plan of each run.  ``stats`` is empty while the run is
    ``running``.
    """

    run_id: str
    connection: str
    kind: str
    status: str
    started_at: datetime
    ended_at: datetime | None
    stats: dict[str, Any]
    error: str | None


@dataclass(frozen=True)
class LiveFigure:
    """Records read so far by one partition of a checkpoint that has not ended yet, as its
    task last reported them (``headwater.engine._live_progress``); gone once it commits."""

    stream: str
    checkpoint_index: int
    partition_id: str
    records: int
    updated_at: datetime


@dataclass(frozen=True)
class RunLogLine:
    """One log line a run emitted while it ran (its message already masked)."""

    seq: int
    at: datetime
    level: str
    logger: str
    message: str


@dataclass(frozen=True)
class CheckpointRecord:
    """What happened to one checkpoint of a run.

    ``stats`` holds what the engine recorded: ``records_read``,
    ``records_written``, ``records_rejected``, ``bytes``, ``duration_s``,
    ``attempt``, ``delta_version`` and per-partition stats.
    """

    run_id: str
    stream: str
    index: int
    checkpoint_id: str
    status: str
    stats: dict[str, Any]
    updated_at: datetime


@dataclass(frozen=True)
class StateHistoryRecord:
    """One saved state of a stream; ``state is None`` marks a reset."""

    connection: str
    stream: str
    state: dict[str, Any] | None
    run_id: str | None
    checkpoint_index: int | None
    saved_at: datetime


@dataclass(frozen=True)
class LockHolder:
    """Who holds (or held) the lock of a connection, as stored in the ``locks`` table."""

    connection: str
    pid: int
    host: str
    started_at: datetime
    heartbeat_at: datetime
    run_id: str | None


def record_from_row(cls: type[R], row: Any, *, columns: Mapping[str, str] | None = None,
                    **values: Any) -> R:
    """A record of ``cls`` from a table row: each field from the column of its name
    (or the one ``columns`` maps it to), except those given in ``values``."""
    mapping = row._mapping
    columns = columns or {}
    found = {f.name: mapping[columns.get(f.name, f.name)] for f in fields(cls)  # type: ignore[arg-type]
             if f.name not in values and columns.get(f.name, f.name) in mapping}
    return cls(**found, **values)
