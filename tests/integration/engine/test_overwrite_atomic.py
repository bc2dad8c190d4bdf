"""An overwrite is atomic for readers, on both writers: old rows until the whole run landed.

Real Spark and Delta tables, one partition per checkpoint, so a full refresh
has several checkpoints.  A run that fails in a later checkpoint (an object the
source cannot read) or is asked to stop leaves the table exactly as the
previous run left it; the next successful run replaces it in one commit.
(Killed runs: ``tests/integration/test_crash_resume.py``.)
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from headwater.config import load_connection
from headwater.destinations import CommitResult
from headwater.engine import SyncEngine, SyncObserver, SyncResult
from headwater.metadata_store import MetadataStore
from headwater.plan import RunPlan
from tests.integration._cli import assert_table_equals_source
from tests.integration._connections import connection_file

pytestmark = pytest.mark.spark

STREAM = "users"
SAMPLE = {"seed": 5, "users": 300, "orders": 0, "rows_per_partition": 100,
          "updates_per_generation": 20, "new_per_generation": 10}
ONE_PER_CHECKPOINT = {"partitions_per_checkpoint": 1, "concurrent_checkpoints": 1}
WRITERS = ["auto", "spark"]


class Watch(SyncObserver):
    """Calls ``on_start`` once the plan is persisted; stops the run as checkpoint ``stop_at``
    starts."""

    def __init__(self, *, stop_at: int | None = None, on_start: Any = None) -> None:
        self.stop_at = stop_at
        self.on_start = on_start
        self.engine: SyncEngine | None = None
        self.started: list[int] = []
        self.committed: list[CommitResult] = []

    def run_started(self, run_id: str, plan: RunPlan, resumed: bool) -> None:
        if self.on_start is not None:
            self.on_start()

    def checkpoint_started(self, stream: str, index: int) -> None:
        self.started.append(index)
        if len(self.started) == self.stop_at and self.engine is not None:
            self.engine.request_stop("asked by the test")

    def checkpoint_committed(self, stream: str, partitions: int, result: CommitResult) -> None:
        self.committed.append(result)


def sync(path: Path, observer: Watch | None = None) -> SyncResult:
    connection = load_connection(path)
    observer = observer or Watch()
    engine = SyncEngine(connection, MetadataStore(connection.metadata_store or ""),
                        observer=observer)
    observer.engine = engine
    return engine.run()


def publishes(location: Path, run_id: str) -> list[list[int]]:
    """The checkpoints each commit of the table that publishes run ``run_id`` lists."""
    found = []
    for log in sorted((location / "_delta_log").glob("*.json")):
        for line in log.read_text().splitlines():
            info = json.loads(line).get("commitInfo") or {}
            tag = json.loads(info.get("userMetadata") or "{}").get("headwater") or {}
            if tag.get("run_id") == run_id and "published" in tag:
                found.append(tag["published"])
    return found


def staging_runs(location: Path) -> list[str]:
    folder = location / "_headwater_staging"
    return sorted(p.name for p in folder.iterdir()) if folder.is_dir() else []


# ---------------------------------------------------------------- a source that fails


def objects(folder: Path, generation: int) -> dict[str, list[int]]:
    """Three objects of ten rows each; ids shift with the generation."""
    files = {}
    for n, name in enumerate(["a.jsonl", "b.jsonl", "c.jsonl"]):
        ids = [1000 * generation + 10 * n + i for i in range(10)]
        target = folder / name
        if target.is_dir():
            target.rmdir()
        target.write_text("".join(json.dumps({"id": i, "v": f"g{generation}"}) + "\n"
                                  for i in ids))
        files[name] = ids
    return files


def table_ids(spark: Any, location: Path) -> Counter[tuple[int, str]]:
    rows = spark.read.format("delta").load(str(location)).select("id", "v").collect()
    return Counter((r["id"], r["v"]) for r in rows)


@pytest.mark.parametrize("writer", WRITERS)
def test_a_full_refresh_that_fails_in_a_later_checkpoint_leaves_the_old_rows(
        spark: Any, tmp_path: Path, writer: str) -> None:
    folder = tmp_path / "in"
    folder.mkdir()
    source = {"url": str(folder), "streams": [
        {"name": "lines", "globs": ["*.jsonl"], "objects_per_partition": 1,  # 3 checkpoints
         "schema": {"id": {"type": "integer"}, "v": {"type": "string"}}}]}
    path = connection_file(tmp_path, name="objects", source_type="object_storage",
                           source=source, writer=writer, checkpoint=ONE_PER_CHECKPOINT,
                           streams=[{"name": "lines", "sync_mode": "full_refresh",
                                     "destination_sync_mode": "overwrite"}])
    location = tmp_path / "lake" / "lines"
    old = objects(folder, generation=0)
    first = sync(path)
    assert first.status == "succeeded", first.to_dict()
    before = table_ids(spark, location)
    assert before == Counter((i, "g0") for ids in old.values() for i in ids)

    new = objects(folder, generation=1)

    def unreadable() -> None:
        # Listed with the plan, then a folder where the object was: reading it fails
        # as a store error would (the partition, hence the run, fails).
        (folder / "c.jsonl").unlink()
        (folder / "c.jsonl").mkdir()

    watch = Watch(on_start=unreadable)
    failed = sync(path, watch)
    assert failed.status == "failed", failed.to_dict()
    assert failed.streams[0].checkpoints == 3
    assert len(watch.committed) >= 1, "the run should have landed checkpoints before failing"
    assert table_ids(spark, location) == before  # exactly the old rows: nothing published
    assert publishes(location, failed.run_id) == []

    objects(folder, generation=1)
    again = sync(path)
    assert again.status == "succeeded", again.to_dict()
    assert table_ids(spark, location) == Counter((i, "g1") for ids in new.values() for i in ids)
    assert len(publishes(location, again.run_id)) == 1
    # The failed run's staging went when the next overwrite started, this run's after it.
    assert staging_runs(location) == []


# ---------------------------------------------------------------- a run asked to stop


@pytest.mark.parametrize("writer", WRITERS)
def test_a_stopped_full_refresh_leaves_the_old_rows_and_the_next_sync_publishes(
        spark: Any, tmp_path: Path, writer: str) -> None:
    def write(generation: int) -> Path:
        return connection_file(tmp_path, name="stoppable", source={**SAMPLE,
                                                                  "generation": generation},
                               writer=writer, checkpoint=ONE_PER_CHECKPOINT,
                               streams=[{"name": STREAM, "sync_mode": "full_refresh",
                                         "destination_sync_mode": "overwrite"}])

    location = tmp_path / "lake" / STREAM
    assert sync(write(0)).status == "succeeded"
    assert_table_equals_source(spark, str(location), SAMPLE, STREAM)

    stopping = Watch(stop_at=2)
    stopped = sync(write(1), stopping)
    assert stopped.status == "stopped", stopped.to_dict()
    [stats] = stopped.streams
    assert stats.checkpoints_done == 2 and stats.checkpoints > 2
    assert_table_equals_source(spark, str(location), SAMPLE, STREAM)  # still generation 0
    assert len(stopping.committed) == 2 and all(r.version is None for r in stopping.committed)
    assert publishes(location, stopped.run_id) == []

    finished = sync(write(1))
    assert (finished.status, finished.run_id, finished.resumed) == ("succeeded",
                                                                     stopped.run_id, True)
    assert_table_equals_source(spark, str(location), {**SAMPLE, "generation": 1}, STREAM)
    store = MetadataStore(load_connection(write(1)).metadata_store or "")
    run = store.get_run(stopped.run_id)
    assert run is not None
    planned = [c["index"] for c in run.plan["streams"][0]["checkpoints"]]
    assert publishes(location, stopped.run_id) == [planned]
    # runs show: staged checkpoints have no table version; the last carries the publish's.
    versions = {c.index: c.stats["delta_version"] for c in store.list_checkpoints(run.run_id)}
    assert versions == {**dict.fromkeys(planned[:-1]),
                        planned[-1]: finished.streams[0].published_version}
    assert finished.streams[0].published_version is not None
    assert staging_runs(location) == []
