"""Syncs into Iceberg tables on a SQLite (and a PostgreSQL) catalog, read back with PyIceberg.

Real Spark, real PyIceberg, real catalogs: each checkpoint must be exactly one
snapshot carrying its marker, and what is not implemented yet must be refused
before the table changes.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

from headwater.config import load_connection
from headwater.connectors.sample import SampleSource
from headwater.destinations.iceberg import IcebergDestination
from headwater.engine import SyncEngine, SyncResult
from headwater.errors import DestinationError
from headwater.metadata_store import MetadataStore
from headwater.table_schema import META_NAMES
from tests.integration._connections import connection_file

pytestmark = pytest.mark.spark

USERS = 600
SOURCE = {"seed": 11, "users": USERS, "orders": 0, "rows_per_partition": 100,
          "updates_per_generation": 40, "new_per_generation": 25}
APPEND = [{"name": "users", "sync_mode": "full_refresh", "destination_sync_mode": "append"}]
INCREMENTAL = [{"name": "users", "sync_mode": "incremental", "destination_sync_mode": "append",
                "cursor_field": "updated_at"}]
OVERWRITE = [{"name": "users", "sync_mode": "full_refresh",
              "destination_sync_mode": "overwrite"}]


def _config(tmp_path: Path, **catalog: Any) -> dict[str, Any]:
    config: dict[str, Any] = {"warehouse": str(tmp_path / "warehouse")}
    if catalog:
        config["catalog"] = catalog
    return config


def write_connection(tmp_path: Path, streams: list[dict[str, Any]], *,
                     per_checkpoint: int = 2, destination: dict[str, Any] | None = None,
                     **source: Any) -> Path:
    return connection_file(
        tmp_path, name="ice", source={**SOURCE, **source}, streams=streams,
        checkpoint={"partitions_per_checkpoint": per_checkpoint, "concurrent_checkpoints": 2},
        destination={"type": "iceberg", "config": destination or _config(tmp_path)})


def sync(path: Path, destination: IcebergDestination | None = None) -> SyncResult:
    connection = load_connection(path)
    store = MetadataStore(connection.metadata_store or "")
    return SyncEngine(connection, store, destination=destination).run()


def destination_of(path: Path) -> IcebergDestination:
    connection = load_connection(path)
    return IcebergDestination(connection.destination.config)


def read(path: Path, stream: str = "users") -> pa.Table:
    table = destination_of(path).catalog().load_table(f"headwater.{stream}")
    return table.scan().to_arrow()


def tagged_snapshots(path: Path, stream: str = "users") -> list[dict[str, str]]:
    table = destination_of(path).catalog().load_table(f"headwater.{stream}")
    summaries = []
    for snapshot in table.snapshots():
        assert snapshot.summary is not None
        summaries.append({"operation": snapshot.summary.operation.value,
                          **snapshot.summary.additional_properties})
    return summaries


def committed(path: Path, run_id: str) -> list[int]:
    store = MetadataStore(load_connection(path).metadata_store or "")
    return sorted(c.index for c in store.list_checkpoints(run_id)
                  if c.status in ("committed", "released"))


def keyed(rows: pa.Table) -> Counter[tuple[int, Any]]:
    return Counter(zip(rows.column("id").to_pylist(), rows.column("updated_at").to_pylist(),
                       strict=True))


def expected(**source: Any) -> pa.Table:
    return SampleSource({**SOURCE, **source}).expected_rows("users")


def _assert_one_snapshot_per_checkpoint(path: Path, runs: list[SyncResult]) -> None:
    """Every snapshot carries a marker, and each committed checkpoint has exactly one."""
    summaries = tagged_snapshots(path)
    assert all("headwater.tag" in s and "headwater.app_id" in s and "headwater.version" in s
               for s in summaries), summaries
    import json
    marked = Counter((json.loads(s["headwater.tag"])["headwater"]["run_id"],
                      json.loads(s["headwater.tag"])["headwater"]["checkpoint"])
                     for s in summaries)
    wanted = Counter((run.run_id, index) for run in runs for index in committed(path, run.run_id))
    assert marked == wanted
    for s in summaries:  # the version is the checkpoint's index
        assert int(s["headwater.version"]) == json.loads(s["headwater.tag"])["headwater"][
            "checkpoint"]


def test_full_refresh_append_twice_keeps_both_generations(spark: Any, tmp_path: Path) -> None:
    path = write_connection(tmp_path, APPEND)
    first = sync(path)
    second = sync(path)
    assert first.status == second.status == "succeeded", second.to_dict()
    rows = read(path)
    assert rows.num_rows == 2 * USERS
    assert rows.column_names[:len(META_NAMES)] == META_NAMES
    assert set(rows.column("_hw_run_id").to_pylist()) == {first.run_id, second.run_id}
    assert rows.column("_hw_extracted_at").null_count == 0
    assert set(Counter(rows.column("id").to_pylist()).values()) == {2}
    # 6 partitions, 2 per checkpoint, 2 lanes: 3 checkpoints per run, one append snapshot each.
    assert len(committed(path, first.run_id)) == 3
    _assert_one_snapshot_per_checkpoint(path, [first, second])
    assert {s["operation"] for s in tagged_snapshots(path)} == {"append"}
    recorded = MetadataStore(load_connection(path).metadata_store or "").list_checkpoints(
        first.run_id)
    assert all(c.stats["writer"] == "tasks+pyiceberg" and c.stats["iceberg_snapshot_id"]
               for c in recorded)


def test_incremental_append_adds_what_changed_and_new_columns(spark: Any,
                                                              tmp_path: Path) -> None:
    path = write_connection(tmp_path, INCREMENTAL)
    first = sync(path)
    assert first.status == "succeeded", first.to_dict()
    assert "loyalty_tier" not in read(path).column_names
    # The source's next generation also has a new column: the table gains it.
    second = sync(write_connection(tmp_path, INCREMENTAL, generation=1, schema_version=2))
    assert second.status == "succeeded", second.to_dict()
    assert second.streams[0].records_read == 40 + 25
    rows = read(path)
    world0, world1 = keyed(expected()), keyed(expected(generation=1, schema_version=2))
    assert keyed(rows) == world0 + (world1 - world0)
    tiers = [t for t, run in zip(rows.column("loyalty_tier").to_pylist(),
                                 rows.column("_hw_run_id").to_pylist(), strict=True)
             if run == second.run_id]
    assert len(tiers) == 65 and any(t is not None for t in tiers)
    _assert_one_snapshot_per_checkpoint(path, [first, second])


def test_overwrite_of_one_checkpoint_is_one_overwrite_snapshot(spark: Any,
                                                               tmp_path: Path) -> None:
    path = write_connection(tmp_path, OVERWRITE, per_checkpoint=16)
    first = sync(path)
    second = sync(write_connection(tmp_path, OVERWRITE, per_checkpoint=16, generation=1))
    assert first.status == second.status == "succeeded", second.to_dict()
    rows = read(path)
    assert keyed(rows) == keyed(expected(generation=1))
    assert set(rows.column("_hw_run_id").to_pylist()) == {second.run_id}
    _assert_one_snapshot_per_checkpoint(path, [first, second])
    operations = [s["operation"] for s in tagged_snapshots(path)]
    assert sorted(operations) == ["append", "overwrite"]  # the first had nothing to replace


def test_what_is_not_implemented_is_refused_before_the_table_changes(
        spark: Any, tmp_path: Path) -> None:
    several = sync(write_connection(tmp_path, OVERWRITE, per_checkpoint=1))
    assert several.status == "failed"
    error = several.streams[0].error or ""
    assert "'users'" in error and "overwrite of 6 checkpoints" in error, error
    assert destination_of(write_connection(tmp_path, OVERWRITE)).load_table("users") is None


class Killed(BaseException):
    """Ends the sync where it is, as SIGKILL would (nothing in the engine catches it)."""


class DiesAfterSecondCommit(IcebergDestination):
    """Its second snapshot lands, then the process "dies" before the engine hears of it."""

    commits = 0

    def commit_files(self, *args: Any, **kwargs: Any) -> Any:
        result = super().commit_files(*args, **kwargs)
        DiesAfterSecondCommit.commits += 1
        if DiesAfterSecondCommit.commits == 2:
            raise Killed
        return result


def test_a_snapshot_that_landed_before_a_kill_is_found_not_written_twice(
        spark: Any, tmp_path: Path) -> None:
    streams = [{**INCREMENTAL[0]}]
    path = connection_file(
        tmp_path, name="ice", source=SOURCE, streams=streams,
        checkpoint={"partitions_per_checkpoint": 1, "concurrent_checkpoints": 1},
        destination={"type": "iceberg", "config": _config(tmp_path)})
    with pytest.raises(Killed):
        sync(path, DiesAfterSecondCommit(_config(tmp_path)))
    assert len(tagged_snapshots(path)) == 2  # the second snapshot landed
    again = sync(path, IcebergDestination(_config(tmp_path)))
    assert again.resumed and again.attempt == 2 and again.status == "succeeded", again.to_dict()
    # The landed checkpoint was found by its marker, not committed again.
    assert keyed(read(path)) == keyed(expected())
    summaries = tagged_snapshots(path)
    assert len(summaries) == 6
    assert len({s["headwater.tag"] for s in summaries}) == 6
    store = MetadataStore(load_connection(path).metadata_store or "")
    found_again = [c for c in store.list_checkpoints(again.run_id)
                   if c.stats.get("already_committed")]
    assert len(found_again) == 1 and found_again[0].stats["records_written"] == 100
    # Nothing left in the data folder that no snapshot references.
    table = destination_of(path).catalog().load_table("headwater.users")
    referenced = {Path(t.file.file_path.removeprefix("file://")).name
                  for t in table.scan().plan_files()}
    on_disk = {p.name for p in (Path(table.location().removeprefix("file://")) / "data")
               .glob("*.parquet")}
    assert on_disk == referenced


def test_a_postgresql_catalog(spark: Any, tmp_path: Path, postgres_server: Any) -> None:
    with postgres_server.database() as database:
        uri = postgres_server.database_url(database).replace("postgresql://",
                                                             "postgresql+psycopg2://")
        config = _config(tmp_path, type="sql", uri=uri)
        IcebergDestination(config).check()
        path = write_connection(tmp_path, APPEND, destination=config)
        first = sync(path)
        assert first.status == "succeeded", first.to_dict()
        assert read(path).num_rows == USERS
        _assert_one_snapshot_per_checkpoint(path, [first])
        assert not (tmp_path / "warehouse" / "catalog.db").exists()


def test_check_proves_the_catalog_writable_or_says_why_not(tmp_path: Path) -> None:
    destination = IcebergDestination(_config(tmp_path))
    destination.check()
    assert [t for t in destination.catalog().list_tables("headwater")] == []
    broken = IcebergDestination(_config(tmp_path, type="sql",
                                        uri="postgresql+psycopg2://nobody@127.0.0.1:1/none"))
    with pytest.raises(DestinationError, match="catalog is not usable"):
        broken.check()
