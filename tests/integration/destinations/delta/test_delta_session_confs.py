"""A MERGE's session confs never reach another stream's table changes.

MERGE takes its ``txnAppId``/``txnVersion`` and commit tag from session-wide
confs.  Another stream preparing its table at the same moment (creating it,
adding columns) commits through Spark as well; had it run while the confs were
set, its commit would carry the MERGE's txn and tag: Delta would skip it as a
duplicate, or record a txn and a tag that a resumed run takes for a checkpoint.
So every Spark commit the destination makes without options of its own waits
for the confs' lock.  The test holds that lock with the confs set, as a MERGE
does, and checks the other stream's commits carry none of it.
"""

from __future__ import annotations

import json
import threading
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pyarrow as pa
import pytest

from headwater.destinations.delta import DeltaDestination, _destination
from headwater.plan import TableLayout

pytestmark = pytest.mark.spark


class _WatchedLock:
    """A lock that tells when a thread waits for it."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.waited = threading.Event()

    def __enter__(self) -> None:
        if not self._lock.acquire(blocking=False):
            self.waited.set()
            self._lock.acquire()

    def __exit__(self, *exc: object) -> None:
        self._lock.release()


def _plan(name: str) -> Any:
    return SimpleNamespace(stream=SimpleNamespace(name=name, destination_sync_mode="append",
                                                  table_layout=TableLayout()))


def _log_actions(table: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for log in sorted((table / "_delta_log").glob("*.json"))
            for line in log.read_text().splitlines()]


def test_prepare_waits_for_a_merge_s_confs_and_commits_without_them(
        spark: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    lock = _WatchedLock()
    monkeypatch.setattr(_destination, "_SESSION_CONF_LOCK", lock)
    destination = DeltaDestination({"path": str(tmp_path / "lake"), "writer": "spark"})
    schema = pa.schema([("id", pa.int64())])
    destination.prepare(spark, _plan("items"), schema)
    wider = pa.schema([*schema, pa.field("name", pa.string())])
    done = threading.Event()

    def prepare() -> None:
        destination.prepare(spark, _plan("items"), wider)  # ALTER TABLE ADD COLUMNS
        destination.prepare(spark, _plan("fresh"), schema)  # a new table's first commit
        done.set()

    with lock:  # a MERGE of another stream, with its confs set
        spark.conf.set(_destination._TXN_APP_CONF, "other-stream")
        spark.conf.set(_destination._TXN_VERSION_CONF, "99")
        spark.conf.set(_destination._USER_METADATA_CONF, "other-stream-tag")
        worker = threading.Thread(target=prepare)
        worker.start()
        try:
            # Either prepare waits for the lock (right), or it commits under the confs.
            while not (lock.waited.wait(0.2) or done.is_set()):
                assert worker.is_alive()
        finally:
            spark.conf.unset(_destination._TXN_APP_CONF)
            spark.conf.unset(_destination._TXN_VERSION_CONF)
            spark.conf.unset(_destination._USER_METADATA_CONF)
    worker.join()
    assert done.is_set()
    for table in ("items", "fresh"):
        actions = _log_actions(tmp_path / "lake" / table)
        assert not [a for a in actions if "txn" in a], table
        assert not [a for a in actions
                    if (a.get("commitInfo") or {}).get("userMetadata") == "other-stream-tag"]
