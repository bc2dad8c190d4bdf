"""A Delta commit whose answer is lost while its lookup fails too: the run stays resumable.

Real Spark, a real local Delta table, the real CLI (in process, so the test can
inject the failure at the destination's seam): the second checkpoint's commit
raises, after landing or before, and the lookup of its marker in the table's
history raises too (``_commit_lookup._tagged_commit``, as an unreachable store
would).  The sync exits 1 with a message saying what to do, the run is
``stopped`` (not finished: a finished run would let the next sync plan anew and
write the checkpoint again), and the next sync resumes it, looks the marker up,
skips the checkpoint if it landed or writes it if not: every row once.  A sync
of new data afterwards reads only that: the state is right.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from click.testing import Result
from typer.testing import CliRunner

from headwater import _events
from headwater.cli.app import app
from headwater.destinations.delta import _commit_lookup, _delta_rs
from headwater.destinations.delta import _destination as delta
from headwater.errors import ExitCode
from headwater.metadata_store import MetadataStore
from tests.integration._cli import assert_table_equals_source, read_table
from tests.integration._connections import connection_file

pytestmark = pytest.mark.spark

NAME = "unknown-outcome"
SOURCE: dict[str, Any] = {"seed": 11, "users": 400, "orders": 0, "rows_per_partition": 100,
                          "updates_per_generation": 0, "new_per_generation": 20}
STREAMS = [{"name": "users", "sync_mode": "incremental", "destination_sync_mode": "append",
            "cursor_field": "updated_at"}]
#: One partition per checkpoint, one lane: checkpoints commit one after the other.
CHECKPOINT = {"partitions_per_checkpoint": 1, "concurrent_checkpoints": 1}
#: The commit (counted from 1) whose answer is lost.
BROKEN = 2


class Faults:
    """The failures injected at the destination's seam, on until :meth:`heal`."""

    def __init__(self) -> None:
        self.lookups_fail = False
        self.commits = 0

    def lose_an_answer(self) -> None:
        """The :data:`BROKEN` commit lands, then raises, and lookups fail from then on."""
        def lose_the_answer(moment: str) -> None:
            if moment != "commit-landed":
                return
            self.commits += 1
            if self.commits == BROKEN:
                self.lookups_fail = True
                raise ConnectionResetError("the commit's answer was lost (injected)")

        _events.listen(lose_the_answer)

    def heal(self) -> None:
        self.lookups_fail = False
        _events.clear()


@pytest.fixture
def faults(monkeypatch: pytest.MonkeyPatch) -> Iterator[Faults]:
    found = Faults()
    real_lookup = _commit_lookup._tagged_commit

    def lookup(*args: Any, **kwargs: Any) -> Any:
        if found.lookups_fail:
            raise OSError("the store did not answer (injected)")
        return real_lookup(*args, **kwargs)

    monkeypatch.setattr(_commit_lookup, "_tagged_commit", lookup)
    _events.clear()
    yield found
    _events.clear()


def _path(tmp_path: Path, writer: str, generation: int = 0) -> Path:
    return connection_file(tmp_path, name=NAME, source={**SOURCE, "generation": generation},
                           streams=STREAMS, checkpoint=CHECKPOINT, writer=writer)


def _sync(path: Path) -> Result:
    return CliRunner().invoke(app, ["sync", str(path), "--json", "-vv"])


def _ids(spark: Any, tmp_path: Path) -> list[int]:
    ids: list[int] = read_table(spark, str(tmp_path / "lake" / "users"), ["id"]).column(
        "id").to_pylist()
    return ids


def _assert_left_resumable(done: Result, store: MetadataStore) -> str:
    """Exit 1, the run ``stopped`` with the message a person acts on; the run's id."""
    assert done.exit_code == ExitCode.FAILED, done.output
    document = json.loads(done.stdout)
    assert document["status"] == "stopped" and document["outcome_unknown"] is True, document
    says = ("could not check whether checkpoint {} of stream users landed; the next sync "
            "resumes this run and checks again")
    [stream] = document["streams"]
    assert stream["status"] == "stopped" and stream["outcome_unknown"] is True, stream
    [run] = store.list_runs(NAME)
    assert run.status == "stopped" and store.find_unfinished_run(NAME) is not None
    failed = [c for c in store.list_checkpoints(run.run_id) if c.status == "failed"]
    assert [c.stats.get("outcome_unknown") for c in failed] == [True], failed
    assert says.format(failed[0].index) in stream["error"], stream
    assert says.format(failed[0].index) in (run.error or ""), run.error
    # Its state was not released, nor any later checkpoint's (none was started).
    released = [c.index for c in store.list_checkpoints(run.run_id) if c.status == "released"]
    assert released == [min(c.index for c in store.list_checkpoints(run.run_id))], released
    return run.run_id


def _assert_resumed_once(spark: Any, tmp_path: Path, writer: str, store: MetadataStore,
                         run_id: str) -> None:
    resumed = _sync(_path(tmp_path, writer))
    assert resumed.exit_code == 0, resumed.output
    document = json.loads(resumed.stdout)
    assert document["runs"][0]["run_id"] == run_id and document["runs"][0]["resumed"]
    assert document["runs"][0]["status"] == "succeeded", document
    assert store.get_run(run_id).status == "succeeded"
    ids = _ids(spark, tmp_path)
    assert len(ids) == len(set(ids)) == SOURCE["users"]
    assert_table_equals_source(spark, str(tmp_path / "lake" / "users"), SOURCE, "users")
    # The state is the whole snapshot's: the next sync reads only the new rows.
    newer = _sync(_path(tmp_path, writer, generation=1))
    assert newer.exit_code == 0, newer.output
    assert json.loads(newer.stdout)["streams"][0]["records_written"] == \
        SOURCE["new_per_generation"]
    assert_table_equals_source(spark, str(tmp_path / "lake" / "users"),
                               {**SOURCE, "generation": 1}, "users")


@pytest.mark.parametrize("writer", ["auto", "spark"])
def test_a_commit_that_landed_and_lost_its_answer_is_found_on_resume_and_kept_once(
        spark: Any, tmp_path: Path, faults: Faults, writer: str) -> None:
    faults.lose_an_answer()
    store = MetadataStore(f"sqlite:///{tmp_path / 'meta.db'}")
    run_id = _assert_left_resumable(_sync(_path(tmp_path, writer)), store)
    assert len(_ids(spark, tmp_path)) == BROKEN * SOURCE["rows_per_partition"]  # it landed

    faults.heal()
    _assert_resumed_once(spark, tmp_path, writer, store, run_id)


@pytest.mark.parametrize("writer", ["auto", "spark"])
def test_a_commit_that_did_not_land_is_written_once_on_resume(
        spark: Any, tmp_path: Path, faults: Faults, writer: str,
        monkeypatch: pytest.MonkeyPatch) -> None:
    real_commit_files, real_write = _delta_rs.commit_files, delta._write

    def refuse(real: Any) -> Any:
        def commit(*args: Any, **kwargs: Any) -> Any:
            faults.commits += 1
            if faults.commits == BROKEN:
                faults.lookups_fail = True
                raise ConnectionResetError("the store went away before the commit (injected)")
            return real(*args, **kwargs)
        return commit

    monkeypatch.setattr(_delta_rs, "commit_files", refuse(real_commit_files))
    monkeypatch.setattr(delta, "_write", refuse(real_write))
    store = MetadataStore(f"sqlite:///{tmp_path / 'meta.db'}")
    run_id = _assert_left_resumable(_sync(_path(tmp_path, writer)), store)
    assert len(_ids(spark, tmp_path)) == (BROKEN - 1) * SOURCE["rows_per_partition"]

    faults.heal()
    _assert_resumed_once(spark, tmp_path, writer, store, run_id)


def test_spark_s_answers_for_a_missing_table_are_the_ones_taken_as_not_there(
        spark: Any, tmp_path: Path) -> None:
    """The error conditions ``_no_table`` takes as "no table" are what Delta raises: a
    path with no table, and a staging table not created yet inside a table's folder."""
    from headwater.destinations.delta._sql import history

    spark.range(1).write.format("delta").save(str(tmp_path / "t"))
    for missing in (tmp_path / "none", tmp_path / "t" / "_hw_staging" / "run"):
        with pytest.raises(Exception) as raised:
            history(spark, str(missing), 5).collect()
        assert _commit_lookup._no_table(raised.value), raised.value


def test_a_run_stays_resumable_until_an_attempt_could_look_its_commit_up(
        spark: Any, tmp_path: Path, faults: Faults, monkeypatch: pytest.MonkeyPatch) -> None:
    """The next sync cannot look either: its table preparation fails (the store is still
    down), then its lookup of the earlier attempt's commit fails.  Each time the run stays
    ``stopped`` (a failed, finished run would be planned anew and write the checkpoint
    again); once the store answers, the resumed run finds the commit: every row once."""
    faults.lose_an_answer()
    store = MetadataStore(f"sqlite:///{tmp_path / 'meta.db'}")
    path = _path(tmp_path, "auto")
    run_id = _assert_left_resumable(_sync(path), store)
    _events.clear()

    real_prepare = delta.DeltaDestination.prepare

    def unreachable(*args: Any, **kwargs: Any) -> Any:
        raise OSError("the store did not answer (injected)")

    monkeypatch.setattr(delta.DeltaDestination, "prepare", unreachable)
    not_prepared = _sync(path)
    assert not_prepared.exit_code == ExitCode.FAILED, not_prepared.output
    document = json.loads(not_prepared.stdout)
    assert document["runs"][0]["run_id"] == run_id and document["status"] == "stopped"
    assert "whether checkpoint 2 landed is still unchecked" in document["stop_reason"]
    assert store.get_run(run_id).status == "stopped"  # type: ignore[union-attr]

    monkeypatch.setattr(delta.DeltaDestination, "prepare", real_prepare)
    not_looked_up = _sync(path)  # prepared, but the lookup of commit 2 fails again
    assert not_looked_up.exit_code == ExitCode.FAILED, not_looked_up.output
    document = json.loads(not_looked_up.stdout)
    assert document["status"] == "stopped" and document["outcome_unknown"] is True
    assert "looking up whether an earlier attempt committed checkpoint 2" in \
        document["stop_reason"]
    assert store.get_run(run_id).status == "stopped"  # type: ignore[union-attr]

    faults.heal()
    _assert_resumed_once(spark, tmp_path, "auto", store, run_id)


def test_serve_retries_a_run_stopped_with_a_commit_unchecked_and_the_retry_resumes_it(
        spark: Any, tmp_path: Path, faults: Faults) -> None:
    """``serve``'s runner (the scheduler's and the web page's sync) marks the stop for a
    retry, unlike a stop on request; the retry resumes the run and lands it once."""
    from headwater.config import load_connection
    from headwater.operations import run_sync

    faults.lose_an_answer()
    config = load_connection(_path(tmp_path, "auto"))
    stopped = run_sync(config)
    assert stopped.status == "stopped" and stopped.retry, stopped
    assert "could not check whether checkpoint" in (stopped.error or ""), stopped
    faults.heal()
    retried = run_sync(config)
    assert retried.status == "succeeded" and retried.resumed_run_id == stopped.run_id, retried
    ids = _ids(spark, tmp_path)
    assert len(ids) == len(set(ids)) == SOURCE["users"]
