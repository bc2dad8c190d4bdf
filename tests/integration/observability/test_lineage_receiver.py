"""Real syncs send their OpenLineage events to a real HTTP receiver on 127.0.0.1.

Real Spark (the session's shared one), real Delta folders, the ``sample`` and
``object_storage`` sources; the receiver is ``tests/lineage_receiver.py``
(``http.server``).  Every event received is validated through the OpenLineage
client's model of the spec (``tests/openlineage_schema.py``).  A receiver that is down or answers
500 costs a sync one warning, never its result.
"""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Any

import pytest

from headwater.config import load_connection
from headwater.engine import SyncEngine, SyncObserver, SyncResult
from headwater.engine._rerun import replay
from headwater.metadata_store import MetadataStore
from headwater.observability.lineage._events import run_uuid
from tests.integration._connections import connection_file
from tests.lineage_receiver import LineageReceiver, closed_port
from tests.openlineage_schema import validate_event

pytestmark = pytest.mark.spark

SOURCE = {"seed": 5, "users": 200, "orders": 0, "rows_per_partition": 100}
USERS = [{"name": "users", "sync_mode": "incremental", "destination_sync_mode": "append"}]
ONE_AT_A_TIME = {"partitions_per_checkpoint": 1, "concurrent_checkpoints": 1}
API_KEY = "lineage-it-key-7c2e91"


class Stopper(SyncObserver):
    """Asks the engine to stop as checkpoint ``nth`` starts (as Ctrl-C does); runs ``on_start``
    once the run is recorded."""

    def __init__(self, nth: int | None = None, on_start: Any = None) -> None:
        self.nth = nth
        self.on_start = on_start
        self.engine: SyncEngine | None = None
        self.started = 0

    def run_started(self, run_id: str, plan: Any, resumed: bool) -> None:
        if self.on_start is not None:
            self.on_start()

    def checkpoint_started(self, stream: str, index: int) -> None:
        self.started += 1
        if self.started == self.nth and self.engine is not None:
            self.engine.request_stop("asked by the test")


def engine_for(path: Path, observer: Stopper | None = None) -> SyncEngine:
    connection = load_connection(path, env={"OL_KEY": API_KEY})
    observer = observer or Stopper()
    engine = SyncEngine(connection, MetadataStore(connection.metadata_store or ""),
                        observer=observer)
    observer.engine = engine
    return engine


def received(receiver: LineageReceiver, result: SyncResult) -> list[dict[str, Any]]:
    """The run's events, each checked against the OpenLineage spec (the client's model)."""
    events = receiver.events_of(run_uuid(result.run_id))
    for event in events:
        validate_event(event)
    return events


def test_a_sync_and_its_replay_send_start_and_complete(spark: Any, tmp_path: Path) -> None:
    with LineageReceiver() as receiver:
        path = connection_file(tmp_path, name="shop", source=SOURCE, streams=USERS,
                               lineage={"url": receiver.url, "namespace": "it",
                                        "api_key": "${OL_KEY}"})
        result = engine_for(path).run()
        assert result.status == "succeeded", result.to_dict()
        start, complete = received(receiver, result)
        assert (start["eventType"], complete["eventType"]) == ("START", "COMPLETE")
        assert start["job"]["namespace"] == complete["job"]["namespace"] == "it"
        assert start["job"]["name"] == "shop"
        assert complete["run"]["facets"]["headwater"]["runId"] == result.run_id
        [source] = complete["inputs"]
        assert (source["namespace"], source["name"]) == ("sample://", "users")
        [table] = complete["outputs"]
        assert table["namespace"] == (tmp_path / "lake").as_uri()
        assert table["name"] == "users"
        columns = {f["name"] for f in table["facets"]["schema"]["fields"]}
        assert {"id", "_hw_run_id"} <= columns
        statistics = table["outputFacets"]["outputStatistics"]
        [stats] = result.streams
        assert statistics["rowCount"] == stats.records_written == 200
        assert statistics["size"] == stats.bytes
        # The key goes as the bearer token, and nowhere else.
        assert {h.get("Authorization") for h in receiver.headers} == {f"Bearer {API_KEY}"}
        assert API_KEY not in json.dumps(receiver.events)

        replayed = replay(engine_for(path), result.run_id)
        assert replayed.status == "succeeded", replayed.to_dict()
        start, complete = received(receiver, replayed)
        assert complete["eventType"] == "COMPLETE"
        assert complete["job"]["facets"]["jobType"]["jobType"] == "REPLAY"
        assert complete["run"]["facets"]["headwater"]["replayOf"] == result.run_id


def test_a_failed_run_sends_fail_with_its_error(spark: Any, tmp_path: Path) -> None:
    folder = tmp_path / "in"
    folder.mkdir()
    (folder / "a.jsonl").write_text('{"id": 1}\n')
    source = {"url": str(folder), "streams": [
        {"name": "lines", "globs": ["*.jsonl"], "schema": {"id": {"type": "integer"}}}]}

    def unreadable() -> None:
        # Listed with the plan, then a folder where the object was: reading it fails.
        (folder / "a.jsonl").unlink()
        (folder / "a.jsonl").mkdir()

    with LineageReceiver() as receiver:
        path = connection_file(tmp_path, name="objects", source_type="object_storage",
                               source=source, streams=[{"name": "lines"}],
                               lineage={"url": receiver.url})
        result = engine_for(path, Stopper(on_start=unreadable)).run()
        assert result.status == "failed", result.to_dict()
        start, fail = received(receiver, result)
        assert (start["eventType"], fail["eventType"]) == ("START", "FAIL")
        message = fail["run"]["facets"]["errorMessage"]["message"]
        # The run's error, as the run history records it.
        recorded = MetadataStore(load_connection(path).metadata_store or "").get_run(
            result.run_id)
        assert recorded is not None and recorded.error
        assert message == recorded.error and message.startswith("lines: ")
        assert fail["job"]["namespace"] == "headwater"  # the default namespace
        [source_dataset] = fail["inputs"]
        assert source_dataset["namespace"] == folder.as_uri()
        assert "outputStatistics" not in fail["outputs"][0]["outputFacets"]


def test_a_stopped_run_sends_abort_and_its_resumption_keeps_the_run_id(
        spark: Any, tmp_path: Path) -> None:
    with LineageReceiver() as receiver:
        path = connection_file(tmp_path, name="stoppable", source=SOURCE, streams=USERS,
                               checkpoint=ONE_AT_A_TIME, lineage={"url": receiver.url})
        stopped = engine_for(path, Stopper(nth=1)).run()  # 1 of 2 checkpoints
        assert stopped.status == "stopped", stopped.to_dict()
        assert [e["eventType"] for e in received(receiver, stopped)] == ["START", "ABORT"]

        resumed = engine_for(path).run()
        assert (resumed.status, resumed.run_id, resumed.attempt) == \
            ("succeeded", stopped.run_id, 2)
        events = received(receiver, resumed)
        assert [e["eventType"] for e in events] == ["START", "ABORT", "START", "COMPLETE"]
        assert [e["run"]["facets"]["headwater"]["attempt"] for e in events] == [1, 1, 2, 2]
        assert events[2]["run"]["facets"]["headwater"]["resumed"] is True


@pytest.mark.parametrize("receiver_is", ["down", "failing"])
def test_a_receiver_down_or_failing_never_fails_the_sync(
        spark: Any, tmp_path: Path, caplog: pytest.LogCaptureFixture, receiver_is: str) -> None:
    with LineageReceiver(status=500) as failing:
        url = failing.url if receiver_is == "failing" else f"http://127.0.0.1:{closed_port()}"
        path = connection_file(tmp_path, name="shop", source=SOURCE, streams=USERS,
                               lineage={"url": url, "api_key": "${OL_KEY}", "timeout_s": 10})
        with caplog.at_level(logging.WARNING, logger="headwater.lineage"):
            result = engine_for(path).run()
        assert result.status == "succeeded", result.to_dict()
        assert result.streams[0].records_written == 200
        warnings = [r.getMessage() for r in caplog.records if r.name == "headwater.lineage"]
        assert len(warnings) == 1, warnings  # one per run, though both events failed
        assert result.run_id in warnings[0] and "START" in warnings[0]
        assert API_KEY not in caplog.text
        if receiver_is == "failing":
            # Both events reached it (and were answered 500, the retry included).
            assert {e["eventType"] for e in failing.events} == {"START", "COMPLETE"}
