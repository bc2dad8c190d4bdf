"""Records read within a checkpoint move while it is read, on the page and in ``/metrics``.

A run of one checkpoint used to read 0 records until that checkpoint committed: the
tasks' figures reach the driver in an accumulator, merged when a task ends.  Here one
partition of a slow source is read by a real Spark task (the shared session, in
process) while the test reads, mid-checkpoint, what the page (``GET /api/runs/{id}``)
and ``/metrics`` say: more than 0 records and fewer than the partition holds, with
nothing committed yet.  Once the run ended the live figures are gone and the committed
ones say it all.
"""

from __future__ import annotations

import sys
import threading
import time
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest
from prometheus_client.parser import text_string_to_metric_families

from headwater.config import load_connection
from headwater.destinations.testing import FakeDestination
from headwater.engine import SyncEngine, SyncResult
from headwater.engine._live_progress import INTERVAL_CONF
from headwater.metadata_store import MetadataStore
from headwater.observability.metrics import render_metrics
from headwater.sdk import Partition, Source, Stream
from headwater.ui import create_app
from tests.integration._connections import connection_file
from tests.unit.ui._client import call

pytestmark = pytest.mark.spark

RECORDS = 40
PAUSE_S = 0.1  # a record every 0.1 s: the one partition takes about 4 s to read


class _Ticks(Stream):
    """One partition of ``RECORDS`` records, read slowly (an API answering slowly)."""

    name = "ticks"

    def json_schema(self) -> dict[str, Any]:
        return {"type": "object", "properties": {"id": {"type": "integer"}}}

    def partitions(self, state: Mapping[str, Any] | None) -> list[Partition]:
        return [Partition("ticks", "all", {"n": RECORDS})]

    def read(self, partition: Partition) -> Iterator[dict[str, Any]]:
        for number in range(partition.params["n"]):
            yield {"id": number}
            time.sleep(PAUSE_S)


class _SlowSource(Source):
    @classmethod
    def spec(cls) -> dict[str, Any]:
        return {"connectionSpecification": {"type": "object", "properties": {}}}

    def check(self) -> None:
        return None

    def streams(self) -> list[Stream]:
        return [_Ticks()]


@pytest.fixture
def quick_reports(spark: Any) -> Iterator[None]:
    """Tasks report every 0.3 s (2 s by default), and this module's stream travels to
    Spark's Python workers by value (they do not import the tests)."""
    from pyspark import cloudpickle

    cloudpickle.register_pickle_by_value(sys.modules[__name__])
    spark.conf.set(INTERVAL_CONF, "0.3")
    try:
        yield
    finally:
        spark.conf.unset(INTERVAL_CONF)
        cloudpickle.unregister_pickle_by_value(sys.modules[__name__])


def _reading(metrics: str) -> float | None:
    for family in text_string_to_metric_families(metrics):
        if family.name == "headwater_records_reading":
            return sum(s.value for s in family.samples if s.labels.get("stream") == "ticks")
    return None


def test_records_read_within_one_checkpoint_move_on_the_page_and_in_metrics(
        spark: Any, tmp_path: Path, quick_reports: None) -> None:
    path = connection_file(tmp_path, name="slow", source={"users": 1, "orders": 0},
                           streams=[{"name": "ticks", "sync_mode": "full_refresh",
                                     "destination_sync_mode": "append"}])
    connection = load_connection(path)
    store = MetadataStore(connection.metadata_store or "")
    # The fake destination (no Delta table to make): what is tested is the read.
    engine = SyncEngine(connection, store,
                        destination=FakeDestination({"path": str(tmp_path / "fake")}))
    engine.source = _SlowSource({})
    results: list[SyncResult] = []
    # The page over the folder (whose file names a stream the sample source lacks: the
    # page lists it as invalid) reads the run's store.
    def page(run_id: str) -> dict[str, Any]:
        status, found = call(create_app(tmp_path, connection.metadata_store), "GET",
                             f"/api/runs/{run_id}")
        assert status == 200, found
        return dict(found)

    runner = threading.Thread(target=lambda: results.append(engine.run()))
    runner.start()
    try:
        seen: list[int] = []  # what the store holds, read cheaply until it moved
        detail: dict[str, Any] = {}
        in_metrics = None
        deadline = time.monotonic() + 120
        while runner.is_alive() and time.monotonic() < deadline and not detail:
            time.sleep(0.25)
            running = [r for r in store.list_runs("slow") if r.status == "running"]
            if not running:
                continue
            run_id = running[0].run_id
            live = sum(f.records for f in store.live_figures(run_id))
            if live and (not seen or live > seen[0]):
                seen.append(live)
            if len(seen) >= 2:  # it moved: what do the page and /metrics say now?
                detail = page(run_id)
                in_metrics = _reading(render_metrics(store).decode())
                committed = [c for c in store.list_checkpoints(run_id)
                             if c.status == "committed"]
                assert not committed, "read after the commit: the test proves nothing"
    finally:
        runner.join(120)
    assert results and results[0].status == "succeeded", results
    assert detail, f"no live figure moved before the checkpoint committed (seen: {seen})"
    records = detail["progress"]["records_reading"]
    assert 0 < seen[0] < seen[1] <= records < RECORDS  # it moves within the partition's read
    [stream] = detail["streams"]
    assert stream["records"] == 0 and stream["records_reading"] == records  # none committed
    [reading] = [p for p in stream["partitions"] if p["status"] == "reading"]
    assert reading["partition_id"] == "all" and reading["records"] == records
    assert in_metrics is not None and records <= in_metrics < RECORDS

    # Ended: the committed figures say it all, nothing is left "reading".
    run_id = results[0].run_id
    assert store.live_figures(run_id) == []
    ended = page(run_id)["progress"]
    assert ended["records"] == RECORDS and ended["records_reading"] == 0
    assert _reading(render_metrics(store).decode()) in (None, 0)
