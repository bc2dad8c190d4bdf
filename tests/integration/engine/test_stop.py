"""A sync asked to stop: the commit in flight lands, nothing else starts, the next sync finishes.

Real Spark and Delta, the ``sample`` source, one partition per checkpoint and
one lane, so the checkpoints run one after another in plan order.  The stop is
requested from the observer's ``checkpoint_started`` of the second checkpoint:
after that checkpoint passed the engine's stop check and before its Spark job
and Delta commit ran, the moment a Ctrl-C during a commit stands for.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

from headwater.config import load_connection
from headwater.connectors.sample import SampleSource
from headwater.destinations import CommitResult
from headwater.engine import SyncEngine, SyncObserver, SyncResult
from headwater.metadata_store import MetadataStore
from tests.integration._cli import assert_table_equals_source, tagged_commits
from tests.integration._connections import connection_file

pytestmark = pytest.mark.spark

SOURCE = {"seed": 3, "users": 300, "orders": 0, "rows_per_partition": 100}
STREAM = "users"


class StopAtStart(SyncObserver):
    """Records what starts and commits; asks the engine to stop when checkpoint ``nth`` starts."""

    def __init__(self, nth: int | None = None) -> None:
        self.nth = nth
        self.engine: SyncEngine | None = None
        self.started: list[int] = []
        self.committed_rows: list[int] = []

    def checkpoint_started(self, stream: str, index: int) -> None:
        self.started.append(index)
        if len(self.started) == self.nth and self.engine is not None:
            self.engine.request_stop("asked by the test")

    def checkpoint_committed(self, stream: str, partitions: int, result: CommitResult) -> None:
        self.committed_rows.append(result.rows)


def sync(path: Path, observer: StopAtStart) -> SyncResult:
    connection = load_connection(path)
    engine = SyncEngine(connection, MetadataStore(connection.metadata_store or ""),
                        observer=observer)
    observer.engine = engine
    return engine.run()


def ids(table: pa.Table) -> list[int]:
    return sorted(table.column("id").to_pylist())


def test_a_stop_lets_the_commit_in_flight_land_and_the_next_sync_finishes(
        spark: Any, tmp_path: Path) -> None:
    path = connection_file(
        tmp_path, name="stoppable", source=SOURCE,
        streams=[{"name": STREAM, "sync_mode": "incremental", "destination_sync_mode": "append"}],
        checkpoint={"partitions_per_checkpoint": 1, "concurrent_checkpoints": 1})
    store = MetadataStore(load_connection(path).metadata_store or "")
    stream = SampleSource(SOURCE).stream(STREAM)
    planned = stream.partitions(None)
    assert len(planned) == 3

    first = StopAtStart(nth=2)
    stopped = sync(path, first)
    assert stopped.status == "stopped", stopped.to_dict()
    assert stopped.stop_reason and stopped.stop_reason.startswith("asked by the test")
    [stats] = stopped.streams
    assert (stats.status, stats.checkpoints_done, stats.checkpoints) == ("stopped", 2, 3)
    # The checkpoint that had started when the stop came committed; no other started.
    assert len(first.started) == 2 and first.committed_rows == [100, 100]
    run = store.get_run(stopped.run_id)
    assert run is not None and run.status == "stopped"
    assert [(a.number, a.status) for a in run.attempts] == [(1, "stopped")]
    assert [(c.index, c.status) for c in store.list_checkpoints(stopped.run_id)] == \
        [(index, "released") for index in first.started]

    # The table holds exactly the committed partitions' rows, once each...
    location = str(tmp_path / "lake" / STREAM)
    landed = spark.read.format("delta").load(location).toArrow()
    committed = pa.concat_tables(pa.Table.from_batches(list(stream.read(p)))
                                 for p in planned[:2])
    assert ids(landed) == ids(committed)
    # ...and the state says so: planned from it, a sync reads exactly the other partitions.
    state = store.get_state("stoppable", STREAM)
    assert [p.id for p in stream.partitions(state)] == [p.id for p in planned[2:]]
    assert store.find_unfinished_run("stoppable") is not None

    second = StopAtStart()
    finished = sync(path, second)
    assert finished.status == "succeeded", finished.to_dict()
    assert (finished.run_id, finished.resumed, finished.attempt) == (stopped.run_id, True, 2)
    assert len(second.started) == 1 and not set(second.started) & set(first.started)
    # The run's figures, its first attempt's two checkpoints included (this one committed one).
    assert finished.streams[0].records_written == 300
    assert_table_equals_source(spark, location, SOURCE, STREAM)
    commits = tagged_commits(spark, location, stopped.run_id, STREAM)
    assert sorted(commits) == sorted(first.started + second.started)
    assert set(commits.values()) == {1}, f"a checkpoint committed twice: {commits}"
    assert store.find_unfinished_run("stoppable") is None
    run = store.get_run(stopped.run_id)
    assert run is not None and run.status == "succeeded"
    assert [(a.number, a.status) for a in run.attempts] == [(1, "stopped"), (2, "succeeded")]
