"""Every sync mode end to end on real Spark and real Delta tables, against the source's truth."""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from typer.testing import CliRunner

from headwater.cli.app import app
from headwater.config import load_connection
from headwater.connectors.sample import SampleSource
from headwater.destinations._base import CommitMarker, CommitResult
from headwater.destinations.delta import DeltaDestination
from headwater.engine import SyncEngine, SyncResult
from headwater.errors import ConnectionLockedError, DestinationError
from headwater.metadata_store import MetadataStore
from headwater.plan import CheckpointPlan, StreamPlan
from tests.integration._connections import connection_file

pytestmark = pytest.mark.spark

USERS = 3000
SOURCE = {"seed": 7, "users": USERS, "orders": 0, "rows_per_partition": 500,
          "updates_per_generation": 40, "new_per_generation": 25}


def write_connection(tmp_path: Path, streams: list[dict[str, Any]], **source: Any) -> Path:
    return connection_file(tmp_path, name="it", source={**SOURCE, **source}, streams=streams,
                           checkpoint={"partitions_per_checkpoint": 2, "concurrent_checkpoints": 2})


def sync(path: Path) -> SyncResult:
    connection = load_connection(path)
    store = MetadataStore(connection.metadata_store or "")
    return SyncEngine(connection, store).run()


def table(spark: Any, tmp_path: Path, stream: str = "users") -> pa.Table:
    return spark.read.format("delta").load(str(tmp_path / "lake" / stream)).toArrow()


def expected(stream: str = "users", **source: Any) -> pa.Table:
    return SampleSource({**SOURCE, **source}).expected_rows(stream)


def keyed(rows: pa.Table) -> Counter[tuple[int, Any]]:
    """(id, updated_at) pairs with their multiplicity: duplicates and misses both show."""
    return Counter(zip(rows.column("id").to_pylist(), rows.column("updated_at").to_pylist(),
                       strict=True))


USERS_INCREMENTAL_DEDUP = [{"name": "users", "sync_mode": "incremental",
                            "destination_sync_mode": "append_dedup",
                            "cursor_field": "updated_at", "primary_key": ["id"]}]


def test_full_refresh_overwrite_replaces_the_table(spark: Any, tmp_path: Path) -> None:
    streams = [{"name": "users", "sync_mode": "full_refresh",
                "destination_sync_mode": "overwrite"}]
    first = sync(write_connection(tmp_path, streams))
    assert first.status == "succeeded"
    assert keyed(table(spark, tmp_path)) == keyed(expected())

    second = sync(write_connection(tmp_path, streams, generation=1))
    assert second.streams[0].records_written == USERS + 25
    assert keyed(table(spark, tmp_path)) == keyed(expected(generation=1))


def test_an_overwrite_whose_first_checkpoint_fails_to_stage_publishes_nothing(
        spark: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    streams = [{"name": "users", "sync_mode": "full_refresh",
                "destination_sync_mode": "overwrite"}]
    assert sync(write_connection(tmp_path, streams)).status == "succeeded"
    before = keyed(table(spark, tmp_path))

    real = DeltaDestination.stage_files

    def first_fails(self: DeltaDestination, spark: Any, plan: StreamPlan,
                    checkpoint: CheckpointPlan, files: Any, marker: CommitMarker) -> CommitResult:
        if checkpoint.index == plan.checkpoints[0].index:
            files.collect()  # its tasks wrote their files; then its staging fails
            raise DestinationError("injected: staging the first checkpoint failed",
                                   stream=marker.stream)
        return real(self, spark, plan, checkpoint, files, marker)

    monkeypatch.setattr(DeltaDestination, "stage_files", first_fails)
    path = write_connection(tmp_path, streams, generation=1)
    failed = sync(path)
    assert failed.status == "failed"
    assert failed.streams[0].checkpoints > 1
    assert "injected" in (failed.streams[0].error or "")
    assert keyed(table(spark, tmp_path)) == before  # the other lanes staged: nothing shows

    monkeypatch.undo()
    again = sync(path)
    assert again.status == "succeeded", again.to_dict()
    assert keyed(table(spark, tmp_path)) == keyed(expected(generation=1))


def test_full_refresh_append_keeps_every_generation(spark: Any, tmp_path: Path) -> None:
    streams = [{"name": "users", "sync_mode": "full_refresh", "destination_sync_mode": "append"}]
    sync(write_connection(tmp_path, streams))
    sync(write_connection(tmp_path, streams))
    rows = table(spark, tmp_path)
    assert rows.num_rows == 2 * USERS
    assert set(Counter(rows.column("id").to_pylist()).values()) == {2}
    assert len(set(rows.column("_hw_run_id").to_pylist())) == 2


def test_incremental_append_reads_only_what_changed(spark: Any, tmp_path: Path) -> None:
    streams = [{"name": "users", "sync_mode": "incremental", "destination_sync_mode": "append",
                "cursor_field": "updated_at"}]
    sync(write_connection(tmp_path, streams))
    second = sync(write_connection(tmp_path, streams, generation=1))
    assert second.streams[0].records_read == 40 + 25

    world0, world1 = keyed(expected()), keyed(expected(generation=1))
    changed = world1 - world0
    assert sum(changed.values()) == 40 + 25
    assert keyed(table(spark, tmp_path)) == world0 + changed

    third = sync(write_connection(tmp_path, streams, generation=1))
    assert third.streams[0].records_read == 0


def test_incremental_dedup_keeps_the_latest_row_per_key(spark: Any, tmp_path: Path) -> None:
    for generation in (0, 1, 2):
        result = sync(write_connection(tmp_path, USERS_INCREMENTAL_DEDUP, generation=generation))
        assert result.status == "succeeded"
    rows = table(spark, tmp_path)
    assert keyed(rows) == keyed(expected(generation=2))
    truth = expected(generation=2)
    by_id = dict(zip(truth.column("id").to_pylist(), truth.column("age").to_pylist(),
                     strict=True))
    assert dict(zip(rows.column("id").to_pylist(), rows.column("age").to_pylist(),
                    strict=True)) == by_id


#: What the first sync of :data:`USERS_INCREMENTAL_DEDUP` carries in its source's config,
#: and must never show.
SECRET = "sk-live-7Hq9ZzSECRET"


@dataclass(frozen=True)
class CliSync:
    """One ``headwater sync --json -v`` of :data:`USERS_INCREMENTAL_DEDUP`, generation 0."""

    folder: Path
    output: str
    document: dict[str, Any]

    @property
    def store(self) -> MetadataStore:
        return MetadataStore(f"sqlite:///{self.folder / 'meta.db'}")


@pytest.fixture(scope="module")
def first_dedup_sync(spark: Any, tmp_path_factory: pytest.TempPathFactory) -> CliSync:
    """The first sync of a dedup stream, run once for the tests that only read what it
    left (its state, run, table, JSON and output): a MERGE per checkpoint is a sync's
    dearest part, and those tests would each have run the same one."""
    folder = tmp_path_factory.mktemp("first-dedup-sync")
    path = write_connection(folder, USERS_INCREMENTAL_DEDUP, api_key=SECRET)
    result = CliRunner().invoke(app, ["sync", str(path), "--json", "-v"])
    assert result.exit_code == 0, result.output
    return CliSync(folder, result.output, json.loads(result.stdout))


def test_state_and_run_history_are_recorded(spark: Any, first_dedup_sync: CliSync) -> None:
    store = first_dedup_sync.store
    tmp_path = first_dedup_sync.folder
    run_id = first_dedup_sync.document["run_id"]
    run = store.get_run(run_id)
    assert run is not None and run.status == "succeeded"
    planned = [p for c in run.plan["streams"][0]["checkpoints"] for p in c["partitions"]]
    assert len(planned) == USERS // 500
    state = store.get_state("it", "users")
    assert state is not None
    stream = SampleSource(SOURCE).stream("users")
    assert state["slices"] == [{"start": stream.cursor_start(), "end": stream.now()}]
    released = store.released_indices(run_id, "users")
    assert len(released) == len(run.plan["streams"][0]["checkpoints"])
    rows = table(spark, tmp_path)
    assert set(rows.column("_hw_run_id").to_pylist()) == {run_id}
    assert len(set(rows.column("_hw_raw_id").to_pylist())) == USERS


def test_values_that_do_not_fit_are_kept_with_their_reason(spark: Any, tmp_path: Path) -> None:
    streams = [{"name": "users", "sync_mode": "full_refresh", "destination_sync_mode": "overwrite"}]
    result = sync(write_connection(tmp_path, streams, bad_value_every=7))
    assert result.status == "succeeded"
    bad_ids = {i for i in range(USERS) if (i + 1) % 7 == 0}
    assert result.streams[0].records_rejected == len(bad_ids)
    assert result.streams[0].records_written == USERS
    rows = table(spark, tmp_path).to_pylist()
    noted = {r["id"]: r["_hw_notes"] for r in rows if r["_hw_notes"]}
    assert set(noted) == bad_ids
    for notes in noted.values():
        assert notes == [{"field": "age", "reason": notes[0]["reason"], "value": "unknown"}]
        assert "expected int64" in notes[0]["reason"]
    assert all(r["age"] is None for r in rows if r["id"] in bad_ids)
    assert all(r["age"] is not None for r in rows if r["id"] not in bad_ids)


def test_new_source_columns_are_added_to_the_table(spark: Any, tmp_path: Path) -> None:
    sync(write_connection(tmp_path, USERS_INCREMENTAL_DEDUP))
    assert "loyalty_tier" not in table(spark, tmp_path).column_names
    sync(write_connection(tmp_path, USERS_INCREMENTAL_DEDUP, generation=1, schema_version=2))
    rows = table(spark, tmp_path)
    assert "loyalty_tier" in rows.column_names
    truth = expected(generation=1, schema_version=2)
    world0 = keyed(expected())
    changed_ids = {i for (i, _), _n in (keyed(truth) - world0).items()}
    tiers = dict(zip(rows.column("id").to_pylist(), rows.column("loyalty_tier").to_pylist(),
                     strict=True))
    expected_tiers = dict(zip(truth.column("id").to_pylist(),
                              truth.column("loyalty_tier").to_pylist(), strict=True))
    assert {i: tiers[i] for i in changed_ids} == {i: expected_tiers[i] for i in changed_ids}
    assert all(tiers[i] is None for i in tiers if i not in changed_ids)


def test_a_second_sync_of_a_locked_connection_is_refused(spark: Any, tmp_path: Path) -> None:
    path = write_connection(tmp_path, USERS_INCREMENTAL_DEDUP)
    store = MetadataStore(f"sqlite:///{tmp_path / 'meta.db'}")
    with store.lock("it"), pytest.raises(ConnectionLockedError, match="already being synced"):
        sync(path)
    assert sync(path).status == "succeeded"


def test_cli_json_and_history_never_show_secrets(spark: Any, first_dedup_sync: CliSync) -> None:
    secret, tmp_path = SECRET, first_dedup_sync.folder
    runner = CliRunner()
    assert secret not in first_dedup_sync.output
    document = first_dedup_sync.document
    assert document["status"] == "succeeded"
    assert [s["name"] for s in document["streams"]] == ["users"]
    assert {"records_read", "records_written", "records_rejected"} <= set(document["streams"][0])

    shown = runner.invoke(app, ["runs", "--store", f"sqlite:///{tmp_path / 'meta.db'}",
                                "show", document["run_id"], "--json"])
    assert shown.exit_code == 0, shown.output
    assert secret not in shown.output
    assert json.loads(shown.stdout)["config"]["source"]["config"]["api_key"] == "**********"


def test_cli_json_shows_where_a_sync_spent_its_time(spark: Any,
                                                    first_dedup_sync: CliSync) -> None:
    """``steps_s``: seconds per step of the fixed cost (Spark, planning, table, store, commits)."""
    tmp_path, document = first_dedup_sync.folder, first_dedup_sync.document
    steps = document["steps_s"]
    assert {"cli_setup", "early_reads", "spark_session", "lock", "store_reads", "plan",
            "store_writes", "table_prepare", "checkpoints (Spark job + commit)",
            "hooks"} <= set(steps)
    assert all(isinstance(seconds, float) and seconds >= 0 for seconds in steps.values())
    # Kept with the run as well (the page shows them), all but the hooks' after the lock.
    run = MetadataStore(f"sqlite:///{tmp_path / 'meta.db'}").get_run(document["run_id"])
    assert run is not None and set(run.stats["steps_s"]) == set(steps) - {"hooks"}


def test_a_session_lists_the_delta_jars_it_runs_with_for_the_next_start(
        spark: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from headwater.engine._spark import CACHE_ENV, _remember_jars, resolved_jars_file

    monkeypatch.setenv(CACHE_ENV, str(tmp_path / "cache"))
    _remember_jars(spark)
    jars = resolved_jars_file().read_text().split()
    assert any(Path(jar).name.startswith(("io.delta_delta-spark", "delta-spark"))
               for jar in jars)
    assert all(Path(jar).is_file() for jar in jars)
