"""Totals over the whole store, computed by the database: what metrics and overviews read.

Every figure here is one aggregate query, so a scrape costs the same on a store
with ten runs as on one with ten thousand (no run's plan or stats is loaded
into Python).  What each query touches:

* run counts, durations and last runs: the ``runs`` table's narrow columns
  (``connection``, ``kind``, ``status``, ``started_at``, ``ended_at``), which
  SQLite keeps ahead of the JSON columns in each row;
* stream totals: one JSON value per checkpoint row (``json_extract`` on SQLite,
  ``->>`` on PostgreSQL).  This is the one figure that reads JSON: its cost
  grows with the number of checkpoint rows (see :func:`stream_totals`);
* current states: one row per stream.

All of them are read in one transaction (:meth:`MetadataStore.figures`), so
they describe one moment: a run never counts as finished in one figure and
running in another.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import sqlalchemy as sa
from sqlalchemy.dialects import postgresql
from sqlalchemy.engine import Connection
from sqlalchemy.sql.elements import ColumnElement

from headwater.metadata_store import _schema as t

#: Checkpoint statuses whose records are durable in the destination.
_DURABLE = ("committed", "released")

#: The numeric checkpoint stats that are summed per stream (keys of ``CheckpointRecord.stats``).
_SUMMED = ("records_written", "records_rejected", "bytes")


@dataclass(frozen=True)
class RunCount:
    """How many runs of one connection have one kind and status."""

    connection: str
    kind: str
    status: str
    count: int


@dataclass(frozen=True)
class DurationHistogram:
    """Durations of a connection's ended runs, bucketed by the database.

    ``buckets`` pairs each upper bound (seconds) with the count of runs that
    took at most that long (cumulative, as Prometheus histograms count);
    ``count`` and ``sum_s`` cover every ended run.
    """

    connection: str
    buckets: tuple[tuple[float, int], ...]
    count: int
    sum_s: float


@dataclass(frozen=True)
class LastRun:
    """A connection's newest ended run (``None`` fields: it has none), and its newest
    successful sync's end."""

    connection: str
    kind: str | None
    status: str | None
    started_at: datetime | None
    ended_at: datetime | None
    last_success_at: datetime | None


@dataclass(frozen=True)
class StreamTotals:
    """What a stream's durable checkpoints hold, over every run of the store."""

    connection: str
    stream: str
    checkpoints: int
    records_written: int
    records_rejected: int
    bytes: int


@dataclass(frozen=True)
class StreamState:
    """A stream's current state, as :meth:`MetadataStore.get_states` has it."""

    connection: str
    stream: str
    state: dict[str, Any] | None
    updated_at: datetime


@dataclass(frozen=True)
class StoreFigures:
    """Everything :func:`read_figures` computes, from one transaction."""

    run_counts: list[RunCount]
    durations: list[DurationHistogram]
    last_runs: list[LastRun]
    stream_totals: list[StreamTotals]
    states: list[StreamState]


def read_figures(conn: Connection, duration_buckets: Sequence[float]) -> StoreFigures:
    """Every figure of the store, inside the caller's transaction."""
    return StoreFigures(
        run_counts=run_counts(conn),
        durations=run_durations(conn, duration_buckets),
        last_runs=last_runs(conn),
        stream_totals=stream_totals(conn),
        states=current_states(conn),
    )


def run_counts(conn: Connection) -> list[RunCount]:
    r = t.runs
    query = (sa.select(r.c.connection, r.c.kind, r.c.status, sa.func.count())
             .group_by(r.c.connection, r.c.kind, r.c.status)
             .order_by(r.c.connection, r.c.kind, r.c.status))
    return [RunCount(*row) for row in conn.execute(query)]


def _seconds_between(conn: Connection, start: Any, end: Any) -> ColumnElement[Any]:
    """``end - start`` in seconds, on either database (SQLite keeps times as text)."""
    if conn.dialect.name == "sqlite":
        return (sa.func.julianday(end) - sa.func.julianday(start)) * 86400.0
    return sa.extract("epoch", sa.type_coerce(end, sa.DateTime(timezone=True))
                      - sa.type_coerce(start, sa.DateTime(timezone=True)))


def run_durations(conn: Connection, buckets: Sequence[float]) -> list[DurationHistogram]:
    """Per connection, its ended runs (``succeeded``, ``failed``, ``stopped``) bucketed."""
    r = t.runs
    ended = (sa.select(r.c.connection,
                       _seconds_between(conn, r.c.started_at, r.c.ended_at).label("d"))
             .where(r.c.ended_at.is_not(None)).subquery())
    bounds = sorted(float(b) for b in buckets)
    columns = [sa.func.sum(sa.case((ended.c.d <= bound, 1), else_=0)) for bound in bounds]
    query = (sa.select(ended.c.connection, sa.func.count(), sa.func.sum(ended.c.d), *columns)
             .group_by(ended.c.connection).order_by(ended.c.connection))
    return [DurationHistogram(connection=row[0], count=int(row[1]), sum_s=float(row[2] or 0),
                              buckets=tuple(zip(bounds, (int(n or 0) for n in row[3:]),
                                                strict=True)))
            for row in conn.execute(query)]


def last_runs(conn: Connection) -> list[LastRun]:
    """Per connection with runs: its newest ended run, and when its last good sync ended."""
    r = t.runs
    ranked = (sa.select(r.c.connection, r.c.kind, r.c.status, r.c.started_at, r.c.ended_at,
                        sa.func.row_number().over(
                            partition_by=r.c.connection,
                            order_by=(r.c.started_at.desc(), r.c.run_id.desc())).label("n"))
              .where(r.c.ended_at.is_not(None)).subquery())
    newest = {row.connection: row for row in
              conn.execute(sa.select(ranked).where(ranked.c.n == 1))}
    success = dict(conn.execute(
        sa.select(r.c.connection, sa.func.max(r.c.ended_at))
        .where(r.c.status == "succeeded", r.c.kind == "sync").group_by(r.c.connection)).all())
    names = sorted(set(conn.execute(sa.select(r.c.connection).distinct()).scalars()))
    found = []
    for name in names:
        row = newest.get(name)
        found.append(LastRun(connection=name,
                             kind=row.kind if row else None, status=row.status if row else None,
                             started_at=row.started_at if row else None,
                             ended_at=row.ended_at if row else None,
                             last_success_at=success.get(name)))
    return found


def _stat(conn: Connection, key: str) -> ColumnElement[int]:
    """One numeric value of a checkpoint's ``stats`` JSON, 0 when absent."""
    stats = t.checkpoints.c.stats
    value: ColumnElement[Any]
    if conn.dialect.name == "sqlite":
        value = sa.func.json_extract(stats, f"$.{key}")
    else:
        value = sa.cast(sa.cast(stats, postgresql.JSONB)[key].astext, sa.Numeric)
    return sa.func.coalesce(sa.func.sum(value), 0)


def stream_totals(conn: Connection) -> list[StreamTotals]:
    """Per (connection, stream): durable checkpoints and the records and bytes they hold.

    Each checkpoint row counts once however many attempts recorded it (the row
    is keyed by run, stream and index), so the totals only grow as runs commit.
    The sums parse each durable checkpoint's ``stats`` JSON, which also holds
    its partition list and per-partition figures: measured on SQLite with
    100,000 checkpoint rows (10,000 runs, 1,000,000 partitions), 1 to 3 s on a
    busy two-core machine, where every other figure here takes under 0.5 s
    together.  SQLite 3.40 (Debian 12's) cannot answer it from an index on the
    ``json_extract`` expressions (3.41+ can use such an index as covering).
    What would make it one row per stream: a ``stream_totals`` table
    (connection, stream, checkpoints, records_written, records_rejected, bytes)
    that :meth:`MetadataStore.record_checkpoint` / ``release_checkpoint`` bump
    by the difference a checkpoint's status change makes, in the same
    transaction, filled once from this query when a store is migrated to it
    (a schema version bump, so older Headwater refuses a store it would not
    keep in step).
    """
    c, r = t.checkpoints, t.runs
    query = (sa.select(r.c.connection, c.c.stream, sa.func.count(),
                       *(_stat(conn, key) for key in _SUMMED))
             .select_from(c.join(r, c.c.run_id == r.c.run_id))
             .where(c.c.status.in_(_DURABLE))
             .group_by(r.c.connection, c.c.stream).order_by(r.c.connection, c.c.stream))
    return [StreamTotals(connection, stream, int(n), int(written), int(rejected), int(size))
            for connection, stream, n, written, rejected, size in conn.execute(query)]


def current_states(conn: Connection) -> list[StreamState]:
    s = t.states
    query = sa.select(s.c.connection, s.c.stream, s.c.state, s.c.updated_at).order_by(
        s.c.connection, s.c.stream)
    return [StreamState(*row) for row in conn.execute(query)]
