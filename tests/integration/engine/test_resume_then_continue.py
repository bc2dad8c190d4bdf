"""``SyncEngine.sync``: finish a connection's unfinished run, then sync what is new (issue 20).

In-process, on real Spark, against the fake destination (the shipped ``FakeDestination``:
no Delta, so the runs are cheap and a commit can be made to fail on purpose).
The CLI side, a real SIGKILL and Delta are ``tests/integration/test_crash_resume.py``'s;
``serve``'s runner is ``tests/integration/serve/test_serve.py``'s.

The sample source gains only new ids between generations (no updates), so an
``append`` table equals the newer world exactly when every row landed once.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from headwater.config import load_connection
from headwater.connectors.sample import SampleSource
from headwater.destinations.testing import FakeDestination
from headwater.engine import SyncEngine, SyncObserver, SyncResult
from headwater.metadata_store import MetadataStore
from tests.integration._connections import connection_file

pytestmark = pytest.mark.spark

ARRIVED = 50
SOURCE = {"seed": 7, "users": 300, "orders": 0, "rows_per_partition": 100,
          "updates_per_generation": 0, "new_per_generation": ARRIVED}
STREAMS = [{"name": "users", "sync_mode": "incremental", "destination_sync_mode": "append",
            "cursor_field": "updated_at"}]


class StopAtStart(SyncObserver):
    """Asks the engine to stop when the ``nth`` checkpoint (of any run) starts."""

    def __init__(self, nth: int | None = None) -> None:
        self.nth, self.started = nth, 0
        self.engine: SyncEngine | None = None

    def checkpoint_started(self, stream: str, index: int) -> None:
        self.started += 1
        if self.started == self.nth and self.engine is not None:
            self.engine.request_stop("asked by the test")


class Killed(BaseException):
    """Ends the sync where it is, as SIGKILL would (nothing in the engine catches it)."""


class Faulty(FakeDestination):
    """Its ``die_at``-th commit lands, then the process "dies"; with ``refuse``, every
    commit fails (an ordinary error: the stream, hence the run, fails)."""

    def __init__(self, config: dict[str, Any], *, die_at: int | None = None,
                 refuse: bool = False) -> None:
        super().__init__(config)
        self.die_at, self.refuse, self.commits = die_at, refuse, 0

    def _log(self, stream: str, *args: Any) -> Any:
        if self.refuse:
            raise RuntimeError("the table refuses commits")
        result = super()._log(stream, *args)
        self.commits += 1
        if self.commits == self.die_at:
            raise Killed
        return result


class Connection:
    """The test's connection file (at a generation), store and fake tables."""

    def __init__(self, tmp_path: Path) -> None:
        self.tmp_path = tmp_path
        self.lake = tmp_path / "fake"
        self.path = self.write(0)
        self.store = MetadataStore(load_connection(self.path).metadata_store or "")

    def write(self, generation: int) -> Path:
        return connection_file(self.tmp_path, name="continued",
                               source={**SOURCE, "generation": generation}, streams=STREAMS,
                               checkpoint={"partitions_per_checkpoint": 1})

    def engine(self, destination: FakeDestination | None = None,
               observer: StopAtStart | None = None) -> SyncEngine:
        engine = SyncEngine(load_connection(self.path), self.store, observer=observer,
                            destination=destination or FakeDestination({"path": str(self.lake)}))
        if observer is not None:
            observer.engine = engine
        return engine

    def kill_after_first_commit(self) -> str:
        with pytest.raises(Killed):
            self.engine(Faulty({"path": str(self.lake)}, die_at=1)).run()
        run = self.store.find_unfinished_run("continued")
        assert run is not None
        return run.run_id

    def assert_table_is_the_world(self, generation: int) -> None:
        expected = SampleSource({**SOURCE, "generation": generation}).expected_rows("users")
        table = FakeDestination({"path": str(self.lake)}).read_arrow("users")
        assert sorted(table.column("id").to_pylist()) == expected.column("id").to_pylist()


def written(result: SyncResult) -> int:
    return sum(s.records_written for s in result.streams)


def test_sync_finishes_the_killed_run_then_syncs_what_arrived_since(
        spark: Any, tmp_path: Path) -> None:
    conn = Connection(tmp_path)
    killed = conn.kill_after_first_commit()
    conn.path = conn.write(1)  # new rows arrive

    resumed, new = conn.engine().sync()
    assert (resumed.run_id, resumed.resumed, resumed.attempt, resumed.status) == (
        killed, True, 2, "succeeded")
    assert (new.resumed, new.attempt, new.status) == (False, 1, "succeeded")
    assert written(new) == ARRIVED
    conn.assert_table_is_the_world(1)
    assert [r.run_id for r in conn.store.list_runs("continued")] == [new.run_id, killed]
    # Nothing unfinished: the next sync is one run, with nothing to read.
    [after] = conn.engine().sync()
    assert (after.resumed, after.status, written(after)) == (False, "succeeded", 0)


def test_a_killed_and_resumed_runs_figures_are_every_attempts(
        spark: Any, tmp_path: Path) -> None:
    """Killed after its second commit (the first released its state, the second not yet):
    the resumed attempt skips the first, finds the second committed and runs the third;
    the run's figures, in its result and its record, count all three once."""
    conn = Connection(tmp_path)
    with pytest.raises(Killed):
        conn.engine(Faulty({"path": str(conn.lake)}, die_at=2)).run()
    killed = conn.store.find_unfinished_run("continued")
    assert killed is not None
    assert [c.status for c in conn.store.list_checkpoints(killed.run_id)].count("released") >= 1

    resumed = conn.engine().run()
    assert (resumed.run_id, resumed.attempt, resumed.status) == (killed.run_id, 2, "succeeded")
    assert written(resumed) == resumed.streams[0].records_read == SOURCE["users"]
    record = conn.store.get_run(killed.run_id)
    assert record is not None
    assert [s["records_written"] for s in record.stats["streams"]] == [SOURCE["users"]]
    conn.assert_table_is_the_world(0)


def test_a_failed_resume_starts_no_new_run(spark: Any, tmp_path: Path) -> None:
    conn = Connection(tmp_path)
    killed = conn.kill_after_first_commit()
    conn.path = conn.write(1)

    [failed] = conn.engine(Faulty({"path": str(conn.lake)}, refuse=True)).sync()
    assert (failed.run_id, failed.resumed, failed.status) == (killed, True, "failed")
    assert [r.run_id for r in conn.store.list_runs("continued")] == [killed]


def test_a_stop_during_the_resumed_run_starts_no_new_run(spark: Any, tmp_path: Path) -> None:
    """Stopped with checkpoints left, or stopped as its last checkpoint began (the
    run then finishes): either way the command ends with the resumed run."""
    conn = Connection(tmp_path)
    first = conn.engine(observer=StopAtStart(nth=1)).run()
    assert first.status == "stopped"  # checkpoint 1 of 3 committed
    conn.path = conn.write(1)

    [stopped] = conn.engine(observer=StopAtStart(nth=1)).sync()
    assert (stopped.run_id, stopped.resumed, stopped.status) == (first.run_id, True, "stopped")
    [finished] = conn.engine(observer=StopAtStart(nth=1)).sync()
    # The run's figures: its three attempts committed one checkpoint of 100 rows each.
    assert (finished.run_id, finished.status, written(finished)) == (
        first.run_id, "succeeded", 300)
    assert [r.run_id for r in conn.store.list_runs("continued")] == [first.run_id]

    # The new rows were left for the next sync.
    [new] = conn.engine().sync()
    assert (new.resumed, new.status, written(new)) == (False, "succeeded", ARRIVED)
    conn.assert_table_is_the_world(1)


def test_one_run_only_finishes_the_unfinished_run(spark: Any, tmp_path: Path) -> None:
    """``run()`` (``sync --one-run``): the resumed run, and the new rows wait."""
    conn = Connection(tmp_path)
    killed = conn.kill_after_first_commit()
    conn.path = conn.write(1)
    resumed = conn.engine().run()
    assert (resumed.run_id, resumed.status) == (killed, "succeeded")
    conn.assert_table_is_the_world(0)

