"""``headwater serve DIR --metrics``: a real serve process scraped over HTTP after real syncs."""

from __future__ import annotations

import signal
import time
import urllib.error
import urllib.request
from datetime import UTC, datetime
from pathlib import Path

import pytest
from prometheus_client.parser import text_string_to_metric_families

from headwater.metadata_store import MetadataStore
from tests.api_server import free_port
from tests.integration._cli import finish_cli, start_cli
from tests.integration.serve.test_serve import SOURCE, write

pytestmark = pytest.mark.spark

Samples = dict[tuple[str, tuple[tuple[str, str], ...]], float]


def scrape(url: str) -> Samples:
    with urllib.request.urlopen(url, timeout=30) as response:
        assert response.headers["Content-Type"].startswith("text/plain; version=0.0.4")
        body = response.read().decode()
    return {(s.name, tuple(sorted(s.labels.items()))): s.value
            for family in text_string_to_metric_families(body) for s in family.samples}


def value(samples: Samples, name: str, **labels: str) -> float:
    return samples[name, tuple(sorted(labels.items()))]


def test_serve_metrics_after_a_scheduled_sync(tmp_path: Path) -> None:
    folder = tmp_path / "connections"
    folder.mkdir()
    write(folder, "every3s", "* * * * * */3", str(tmp_path / "lake"))
    (folder / "broken.yaml").write_text("name: broken\n")  # no source: does not load
    store_url = f"sqlite:///{tmp_path / 'meta.db'}"
    port = free_port()
    url = f"http://127.0.0.1:{port}/metrics"
    process = start_cli(tmp_path, "serve", str(folder), "--poll", "0.5",
                        "--metrics", str(port), "--metrics-store", store_url)
    store = MetadataStore(store_url)
    try:
        deadline = time.monotonic() + 600
        while not any(r.status == "succeeded" for r in store.list_runs("every3s")):
            assert process.poll() is None, finish_cli(process).describe()
            assert time.monotonic() < deadline, "no scheduled sync succeeded in 10 minutes"
            time.sleep(0.5)
        # The server came up before the first firing; a scrape now sees the finished run.
        samples = scrape(url)
    finally:
        process.send_signal(signal.SIGTERM)
        result = finish_cli(process, timeout=300)
    assert result.exit_code == 0, result.describe()
    assert f"metrics at {url}" in result.stderr

    [first, *_] = [r for r in reversed(store.list_runs("every3s")) if r.status == "succeeded"]
    connection = {"connection": "every3s"}
    users = {**connection, "stream": "users"}
    assert value(samples, "headwater_metadata_store_up") == 1
    assert value(samples, "headwater_runs", kind="sync", status="succeeded", **connection) >= 1
    assert value(samples, "headwater_records_written_total", **users) == SOURCE["users"]
    assert value(samples, "headwater_checkpoints_committed_total", **users) >= 1
    assert value(samples, "headwater_records_rejected_total", **users) == 0
    assert value(samples, "headwater_written_bytes_total", **users) > 0
    assert value(samples, "headwater_run_duration_seconds_count", **connection) >= 1
    assert value(samples, "headwater_last_run_success", **connection) == 1
    assert value(samples, "headwater_last_successful_sync_timestamp_seconds", **connection) \
        >= first.ended_at.timestamp()  # type: ignore[union-attr]
    # The sample world's cursor stops in 2024: fresh as of then, old now.
    cursor = value(samples, "headwater_stream_cursor_timestamp_seconds", **users)
    assert cursor > datetime(2024, 1, 1, tzinfo=UTC).timestamp()
    assert value(samples, "headwater_stream_cursor_age_seconds", **users) > 0

    assert value(samples, "headwater_scheduler_up") == 1
    assert value(samples, "headwater_scheduler_connections_scheduled") == 1
    assert value(samples, "headwater_scheduler_connection_files_invalid") == 1
    assert value(samples, "headwater_scheduler_runs_in_progress") in (0, 1)
    next_run = value(samples, "headwater_scheduler_next_run_timestamp_seconds", **connection)
    tick = value(samples, "headwater_scheduler_last_tick_timestamp_seconds")
    assert tick < next_run <= tick + 10  # every 3 s (the scrape may fall inside a tick)

    with pytest.raises(urllib.error.URLError):  # the server ended with serve
        urllib.request.urlopen(url, timeout=5)
