"""Totals over the whole store, computed by the database: what metrics and overviews read.

Every figure here is one aggregate query, so a scrape costs the same on a store
with ten runs as on one with ten thousand (no run's plan or stats is loaded
into Python).  What each query touches:

* run counts, durations and last runs: the ``runs`` table's narrow columns
  (``connection``, ``kind``, ``status``, ``started_at``, ``ended_at``), which
  SQLite keeps ahead of the JSON columns in each row;
* stream totals: JSON values of each durable checkpoint row (``json_extract``
  on SQLite, ``->>`` on PostgreSQL).  This is the one figure that reads JSON:
  its cost grows with the number of checkpoint rows, so the finished runs'
  share is kept between calls (see :class:`StreamTotalsCache`);
* current states: one row per stream.

All of them are read in one snapshot transaction (:meth:`MetadataStore.figures`),
so they describe one moment: a run never counts as finished in one figure and
running in another.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import sqlalchemy as sa
from sqlalchemy.dialects import postgresql
from sqlalchemy.engine import Connection
from sqlalchemy.sql.elements import ColumnElement

from headwater.metadata_store import _schema as t
from headwater.metadata_store._models import DURABLE_CHECKPOINT_STATUSES, FINISHED_STATUSES

#: Checkpoint statuses whose records are durable in the destination.
_DURABLE = sorted(DURABLE_CHECKPOINT_STATUSES)

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
    """Durations of a connection's finished runs, bucketed by the database.

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


def read_figures(conn: Connection, duration_buckets: Sequence[float],
                 totals: StreamTotalsCache | None = None) -> StoreFigures:
    """Every figure of the store, inside the caller's (snapshot) transaction."""
    return StoreFigures(
        run_counts=run_counts(conn),
        durations=run_durations(conn, duration_buckets),
        last_runs=last_runs(conn),
        stream_totals=(totals or StreamTotalsCache()).totals(conn),
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
    """Per connection, its finished runs (``succeeded``, ``failed``) bucketed.

    Not its ``stopped`` runs: a stopped run is resumed by the next sync (it is
    ``running`` again, with no end) and finishes later with a longer duration,
    so counted while stopped it would leave the histogram when resumed, and
    Prometheus reads a histogram's counts going down as a counter reset.  A
    finished run never changes: the counts only grow, and a run of several
    attempts counts once, from its first attempt's start to its last one's end.
    """
    r = t.runs
    ended = (sa.select(r.c.connection,
                       _seconds_between(conn, r.c.started_at, r.c.ended_at).label("d"))
             .where(r.c.status.in_(sorted(FINISHED_STATUSES))).subquery())
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


_Key = tuple[str, str]
#: Per (connection, stream): checkpoints, then each of ``_SUMMED``.
_Sums = dict[_Key, list[int]]


def _sum_checkpoints(conn: Connection, where: ColumnElement[bool],
                     *, by_run: bool = False) -> list[tuple[Any, ...]]:
    """``(run_id?, connection, stream, checkpoints, *_SUMMED)`` over durable checkpoints."""
    c, r = t.checkpoints, t.runs
    keys = [c.c.run_id] if by_run else []
    query = (sa.select(*keys, r.c.connection, c.c.stream, sa.func.count(),
                       *(_stat(conn, key) for key in _SUMMED))
             .select_from(c.join(r, c.c.run_id == r.c.run_id))
             .where(c.c.status.in_(_DURABLE), where)
             .group_by(*keys, r.c.connection, c.c.stream))
    return [tuple(row) for row in conn.execute(query)]


def _add(sums: _Sums, rows: list[tuple[Any, ...]]) -> None:
    for connection, stream, *figures in rows:
        total = sums.setdefault((connection, stream), [0] * (1 + len(_SUMMED)))
        for i, figure in enumerate(figures):
            total[i] += int(figure)


class StreamTotalsCache:
    """Per (connection, stream): durable checkpoints and the records and bytes they
    hold, with the finished runs' share kept between calls.

    Each checkpoint row counts once however many attempts recorded it (the row
    is keyed by run, stream and index), so the totals only grow as runs commit.

    Why it is right to keep: a finished run (``succeeded`` or ``failed``)
    never changes, nor do its checkpoints, so what they hold is summed once
    per process; each call sums only the runs finished since, and the
    unfinished runs' checkpoints (few) afresh.  A store that lost a run
    this cache counted (restored from an older copy) is summed again from
    scratch.  Call :meth:`totals` inside a snapshot transaction (see
    :meth:`Database.read`), so a run that finishes meanwhile is counted once.

    Why it is needed: the sums parse each durable checkpoint's ``stats`` JSON,
    which also holds its partition list and per-partition figures.  Measured
    on SQLite with 100,000 checkpoint rows (10,000 runs, 1,000,000
    partitions) on a busy two-core machine: 1.7 to 3 s over every run, where
    every other figure here takes under 0.5 s together.  With this cache only
    the first call pays that; later ones take about 50 ms (every run's id and
    status, then the new and unfinished runs' checkpoints by primary key).
    SQLite 3.40 (Debian 12's) cannot answer the sums from an index on the
    ``json_extract`` expressions (3.41+ can use such an index as covering).
    What would make even the first call one row per stream: a
    ``stream_totals`` table that ``record_checkpoint`` / ``release_checkpoint``
    bump by the difference a checkpoint's status change makes, in the same
    transaction (a schema version bump, so older Headwater refuses a store it
    would not keep in step).

    Thread-safe: one call at a time updates it.
    """

    #: Finished runs summed per query (bound parameters of one ``IN``).
    CHUNK = 500

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._runs: set[str] = set()
        self._sums: _Sums = {}

    def totals(self, conn: Connection) -> list[StreamTotals]:
        finished: set[str] = set()
        unfinished: list[str] = []
        for run_id, status in conn.execute(sa.select(t.runs.c.run_id, t.runs.c.status)):
            if status in FINISHED_STATUSES:
                finished.add(run_id)
            else:
                unfinished.append(run_id)
        with self._lock:
            if not self._runs <= finished:
                self._runs, self._sums = set(), {}
            new = sorted(finished - self._runs)
            for chunk in _chunks(new, self.CHUNK):
                _add(self._sums, [row[1:] for row in self._sum(conn, chunk, by_run=True)])
            self._runs |= set(new)
            sums = {key: list(values) for key, values in self._sums.items()}
        for chunk in _chunks(sorted(unfinished), self.CHUNK):
            _add(sums, self._sum(conn, chunk))
        return [StreamTotals(connection, stream, *values)
                for (connection, stream), values in sorted(sums.items())]

    @staticmethod
    def _sum(conn: Connection, run_ids: list[str],
             *, by_run: bool = False) -> list[tuple[Any, ...]]:
        # Selected by run id, so the database reads only these runs' checkpoints
        # (the checkpoints' primary key starts with it).
        return _sum_checkpoints(conn, t.checkpoints.c.run_id.in_(run_ids), by_run=by_run)


def _chunks(items: list[str], size: int) -> Iterator[list[str]]:
    for i in range(0, len(items), size):
        yield items[i:i + size]


def current_states(conn: Connection) -> list[StreamState]:
    s = t.states
    query = sa.select(s.c.connection, s.c.stream, s.c.state, s.c.updated_at).order_by(
        s.c.connection, s.c.stream)
    return [StreamState(*row) for row in conn.execute(query)]
