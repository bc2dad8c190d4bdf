"""Totals over the whole store: what metrics and overviews read.

Why it is incremental: Prometheus scrapes every 15 s for as long as the
platform runs, so a scrape must cost what changed since the last one, not the
whole history.  A finished run (``succeeded``, ``failed``) never changes, nor
do its checkpoints (:meth:`MetadataStore.finish_run`,
:meth:`MetadataStore.record_checkpoint`), and the transaction that finishes it
gives it the next ``runs.finished_seq`` (see
:func:`~headwater.metadata_store._schema.next_finished_seq`: every snapshot
holds a prefix of those numbers).  So :class:`FiguresCache` keeps the finished
runs' share of every figure, and each call reads, by index:

* the runs finished since the call before (``finished_seq`` above the highest
  it has seen): folded into the kept share, their checkpoints summed once;
* the unfinished runs (``finished_seq`` null: ``running`` and ``stopped``,
  a few), and their checkpoints, afresh (a stopped run is resumed later,
  a running one commits more);
* the current states (one row per stream).

Runs of every process sharing the store count (``serve``, a ``headwater sync``
by hand, another host): they are rows of the store, numbered when they finish.
All of it is read in one snapshot transaction (:meth:`MetadataStore.figures`),
so the figures describe one moment: a run never counts as finished in one
figure and running in another.
"""

from __future__ import annotations

import json
import threading
from bisect import bisect_left
from collections import Counter
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime
from typing import Any

import sqlalchemy as sa
from sqlalchemy.dialects import postgresql
from sqlalchemy.engine import Connection
from sqlalchemy.sql.elements import ColumnElement

from headwater.metadata_store import _schema as t
from headwater.metadata_store._models import (
    DURABLE_CHECKPOINT_STATUSES,
    FINISHED_STATUSES,
    SUCCEEDED_STATUSES,
)

#: Checkpoint statuses whose records are durable in the destination.
_DURABLE = sorted(DURABLE_CHECKPOINT_STATUSES)

#: The numeric checkpoint stats that are summed per stream (keys of ``CheckpointRecord.stats``).
_SUMMED = t.SUMMED_FIGURES


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
class ExpectationTotals:
    """What one expectation of a stream found in its durable checkpoints, over every run
    of the store (:mod:`headwater.expectations`)."""

    connection: str
    stream: str
    expectation: str
    action: str
    evaluated: int
    failed: int


@dataclass(frozen=True)
class StreamState:
    """A stream's current state, as :meth:`MetadataStore.get_states` has it."""

    connection: str
    stream: str
    state: dict[str, Any] | None
    updated_at: datetime


@dataclass(frozen=True)
class RecordsReading:
    """Records read so far by the partitions of a stream's running checkpoints (not yet
    committed), over the running runs of a connection, as their tasks last reported."""

    connection: str
    stream: str
    records: int
    partitions: int


@dataclass(frozen=True)
class StoreFigures:
    """Everything :func:`read_figures` computes, from one transaction."""

    run_counts: list[RunCount]
    durations: list[DurationHistogram]
    last_runs: list[LastRun]
    stream_totals: list[StreamTotals]
    states: list[StreamState]
    expectation_totals: list[ExpectationTotals] = field(default_factory=list)
    reading: list[RecordsReading] = field(default_factory=list)


def read_figures(conn: Connection, duration_buckets: Sequence[float],
                 cache: FiguresCache | None = None) -> StoreFigures:
    """Every figure of the store, inside the caller's (snapshot) transaction.

    ``cache`` keeps the finished runs' share between calls (a new one: every
    run is read, as on a first scrape).  Calls sharing a cache must not run
    at once: :meth:`MetadataStore.figures` holds :attr:`FiguresCache.lock`
    from before its transaction begins, so each call's snapshot is at least
    as new as the one the cache was last brought to.
    """
    cache = cache if cache is not None else FiguresCache()
    finished = cache.brought_up_to_date(conn, duration_buckets)
    fresh = _Share(tuple(sorted(float(b) for b in duration_buckets)))
    unfinished = conn.execute(_RUN_COLUMNS.where(t.runs.c.finished_seq.is_(None))).all()
    fresh.add_runs(unfinished)
    fresh.add_checkpoints(conn, [row.run_id for row in unfinished])
    return replace(finished.merged(fresh).figures(current_states(conn)),
                   reading=records_reading(conn))


#: The columns of ``runs`` every figure reads (never the JSON ones).
_RUN_COLUMNS = sa.select(t.runs.c.run_id, t.runs.c.connection, t.runs.c.kind, t.runs.c.status,
                         t.runs.c.started_at, t.runs.c.ended_at, t.runs.c.finished_seq)

_Key = tuple[str, str]

#: Whose checkpoints a sum reads: a few runs by id (the unfinished ones), or every run
#: whose ``finished_seq`` is in ``(after, upto]`` (those finished since the last call).
_Runs = list[str] | tuple[int, int]


@dataclass
class _Histogram:
    """One connection's finished run durations: per-bound counts (cumulative), count, sum."""

    bounds: tuple[float, ...]
    le: list[int]
    count: int = 0
    sum_s: float = 0.0

    def add(self, seconds: float) -> None:
        self.count += 1
        self.sum_s += seconds
        # Cumulative: every bound from the first one ``seconds`` fits under counts it.
        for i in range(bisect_left(self.bounds, seconds), len(self.bounds)):
            self.le[i] += 1

    def merged(self, other: _Histogram) -> _Histogram:
        return _Histogram(self.bounds, [a + b for a, b in zip(self.le, other.le, strict=True)],
                          self.count + other.count, self.sum_s + other.sum_s)


#: The newest ended run of a connection, compared by (started_at, run_id) as ``runs`` lists.
_Newest = tuple[datetime, str, str, str, datetime]


@dataclass
class _Share:
    """Every figure of a set of runs, kept as sums, counts and maxima: so the share of
    the finished runs and that of the unfinished ones add up to the store's."""

    bounds: tuple[float, ...]
    counts: Counter[tuple[str, str, str]] = field(default_factory=Counter)
    durations: dict[str, _Histogram] = field(default_factory=dict)
    newest: dict[str, _Newest] = field(default_factory=dict)
    last_success: dict[str, datetime] = field(default_factory=dict)
    #: Per (connection, stream): checkpoints, then each of ``_SUMMED``.
    sums: dict[_Key, list[int]] = field(default_factory=dict)
    #: Per (connection, stream, expectation, action): rows evaluated, rows failed.
    expectations: dict[tuple[str, str, str, str], list[int]] = field(default_factory=dict)

    def add_runs(self, rows: Iterable[Any]) -> None:
        """Add runs (rows of :data:`_RUN_COLUMNS`).  Written for the first call of a
        process, which reads every finished run: plain tuples, no per-row lookups that a
        loop of 10,000 rows would repeat."""
        counts, newest, durations = self.counts, self.newest, self.durations
        for run_id, connection, kind, status, started_at, ended_at, *_ in rows:
            counts[connection, kind, status] += 1
            if ended_at is None:
                continue  # running: no duration, not "last"
            known = newest.get(connection)
            if known is None or (started_at, run_id) > known[:2]:
                newest[connection] = (started_at, run_id, kind, status, ended_at)
            if status not in FINISHED_STATUSES:
                # A stopped run is resumed later and finishes with a longer duration:
                # counted now, it would leave the histogram then (counts going down).
                continue
            histogram = durations.get(connection)
            if histogram is None:
                histogram = durations[connection] = _Histogram(self.bounds,
                                                               [0] * len(self.bounds))
            histogram.add((ended_at - started_at).total_seconds())
            if status in SUCCEEDED_STATUSES and kind == "sync":
                best = self.last_success.get(connection)
                self.last_success[connection] = ended_at if best is None else max(ended_at, best)

    def add_sums(self, rows: Iterable[tuple[Any, ...]]) -> None:
        for connection, stream, *figures in rows:
            total = self.sums.setdefault((connection, stream), [0] * (1 + len(_SUMMED)))
            for i, figure in enumerate(figures):
                total[i] += int(figure)

    def add_checkpoints(self, conn: Connection, run_ids: _Runs) -> None:
        """Add the durable checkpoints of ``run_ids``: their figures and expectation counts.

        From ``checkpoint_figures`` (schema 4), else (a store an older Headwater wrote,
        opened by a reader, which migrates nothing) from each checkpoint's ``stats``."""
        if _has_checkpoint_figures(conn):
            self.add_sums(_sum_figures(conn, run_ids))
            self.add_expectations(_figures_expectations(conn, run_ids))
            return
        self.add_sums(_sum_checkpoints(conn, run_ids))
        self.add_expectations(_checkpoint_expectations(conn, run_ids))

    def add_expectations(self, rows: Iterable[tuple[Any, ...]]) -> None:
        """Add checkpoints' expectation counts: ``(connection, stream, counts)`` where
        ``counts`` is ``{name: {action, evaluated, failed}}`` (JSON text or parsed)."""
        for connection, stream, found in rows:
            counts = json.loads(found) if isinstance(found, str) else found
            for name, figures in (counts or {}).items():
                key = (connection, stream, name, str(figures.get("action", "warn")))
                total = self.expectations.setdefault(key, [0, 0])
                total[0] += int(figures.get("evaluated") or 0)
                total[1] += int(figures.get("failed") or 0)

    def merged(self, other: _Share) -> _Share:
        """Both shares together (neither is changed)."""
        both = _Share(self.bounds, counts=self.counts + other.counts,
                      durations=dict(self.durations), newest=dict(self.newest),
                      last_success=dict(self.last_success),
                      sums={key: list(values) for key, values in self.sums.items()})
        for name, histogram in other.durations.items():
            mine = both.durations.get(name)
            both.durations[name] = histogram if mine is None else mine.merged(histogram)
        for name, newest in other.newest.items():
            if name not in both.newest or newest[:2] > both.newest[name][:2]:
                both.newest[name] = newest
        for name, at in other.last_success.items():
            both.last_success[name] = max(at, both.last_success.get(name, at))
        both.add_sums((*key, *values) for key, values in other.sums.items())
        both.expectations = {key: list(values) for key, values in self.expectations.items()}
        for key, (evaluated, failed) in other.expectations.items():
            total = both.expectations.setdefault(key, [0, 0])
            total[0] += evaluated
            total[1] += failed
        return both

    def figures(self, states: list[StreamState]) -> StoreFigures:
        names = sorted({connection for connection, _, _ in self.counts})
        last_runs = []
        for name in names:
            newest = self.newest.get(name)
            last_runs.append(LastRun(
                connection=name, kind=newest[2] if newest else None,
                status=newest[3] if newest else None,
                started_at=newest[0] if newest else None,
                ended_at=newest[4] if newest else None,
                last_success_at=self.last_success.get(name)))
        return StoreFigures(
            run_counts=[RunCount(*key, count) for key, count in sorted(self.counts.items())
                        if count],
            durations=[DurationHistogram(connection=name, count=h.count, sum_s=h.sum_s,
                                         buckets=tuple(zip(h.bounds, h.le, strict=True)))
                       for name, h in sorted(self.durations.items())],
            last_runs=last_runs,
            stream_totals=[StreamTotals(connection, stream, *values)
                           for (connection, stream), values in sorted(self.sums.items())],
            states=states,
            expectation_totals=[ExpectationTotals(*key, *values)
                                for key, values in sorted(self.expectations.items())],
        )


class FiguresCache:
    """The finished runs' share of every figure, kept between calls of
    :func:`read_figures` (one per :class:`MetadataStore`, so per process).

    Why it is exact: see the module docstring; in short, rows with a
    ``finished_seq`` never change, and a run that finishes after a call gets a
    number above every one that call saw.  Why it is needed: the stream totals
    parse each durable checkpoint's ``stats`` JSON (which also holds its
    partition list): 1.7 to 3 s over 100,000 checkpoints on SQLite, and the
    run figures read every run row.  The first call pays that; later ones read
    only what changed.

    It is thrown away and built again when the store no longer holds the run
    it last counted with the number it had (a store restored from an older
    copy, or another database at the same URL), and when the histogram's
    bounds change.
    """

    #: Runs whose checkpoints are summed per query (bound parameters of one ``IN``).
    CHUNK = 500

    def __init__(self) -> None:
        #: Held by a call from before its snapshot begins to its end (see :func:`read_figures`).
        self.lock = threading.Lock()
        self._share: _Share | None = None
        self._seen: tuple[int, str] | None = None  # the highest finished_seq counted, its run

    def brought_up_to_date(self, conn: Connection,
                           duration_buckets: Sequence[float]) -> _Share:
        """The finished runs' share as of ``conn``'s snapshot (read only what is new)."""
        bounds = tuple(sorted(float(b) for b in duration_buckets))
        r = t.runs
        if (self._share is None or self._share.bounds != bounds
                or (self._seen is not None and conn.execute(
                    sa.select(r.c.run_id).where(r.c.run_id == self._seen[1],
                                                r.c.finished_seq == self._seen[0])
                ).first() is None)):
            self._share, self._seen = _Share(bounds), None
        after = -1 if self._seen is None else self._seen[0]
        new = conn.execute(_RUN_COLUMNS.where(r.c.finished_seq > after)
                           .order_by(r.c.finished_seq)).all()
        if new:
            # Built aside: a call that fails half way leaves the cache as it was.
            share = self._share.merged(_Share(bounds))
            share.add_runs(new)
            # By their numbers, not their ids: one query however many (a first call
            # reads every finished run; by id, 20 queries of 500 for 10,000 runs).
            share.add_checkpoints(conn, (after, new[-1].finished_seq))
            self._share, self._seen = share, (new[-1].finished_seq, new[-1].run_id)
        return self._share


def _stat(conn: Connection, key: str) -> ColumnElement[int]:
    """One numeric value of a checkpoint's ``stats`` JSON, 0 when absent."""
    stats = t.checkpoints.c.stats
    value: ColumnElement[Any]
    if conn.dialect.name == "sqlite":
        value = sa.func.json_extract(stats, f"$.{key}")
    else:
        value = sa.cast(sa.cast(stats, postgresql.JSONB)[key].astext, sa.Numeric)
    return sa.func.coalesce(sa.func.sum(value), 0)


def _chunked(conn: Connection, run_ids: _Runs, table: sa.Table,
             columns: Sequence[ColumnElement[Any]], *conditions: ColumnElement[bool],
             grouped: bool = False) -> Iterator[tuple[Any, ...]]:
    """``(connection, stream, *columns)`` of the durable checkpoints of ``run_ids`` in
    ``table`` (``checkpoints`` or ``checkpoint_figures``), summed per stream when
    ``grouped``.  Runs named by id: a few hundred per query, so the database reads only
    these runs' rows (their primary key starts with it); by a ``finished_seq`` range: one
    query, the runs found on that column's index."""
    r = t.runs
    if isinstance(run_ids, tuple):
        after, upto = run_ids
        selections = [sa.and_(r.c.finished_seq > after, r.c.finished_seq <= upto)]
    else:
        selections = [table.c.run_id.in_(run_ids[i:i + FiguresCache.CHUNK])
                      for i in range(0, len(run_ids), FiguresCache.CHUNK)]
    for selection in selections:
        query = (sa.select(r.c.connection, table.c.stream, *columns)
                 .select_from(table.join(r, table.c.run_id == r.c.run_id))
                 .where(table.c.status.in_(_DURABLE), *conditions, selection))
        if grouped:
            query = query.group_by(r.c.connection, table.c.stream)
        yield from (tuple(row) for row in conn.execute(query))


def _has_checkpoint_figures(conn: Connection) -> bool:
    """Whether the store keeps ``checkpoint_figures`` (schema version 4 and later)."""
    m = t.meta
    version = conn.execute(sa.select(m.c.value).where(m.c.key == "schema_version")).scalar()
    return int(version or 0) >= 4


def _sum_figures(conn: Connection, run_ids: _Runs) -> Iterator[tuple[Any, ...]]:
    """``(connection, stream, checkpoints, *_SUMMED)`` from ``checkpoint_figures``."""
    f = t.checkpoint_figures
    return _chunked(conn, run_ids, f, [sa.func.count(), *(
        sa.func.coalesce(sa.func.sum(f.c[key]), 0) for key in _SUMMED)], grouped=True)


def _figures_expectations(conn: Connection,
                          run_ids: _Runs) -> Iterator[tuple[Any, ...]]:
    """``(connection, stream, expectation counts)`` of each checkpoint that has some, from
    ``checkpoint_figures``."""
    f = t.checkpoint_figures
    return _chunked(conn, run_ids, f, [f.c.expectations], f.c.expectations.is_not(None))


def _sum_checkpoints(conn: Connection, run_ids: _Runs) -> Iterator[tuple[Any, ...]]:
    """``(connection, stream, checkpoints, *_SUMMED)`` from each checkpoint's ``stats`` (a
    store of schema 3 a reader opened: not migrated to ``checkpoint_figures``)."""
    return _chunked(conn, run_ids, t.checkpoints,
                    [sa.func.count(), *(_stat(conn, key) for key in _SUMMED)], grouped=True)


def _checkpoint_expectations(conn: Connection,
                             run_ids: _Runs) -> Iterator[tuple[Any, ...]]:
    """``(connection, stream, expectation counts)`` of each checkpoint that has some, from
    its ``stats`` (schema 3, as :func:`_sum_checkpoints`)."""
    c = t.checkpoints
    found: ColumnElement[Any]
    if conn.dialect.name == "sqlite":
        found = sa.func.json_extract(c.c.stats, "$.expectations")
    else:
        found = sa.cast(c.c.stats, postgresql.JSONB)["expectations"]
    return _chunked(conn, run_ids, c, [found], found.is_not(None))


def records_reading(conn: Connection) -> list[RecordsReading]:
    """The live figures of the running runs, per connection and stream (read afresh on
    every call: a few rows, replaced every few seconds while a run reads)."""
    if not t.has_run_progress(conn):
        return []
    p, r = t.run_progress, t.runs
    query = (sa.select(r.c.connection, p.c.stream, sa.func.sum(p.c.records), sa.func.count())
             .select_from(p.join(r, p.c.run_id == r.c.run_id))
             # Unfinished (by index: a warm scrape reads no finished run), and running.
             .where(r.c.finished_seq.is_(None), r.c.status == "running")
             .group_by(r.c.connection, p.c.stream)
             .order_by(r.c.connection, p.c.stream))
    return [RecordsReading(connection, stream, int(records or 0), int(count))
            for connection, stream, records, count in conn.execute(query)]


def current_states(conn: Connection) -> list[StreamState]:
    s = t.states
    query = sa.select(s.c.connection, s.c.stream, s.c.state, s.c.updated_at).order_by(
        s.c.connection, s.c.stream)
    return [StreamState(*row) for row in conn.execute(query)]
