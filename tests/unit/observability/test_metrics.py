"""``/metrics``: the collector over a real SQLite store (filled through the store's own
API) and a real scheduler, parsed with prometheus_client's own parser."""

from __future__ import annotations

import threading
import urllib.request
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from prometheus_client import generate_latest
from prometheus_client.parser import text_string_to_metric_families

from headwater.config import register_secrets
from headwater.metadata_store import MetadataStore
from headwater.observability.metrics import (
    CONTENT_TYPE,
    HeadwaterCollector,
    MetricsServer,
    cursor_time,
    registry_with,
    render_metrics,
)
from headwater.serve import Scheduler
from tests._clock import FastClock
from tests.unit.metadata_store.test_metadata_store_figures import (
    DATE_RANGE,
    T0,
    Clock,
    run,
    store_clock,
)
from tests.unit.serve.test_scheduler import Runs, write

SECRET = "hunter2-very-secret-token"
Samples = dict[tuple[str, tuple[tuple[str, str], ...]], float]


def scrape(body: bytes) -> tuple[dict[str, str], Samples]:
    """Metric family name -> type, and (sample name, sorted labels) -> value."""
    types: dict[str, str] = {}
    samples: Samples = {}
    for family in text_string_to_metric_families(body.decode()):
        types[family.name] = family.type
        for sample in family.samples:
            key = (sample.name, tuple(sorted(sample.labels.items())))
            assert key not in samples, f"duplicate sample {key}"
            samples[key] = sample.value
    return types, samples


def value(samples: Samples, name: str, **labels: str) -> float:
    return samples[name, tuple(sorted(labels.items()))]


@pytest.fixture
def store(tmp_path: Path) -> MetadataStore:
    return MetadataStore(MetadataStore.default_url(tmp_path))


@pytest.fixture
def clock(monkeypatch: pytest.MonkeyPatch) -> Clock:
    return store_clock(monkeypatch)


def fill(store: MetadataStore, clock: Clock) -> None:
    """Two connections' history, a secret in places a careless exporter would show."""
    run(store, clock, "orders_to_lake", seconds=3, checkpoints={
        "users": [{"records_written": 100, "records_rejected": 2, "bytes": 4000}]})
    run(store, clock, "orders_to_lake", seconds=40, status="failed", checkpoints={
        "users": [{"records_written": 5, "bytes": 100}]})
    run(store, clock, "other", seconds=700, status="running")
    store.save_state("orders_to_lake", "users", DATE_RANGE, run_id=None, checkpoint_index=None)
    store.save_state("orders_to_lake", "events", {"cursor": SECRET}, run_id=None,
                     checkpoint_index=None)
    errored = store.create_run("other", plan={"token": SECRET}, state_before={},
                               config_redacted={"password": SECRET})
    store.start_attempt(errored, pid=1, host="h")
    store.finish_run(errored, status="failed", stats={}, state_after={},
                     error=f"401 for token {SECRET}")


def test_store_metrics_values_labels_and_types(store: MetadataStore, clock: Clock) -> None:
    fill(store, clock)
    now = (T0 + timedelta(hours=2)).timestamp()
    registry = registry_with(HeadwaterCollector(store, now=lambda: now))
    types, samples = scrape(generate_latest(registry))

    assert types == {
        "headwater_metadata_store_up": "gauge", "headwater_runs": "gauge",
        "headwater_run_duration_seconds": "histogram",
        "headwater_last_run_duration_seconds": "gauge",
        "headwater_last_run_end_timestamp_seconds": "gauge",
        "headwater_last_run_success": "gauge",
        "headwater_last_successful_sync_timestamp_seconds": "gauge",
        "headwater_last_successful_sync_age_seconds": "gauge",
        "headwater_checkpoints_committed": "counter", "headwater_records_written": "counter",
        "headwater_records_rejected": "counter", "headwater_written_bytes": "counter",
        "headwater_records_reading": "gauge", "headwater_partitions_reading": "gauge",
        "headwater_expectation_rows_evaluated": "counter",
        "headwater_expectation_rows_failed": "counter",
        "headwater_stream_cursor_timestamp_seconds": "gauge",
        "headwater_stream_cursor_age_seconds": "gauge"}
    assert value(samples, "headwater_metadata_store_up") == 1
    assert value(samples, "headwater_runs", connection="orders_to_lake", kind="sync",
                 status="succeeded") == 1
    assert value(samples, "headwater_runs", connection="orders_to_lake", kind="sync",
                 status="failed") == 1
    assert value(samples, "headwater_runs", connection="other", kind="sync",
                 status="running") == 1

    hist = "headwater_run_duration_seconds"
    assert value(samples, f"{hist}_bucket", connection="orders_to_lake", le="5.0") == 1
    assert value(samples, f"{hist}_bucket", connection="orders_to_lake", le="60.0") == 2
    assert value(samples, f"{hist}_bucket", connection="orders_to_lake", le="+Inf") == 2
    assert value(samples, f"{hist}_count", connection="orders_to_lake") == 2
    assert value(samples, f"{hist}_sum", connection="orders_to_lake") == pytest.approx(43, 0.01)

    assert value(samples, "headwater_last_run_duration_seconds",
                 connection="orders_to_lake") == pytest.approx(40)
    assert value(samples, "headwater_last_run_success", connection="orders_to_lake") == 0
    good = T0 + timedelta(seconds=3)
    assert value(samples, "headwater_last_successful_sync_timestamp_seconds",
                 connection="orders_to_lake") == good.timestamp()
    assert value(samples, "headwater_last_successful_sync_age_seconds",
                 connection="orders_to_lake") == pytest.approx(now - good.timestamp())
    assert ("headwater_last_successful_sync_age_seconds", (("connection", "other"),)) \
        not in samples  # it never succeeded

    users = {"connection": "orders_to_lake", "stream": "users"}
    assert value(samples, "headwater_records_written_total", **users) == 105
    assert value(samples, "headwater_records_rejected_total", **users) == 2
    assert value(samples, "headwater_written_bytes_total", **users) == 4100
    assert value(samples, "headwater_checkpoints_committed_total", **users) == 2

    cursor = datetime(2026, 11, 20, 13, 0, tzinfo=UTC).timestamp()
    assert value(samples, "headwater_stream_cursor_timestamp_seconds", **users) == cursor
    assert value(samples, "headwater_stream_cursor_age_seconds", **users) == now - cursor
    # A cursor that is not a time has no freshness.
    assert not any(dict(labels).get("stream") == "events" for _, labels in samples)


def test_no_secret_in_the_metrics(store: MetadataStore, clock: Clock) -> None:
    fill(store, clock)
    # A name can hold a secret only by mistake; if one is registered, it is masked.
    register_secrets([f"{SECRET}-in-a-name"])
    run(store, clock, f"{SECRET}-in-a-name", seconds=1)

    body = render_metrics(store).decode()

    assert SECRET not in body
    assert 'connection="**********"' in body


def test_a_store_that_does_not_answer_is_reported_not_raised(tmp_path: Path) -> None:
    store = MetadataStore(MetadataStore.default_url(tmp_path))
    store.close()
    (tmp_path / ".headwater" / "headwater.db").write_bytes(b"not a database" * 1000)

    _, samples = scrape(render_metrics(store))

    assert samples == {("headwater_metadata_store_up", ()): 0}


def test_scheduler_health(tmp_path: Path) -> None:
    folder = tmp_path / "connections"
    folder.mkdir()
    write(folder, "hourly", "0 * * * *")
    write(folder, "minutely", "* * * * *")
    write(folder, "manual", None)
    (folder / "broken.yaml").write_text("source: [not, a, mapping")
    fast = FastClock(datetime(2026, 1, 1, 12, 0, 30, tzinfo=UTC))
    gate = threading.Event()
    scheduler = Scheduler(folder=folder, runner=Runs(gate=gate), clock=fast, poll_s=1.0)
    try:
        _, samples = scrape(render_metrics(None, scheduler))
        assert "headwater_scheduler_last_tick_timestamp_seconds" not in {n for n, _ in samples}

        scheduler.tick()
        fast.advance(seconds=30)
        scheduler.tick()  # minutely fires and blocks on the gate
        _, samples = scrape(render_metrics(None, scheduler))
    finally:
        gate.set()
        scheduler.shutdown()

    assert value(samples, "headwater_scheduler_up") == 1
    assert value(samples, "headwater_scheduler_connections_scheduled") == 2
    assert value(samples, "headwater_scheduler_connection_files_invalid") == 1
    assert value(samples, "headwater_scheduler_runs_in_progress") == 1
    assert value(samples, "headwater_scheduler_last_tick_timestamp_seconds") == \
        datetime(2026, 1, 1, 12, 1, tzinfo=UTC).timestamp()
    assert value(samples, "headwater_scheduler_next_run_timestamp_seconds",
                 connection="minutely") == datetime(2026, 1, 1, 12, 2, tzinfo=UTC).timestamp()
    assert value(samples, "headwater_scheduler_next_run_timestamp_seconds",
                 connection="hourly") == datetime(2026, 1, 1, 13, 0, tzinfo=UTC).timestamp()
    assert not any(dict(labels).get("connection") == "manual" for _, labels in samples)
    assert "headwater_metadata_store_up" not in {n for n, _ in samples}


def test_metrics_server_serves_the_collector_over_http(store: MetadataStore,
                                                        clock: Clock) -> None:
    fill(store, clock)
    server = MetricsServer("127.0.0.1", 0, HeadwaterCollector(store))
    try:
        assert server.url == f"http://127.0.0.1:{server.port}/metrics"
        with urllib.request.urlopen(server.url, timeout=30) as response:
            body = response.read()
            content_type = response.headers["Content-Type"]
    finally:
        server.close()
    assert content_type == CONTENT_TYPE
    _, samples = scrape(body)
    assert value(samples, "headwater_records_written_total", connection="orders_to_lake",
                 stream="users") == 105


def test_cursor_time_reads_time_cursors_only() -> None:
    assert cursor_time(DATE_RANGE) == datetime(2026, 11, 20, 13, 0, tzinfo=UTC)
    epoch = {"state_type": "date-range", "slices": [{"start": 0, "end": 1_700_000_000},
                                                    {"start": 1_700_000_100, "end": 1_700_000_200}]}
    assert cursor_time(epoch) == datetime.fromtimestamp(1_700_000_200, UTC)
    naive = {"state_type": "date-range", "slices": [{"start": "a", "end": "2026-01-02T03:04:05"}]}
    assert cursor_time(naive) == datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC)
    assert cursor_time({"state_type": "integer-range", "slices": [{"start": 0, "end": 9}]}) is None
    assert cursor_time({"state_type": "date-range", "slices": []}) is None
    assert cursor_time({"__ab_full_refresh_sync_complete": True}) is None
    assert cursor_time(None) is None
    # A state Headwater did not write is no figure, and never fails the scrape.
    assert cursor_time({"state_type": "date-range", "slices": [{"end": 10**20}]}) is None
    assert cursor_time({"state_type": "date-range", "slices": [{"end": "soon"}, 3]}) is None
    assert cursor_time(["not", "a", "mapping"]) is None  # type: ignore[arg-type]
