"""Prometheus metrics read from the metadata store at scrape time (``/metrics``).

Why a collector over the store rather than counters bumped by the syncs: every
sync of a connection records its runs and checkpoints in the metadata store,
whichever process ran it (``serve``, a ``headwater sync`` by hand, another
host sharing the store).  Reading the store when Prometheus scrapes makes the
figures right after a restart and across processes, and nothing is counted
twice.  The store keeps the finished runs' share of the figures per process and
reads only the runs finished since the last scrape and the unfinished ones
(:meth:`MetadataStore.figures`), so a scrape costs what changed, not the whole
history; keep one store (and one collector) per process.  Under ``headwater
serve`` the scheduler's live health (its loop, runs in progress, next firings,
files that fail to load) is added from :meth:`Scheduler.snapshot`.

Label values are connection, stream, kind and status names, masked with the
process's registered secrets like every other output; no error message, URL or
configuration value becomes a label.

Example (what the web server mounts at ``/metrics``)::

    body = render_metrics(store, scheduler)
    return Response(body=body, headers={"Content-Type": CONTENT_TYPE})
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from prometheus_client import (
    CONTENT_TYPE_PLAIN_0_0_4,
    CollectorRegistry,
    generate_latest,
    start_http_server,
)
from prometheus_client.core import (
    CounterMetricFamily,
    GaugeMetricFamily,
    HistogramMetricFamily,
    Metric,
)
from prometheus_client.registry import Collector
from prometheus_client.utils import floatToGoString

from headwater._listen import http_url
from headwater.config import mask
from headwater.errors import HeadwaterError

if TYPE_CHECKING:
    from headwater.metadata_store import MetadataStore, StoreFigures
    from headwater.observability.health import ConnectionHealth
    from headwater.serve import Scheduler, SchedulerSnapshot

log = logging.getLogger(__name__)

#: The ``Content-Type`` of :func:`render_metrics`'s body: Prometheus' text format 0.0.4,
#: which ``generate_latest`` writes and every Prometheus reads (prometheus_client's own
#: server sends the same for a scrape that asks for nothing newer).
CONTENT_TYPE: str = CONTENT_TYPE_PLAIN_0_0_4

#: Upper bounds (seconds) of the run duration histogram: a few seconds to six hours.
DURATION_BUCKETS: tuple[float, ...] = (1, 5, 15, 30, 60, 120, 300, 600, 1800, 3600, 7200,
                                       21600)


class HeadwaterCollector(Collector):
    """Yields Headwater's metrics from ``store`` (and ``scheduler``, when given) on each scrape.

    ``store`` may be ``None`` (only the scheduler is reported) or several stores (the
    page's folder may name more than one: their figures are reported together, and
    ``headwater_metadata_store_up`` is 0 if any did not answer); ``connections`` (the
    page's folder) adds each file's validity, lateness and staleness; ``now`` returns
    the current Unix time, for the ages (tests pass a fixed one).
    """

    def __init__(self, store: MetadataStore | Sequence[MetadataStore] | None,
                 scheduler: Scheduler | None = None, *,
                 connections: Callable[[], Sequence[ConnectionHealth]] | None = None,
                 now: Callable[[], float] = time.time) -> None:
        self._stores: list[MetadataStore] = (
            [] if store is None else list(store) if isinstance(store, Sequence) else [store])
        self._scheduler = scheduler
        self._connections = connections
        self._now = now

    def collect(self) -> Iterator[Metric]:
        now = self._now()
        if self._stores:
            yield from self._store_metrics(now)
        if self._connections is not None:
            yield from health_metrics(self._connections())
        if self._scheduler is not None:
            yield from scheduler_metrics(self._scheduler.snapshot())

    def _store_metrics(self, now: float) -> Iterator[Metric]:
        """Every store's figures, or only ``headwater_metadata_store_up 0`` when one did not
        answer: half the figures would read as a drop, the other half as all there is."""
        up = GaugeMetricFamily("headwater_metadata_store_up",
                               "1 if the metadata store answered this scrape, else 0 (missing, "
                               "unreadable or not a store; with several, 0 if any did not).")
        families: dict[str, Metric] = {}
        for store in self._stores:
            try:
                figures = store.figures(DURATION_BUCKETS)
            except HeadwaterError as exc:
                log.warning("metrics: the metadata store did not answer: %s", mask(str(exc)))
                up.add_metric([], 0)
                yield up
                return
            for family in store_metrics(figures, now):
                known = families.setdefault(family.name, family)
                if known is not family:
                    known.samples.extend(family.samples)
        up.add_metric([], 1)
        yield up
        yield from families.values()


def store_metrics(figures: StoreFigures, now: float) -> Iterator[Metric]:
    """The metric families of the store's figures; ``now`` is the Unix time of the scrape."""
    runs = GaugeMetricFamily(
        "headwater_runs",
        "Runs in the metadata store by connection, kind and status (running and stopped "
        "counts go down as runs finish; finished ones only grow).",
        labels=["connection", "kind", "status"])
    for count in figures.run_counts:
        runs.add_metric(_labels(count.connection, count.kind, count.status), count.count)
    yield runs

    durations = HistogramMetricFamily(
        "headwater_run_duration_seconds",
        "Wall time of the finished runs (succeeded or failed) of each connection; a resumed "
        "run's from its first attempt's start to its end.",
        labels=["connection"])
    for histogram in figures.durations:
        buckets = [(floatToGoString(b), n) for b, n in histogram.buckets]
        durations.add_metric(_labels(histogram.connection),
                             [*buckets, ("+Inf", histogram.count)], histogram.sum_s)
    yield durations

    yield from _last_run_metrics(figures, now)
    yield from _stream_total_metrics(figures)
    yield from _reading_metrics(figures)
    yield from _expectation_metrics(figures)
    yield from _freshness_metrics(figures, now)


def _last_run_metrics(figures: StoreFigures, now: float) -> Iterator[Metric]:
    def gauge(name: str, documentation: str) -> GaugeMetricFamily:
        return GaugeMetricFamily(name, documentation, labels=["connection"])

    duration = gauge("headwater_last_run_duration_seconds",
                     "Wall time of the connection's newest ended run.")
    ended = gauge("headwater_last_run_end_timestamp_seconds",
                  "When the connection's newest ended run ended (Unix time).")
    success = gauge("headwater_last_run_success",
                    "1 if the connection's newest ended run succeeded, else 0 (a "
                    "warned run too).")
    good = gauge("headwater_last_successful_sync_timestamp_seconds",
                 "When the connection's newest successful sync ended (Unix time).")
    good_age = gauge("headwater_last_successful_sync_age_seconds",
                     "Seconds since the connection's newest successful sync ended.")
    for last in figures.last_runs:
        labels = _labels(last.connection)
        if last.started_at is not None and last.ended_at is not None:
            duration.add_metric(labels, (last.ended_at - last.started_at).total_seconds())
            ended.add_metric(labels, last.ended_at.timestamp())
            success.add_metric(labels, 1 if last.status == "succeeded" else 0)
        if last.last_success_at is not None:
            good.add_metric(labels, last.last_success_at.timestamp())
            good_age.add_metric(labels, max(0.0, now - last.last_success_at.timestamp()))
    yield from (duration, ended, success, good, good_age)


#: Per-stream totals: the :class:`StreamTotals` field, the counter's name and its help.
_STREAM_TOTALS = (
    ("checkpoints", "headwater_checkpoints_committed",
     "Checkpoints of the stream committed to its destination, over every run."),
    ("records_written", "headwater_records_written",
     "Records committed to the stream's destination, over every run."),
    ("records_rejected", "headwater_records_rejected",
     "Records of the stream's committed checkpoints that the destination rejected."),
    ("bytes", "headwater_written_bytes",
     "Bytes the stream's committed checkpoints wrote, over every run."),
)


def _stream_total_metrics(figures: StoreFigures) -> Iterator[Metric]:
    for field, name, documentation in _STREAM_TOTALS:
        family = CounterMetricFamily(name, documentation, labels=["connection", "stream"])
        for totals in figures.stream_totals:
            family.add_metric(_labels(totals.connection, totals.stream), getattr(totals, field))
        yield family


def _reading_metrics(figures: StoreFigures) -> Iterator[Metric]:
    """Records read so far by running checkpoints: a run of one long checkpoint moves
    here while ``headwater_records_written`` waits for its commit."""
    records = GaugeMetricFamily(
        "headwater_records_reading",
        "Records read so far by the partitions of the stream's running checkpoints, not "
        "committed yet (its tasks report every few seconds; at the commit they move to "
        "headwater_records_written).", labels=["connection", "stream"])
    partitions = GaugeMetricFamily(
        "headwater_partitions_reading",
        "Partitions of the stream's running checkpoints that have reported records read.",
        labels=["connection", "stream"])
    for found in figures.reading:
        records.add_metric(_labels(found.connection, found.stream), found.records)
        partitions.add_metric(_labels(found.connection, found.stream), found.partitions)
    yield from (records, partitions)


def _expectation_metrics(figures: StoreFigures) -> Iterator[Metric]:
    """Per expectation of a stream (:mod:`headwater.expectations`): rows evaluated and
    rows that failed it, over the stream's committed checkpoints of every run."""
    labels = ["connection", "stream", "expectation", "action"]
    evaluated = CounterMetricFamily(
        "headwater_expectation_rows_evaluated",
        "Rows of the stream's committed checkpoints its expectation was evaluated on.",
        labels=labels)
    failed = CounterMetricFamily(
        "headwater_expectation_rows_failed",
        "Rows of the stream's committed checkpoints that failed the expectation (FALSE; "
        "a NULL result passes), whatever its action did with them.", labels=labels)
    for totals in figures.expectation_totals:
        names = _labels(totals.connection, totals.stream, totals.expectation, totals.action)
        evaluated.add_metric(names, totals.evaluated)
        failed.add_metric(names, totals.failed)
    yield evaluated
    yield failed


def _freshness_metrics(figures: StoreFigures, now: float) -> Iterator[Metric]:
    cursor = GaugeMetricFamily(
        "headwater_stream_cursor_timestamp_seconds",
        "The newest cursor value the stream's committed state covers, for time cursors "
        "(Unix time).", labels=["connection", "stream"])
    age = GaugeMetricFamily(
        "headwater_stream_cursor_age_seconds",
        "Data freshness: now minus the newest committed cursor value, for time cursors.",
        labels=["connection", "stream"])
    for state in figures.states:
        at = cursor_time(state.state)
        if at is None:
            continue
        labels = _labels(state.connection, state.stream)
        cursor.add_metric(labels, at.timestamp())
        age.add_metric(labels, now - at.timestamp())
    yield cursor
    yield age


def scheduler_metrics(snapshot: SchedulerSnapshot) -> Iterator[Metric]:
    """The scheduler's health, from one :meth:`Scheduler.snapshot`."""
    files = snapshot.files
    scheduled = [f for f in files if f.config is not None and f.config.schedule is not None]
    yield _gauge("headwater_scheduler_up", "1 while headwater serve's scheduler runs.", 1)
    yield _gauge("headwater_scheduler_connections_scheduled",
                 "Connections of the served folder with a schedule.", len(scheduled))
    yield _gauge("headwater_scheduler_connection_files_invalid",
                 "Connection files of the served folder that do not load.",
                 sum(1 for f in files if f.problem is not None))
    yield _gauge("headwater_scheduler_runs_in_progress",
                 "Runs the scheduler has in progress now.", sum(1 for f in files if f.running))
    if snapshot.last_tick_at is not None:
        yield _gauge("headwater_scheduler_last_tick_timestamp_seconds",
                     "When the scheduler's loop last looked at the folder and the clock "
                     "(Unix time).", snapshot.last_tick_at.timestamp())
    due = GaugeMetricFamily("headwater_scheduler_next_run_timestamp_seconds",
                            "The connection's next firing (Unix time).", labels=["connection"])
    retry = GaugeMetricFamily("headwater_scheduler_retry_timestamp_seconds",
                              "When the connection's failed run is retried (Unix time).",
                              labels=["connection"])
    for f in scheduled:
        if f.next_due is not None:
            due.add_metric(_labels(f.name), f.next_due.timestamp())
        if f.retry_at is not None:
            retry.add_metric(_labels(f.name), f.retry_at.timestamp())
    yield due
    yield retry


def health_metrics(connections: Sequence[ConnectionHealth]) -> Iterator[Metric]:
    """Each connection file's validity, and lateness and staleness where its store answered
    (no figure where it did not: an unknown is not a 0)."""
    valid = GaugeMetricFamily("headwater_connection_config_valid",
                              "1 if the connection file validates, else 0 (an invalid file "
                              "has no store and no other figure).", labels=["connection"])
    late = GaugeMetricFamily("headwater_connection_late",
                             "1 if the connection's schedule fired and no run started since "
                             "(beyond a grace), else 0; scheduled connections only.",
                             labels=["connection"])
    late_s = GaugeMetricFamily("headwater_connection_late_seconds",
                               "Seconds since the firing that passed without a run (0: not "
                               "late).", labels=["connection"])
    stale = GaugeMetricFamily("headwater_stream_stale",
                              "1 if the stream's newest committed time cursor is older than "
                              "the connection's stale_after_s (default: twice the schedule's "
                              "period); streams over the threshold only.",
                              labels=["connection", "stream"])
    for health in connections:
        labels = _labels(health.name)
        valid.add_metric(labels, 1 if health.valid else 0)
        if health.known and health.scheduled:
            late.add_metric(labels, 1 if health.late is not None else 0)
            late_s.add_metric(labels, health.late.age_s if health.late is not None else 0)
        for s in health.stale:
            stale.add_metric(_labels(health.name, s.stream), 1)
    yield from (valid, late, late_s, stale)


def cursor_time(state: Mapping[str, Any] | None) -> datetime | None:
    """The newest end of a time cursor's committed ranges, or ``None`` if not a time cursor.

    Reads the concurrent form the SDK's cursors write (``state_type`` ``date-range``,
    ``slices`` of ``{"start", "end"}``; ISO 8601 text or epoch seconds).  The
    newest end, not the end of the first range: that is the freshest data in the
    table, even while an older window waits to be read again.
    """
    if not isinstance(state, Mapping) or state.get("state_type") != "date-range":
        return None
    ends = [_time(s.get("end")) for s in state.get("slices") or [] if isinstance(s, Mapping)]
    found = [e for e in ends if e is not None]
    return max(found) if found else None


def _time(value: Any) -> datetime | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int | float):
        try:
            return datetime.fromtimestamp(value, UTC)
        except (OverflowError, OSError, ValueError):  # out of range: no figure, no failure
            return None
    if isinstance(value, str):
        try:
            parsed = datetime.fromisoformat(value)
        except ValueError:
            return None
        return parsed if parsed.tzinfo is not None else parsed.replace(tzinfo=UTC)
    return None


def _labels(*values: str) -> list[str]:
    return [mask(v) for v in values]


def _gauge(name: str, documentation: str, value: float) -> GaugeMetricFamily:
    return GaugeMetricFamily(name, documentation, value=value)


def registry_with(collector: Collector) -> CollectorRegistry:
    """A registry holding only ``collector`` (no process or platform metrics)."""
    registry = CollectorRegistry(auto_describe=False)
    registry.register(collector)
    return registry


def render_metrics(store: MetadataStore | Sequence[MetadataStore] | None,
                   scheduler: Scheduler | None = None, *,
                   connections: Sequence[ConnectionHealth] | None = None) -> bytes:
    """The ``/metrics`` body (Prometheus text format; see :data:`CONTENT_TYPE`)."""
    found = connections
    collector = HeadwaterCollector(store, scheduler,
                                   connections=None if found is None else lambda: found)
    return generate_latest(registry_with(collector))


class MetricsServer:
    """``/metrics`` over HTTP on a daemon thread, from prometheus_client's own server.

    Each scrape runs :class:`HeadwaterCollector` on the server's thread;
    :meth:`close` stops it.  The server answers on every path; ``/metrics`` is
    the one documented.
    """

    def __init__(self, host: str, port: int, collector: Collector) -> None:
        self._server, self._thread = start_http_server(port, addr=host,
                                                       registry=registry_with(collector))
        self.host = host
        self.port = int(self._server.server_address[1])

    @property
    def url(self) -> str:
        return http_url(self.host, self.port, "/metrics")

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=5)


__all__ = [
    "CONTENT_TYPE",
    "DURATION_BUCKETS",
    "HeadwaterCollector",
    "MetricsServer",
    "cursor_time",
    "health_metrics",
    "registry_with",
    "render_metrics",
    "scheduler_metrics",
    "store_metrics",
]
