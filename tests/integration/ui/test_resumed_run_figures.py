"""A run stopped, then resumed: every view says the run's figures, over both attempts.

Real Spark and Delta, the ``sample`` source (300 rows, one 100-row partition per
checkpoint, one lane).  The first sync is asked to stop as its second checkpoint
starts (that checkpoint commits, the third never starts); the next sync resumes
the run and commits the third.  The run landed 300 rows: the sync's result, the
run's record, ``headwater runs --json``, the page's connections list, connection
page and run page, and ``/metrics`` must all say 300 (and the same bytes), not the
100 the resuming attempt committed itself; and the CLI's progress bar of the resuming
sync starts at the two partitions already committed and ends full (3/3, 300 rows).
"""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import httpx
import pytest
from prometheus_client.parser import text_string_to_metric_families
from rich.console import Console
from typer.testing import CliRunner

from headwater.cli._render import ProgressObserver
from headwater.cli.app import app as cli_app
from headwater.config import load_connection
from headwater.engine import SyncEngine, SyncObserver, SyncResult
from headwater.metadata_store import MetadataStore
from headwater.ui import UiServer, create_app
from tests.integration._connections import connection_file

pytestmark = pytest.mark.spark

SOURCE = {"seed": 5, "users": 300, "orders": 0, "rows_per_partition": 100}
NAME = "resumable"


class StopAtSecond(SyncObserver):
    """Asks the engine to stop when its second checkpoint starts (that one still commits)."""

    def __init__(self) -> None:
        self.engine: SyncEngine | None = None
        self.started = 0

    def checkpoint_started(self, stream: str, index: int) -> None:
        self.started += 1
        if self.started == 2 and self.engine is not None:
            self.engine.request_stop("asked by the test")


def run(path: Path, observer: SyncObserver | None = None) -> SyncResult:
    connection = load_connection(path)
    engine = SyncEngine(connection, MetadataStore(connection.metadata_store or ""),
                        observer=observer)
    if isinstance(observer, StopAtSecond):
        observer.engine = engine
    return engine.run()


def metric(text: str, name: str, **labels: str) -> float:
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            if sample.name == name and all(sample.labels.get(k) == v
                                           for k, v in labels.items()):
                return float(sample.value)
    raise AssertionError(f"no {name} {labels} in /metrics")


def test_every_view_counts_every_attempt_of_a_resumed_run(spark: Any, tmp_path: Path) -> None:
    path = connection_file(
        tmp_path, name=NAME, source=SOURCE,
        streams=[{"name": "users", "sync_mode": "incremental", "destination_sync_mode": "append"}],
        checkpoint={"partitions_per_checkpoint": 1, "concurrent_checkpoints": 1})
    store_url = load_connection(path).metadata_store or ""
    store = MetadataStore(store_url)

    stopped = run(path, StopAtSecond())
    assert stopped.status == "stopped", stopped.to_dict()
    assert stopped.streams[0].records_written == 200
    terminal = io.StringIO()
    with ProgressObserver(Console(file=terminal, width=160, color_system=None)) as progress:
        resumed = run(path, progress)
    assert (resumed.run_id, resumed.attempt, resumed.status) == (stopped.run_id, 2, "succeeded")
    [bar] = progress.progress.tasks
    assert (bar.completed, bar.total, bar.fields["rows"]) == (3, 3, 300)
    assert "3/3 partitions" in terminal.getvalue(), terminal.getvalue()
    run_id = resumed.run_id

    # The engine's result and the run's record: the run's figures, not the attempt's 100.
    [stats] = resumed.streams
    assert (stats.records_read, stats.records_written, stats.checkpoints_done) == (300, 300, 3)
    record = store.get_run(run_id)
    assert record is not None and len(record.attempts) == 2
    [recorded] = record.stats["streams"]
    assert (recorded["records_written"], recorded["records_read"]) == (300, 300)
    file_bytes = recorded["bytes"]
    assert file_bytes == stats.bytes > 0

    # The run page sums the checkpoints; every other view reads the record: they agree.
    server = UiServer(create_app(tmp_path, store_url), "127.0.0.1", 0)
    server.start()
    try:
        with httpx.Client(base_url=server.url, timeout=60) as page:
            detail = page.get(f"/api/runs/{run_id}").json()
            connection = page.get(f"/api/connections/{NAME}").json()
            connections = page.get("/api/connections").json()["connections"]
            scraped = page.get("/metrics").text
    finally:
        server.shutdown("the test is done")
    expected = {"records": 300, "bytes": file_bytes, "rejected": 0}
    assert {key: detail[key] for key in expected} == expected
    [listed] = connection["runs"]
    assert {key: listed[key] for key in expected} == expected
    assert listed["duration_s"] == pytest.approx(detail["duration_s"], abs=0.01)
    assert listed["rows_per_s"] == pytest.approx(detail["rows_per_s"], abs=0.2)
    [mine] = [c for c in connections if c["name"] == NAME]
    assert {key: mine["last_run"][key] for key in expected} == expected

    listing = CliRunner().invoke(cli_app, ["runs", "--store", store_url, "--json"])
    assert listing.exit_code == 0, listing.output
    [row] = json.loads(listing.stdout)["runs"]
    assert (row["run_id"], row["attempts"], row["records_written"], row["records_rejected"]) == (
        run_id, 2, 300, 0)

    labels = {"connection": NAME, "stream": "users"}
    assert metric(scraped, "headwater_records_written_total", **labels) == 300
    assert metric(scraped, "headwater_written_bytes_total", **labels) == file_bytes
