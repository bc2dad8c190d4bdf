"""Syncs into Iceberg tables on every catalog the tests can start, read back with PyIceberg.

Real Spark, real PyIceberg, real catalogs on 127.0.0.1: the embedded SQLite
file, PostgreSQL, Apache Iceberg's own REST catalog server, and our path-based
catalog in Iceberg's Hadoop layout (the warehouse folder alone).  Each
checkpoint must be exactly one snapshot carrying its marker, the rows must read
back the same through a catalog client of the test's own, and what is not
implemented yet must be refused before the table changes.
"""

from __future__ import annotations

import json
import sqlite3
from collections import Counter
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from typer.testing import CliRunner

from headwater.cli.app import app
from headwater.config import load_connection
from headwater.connectors.sample import SampleSource
from headwater.destinations.iceberg import IcebergDestination
from headwater.engine import SyncResult
from headwater.errors import DestinationError, ExitCode
from headwater.metadata_store import MetadataStore
from headwater.table_schema import META_NAMES
from tests.integration._connections import connection_file, sync
from tests.integration.destinations.iceberg._catalogs import (
    iceberg_config,
    load_table,
    reader,
    unreferenced_files,
)
from tests.integration.destinations.iceberg._rest_catalog import (
    LOOPBACK,
    RestCatalogServer,
    listening_addresses,
    rest_catalog_server,
)

pytestmark = pytest.mark.spark

USERS = 600
SOURCE = {"seed": 11, "users": USERS, "orders": 0, "rows_per_partition": 100,
          "updates_per_generation": 40, "new_per_generation": 25}
APPEND = [{"name": "users", "sync_mode": "full_refresh", "destination_sync_mode": "append"}]
INCREMENTAL = [{"name": "users", "sync_mode": "incremental", "destination_sync_mode": "append",
                "cursor_field": "updated_at"}]
OVERWRITE = [{"name": "users", "sync_mode": "full_refresh",
              "destination_sync_mode": "overwrite"}]


def write_connection(tmp_path: Path, streams: list[dict[str, Any]], *,
                     per_checkpoint: int = 2, destination: dict[str, Any] | None = None,
                     **source: Any) -> Path:
    return connection_file(
        tmp_path, name="ice", source={**SOURCE, **source}, streams=streams,
        checkpoint={"partitions_per_checkpoint": per_checkpoint, "concurrent_checkpoints": 2},
        destination={"type": "iceberg", "config": destination or iceberg_config(tmp_path)})


def destination_of(path: Path) -> IcebergDestination:
    connection = load_connection(path)
    return IcebergDestination(connection.destination.config)


def fresh_catalog(path: Path) -> Any:
    """A catalog client of the test's own for the connection file's catalog (``_catalogs``)."""
    return reader(load_connection(path).destination.config)


def table_of(path: Path, stream: str = "users") -> Any:
    return load_table(load_connection(path).destination.config, stream)


def read(path: Path, stream: str = "users") -> pa.Table:
    return table_of(path, stream).scan().to_arrow()


def tagged_snapshots(path: Path, stream: str = "users") -> list[dict[str, str]]:
    summaries = []
    for snapshot in table_of(path, stream).snapshots():
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
    marked = Counter((json.loads(s["headwater.tag"])["headwater"]["run_id"],
                      json.loads(s["headwater.tag"])["headwater"]["checkpoint"])
                     for s in summaries)
    wanted = Counter((run.run_id, index) for run in runs for index in committed(path, run.run_id))
    assert marked == wanted
    for s in summaries:  # the version is the checkpoint's index
        assert int(s["headwater.version"]) == json.loads(s["headwater.tag"])["headwater"][
            "checkpoint"]


def test_full_refresh_append_twice_keeps_both_generations(spark: Any, tmp_path: Path,
                                                          config: dict[str, Any]) -> None:
    path = write_connection(tmp_path, APPEND, destination=config)
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


def test_incremental_append_adds_what_changed_and_new_columns(
        spark: Any, tmp_path: Path, config: dict[str, Any]) -> None:
    path = write_connection(tmp_path, INCREMENTAL, destination=config)
    first = sync(path)
    assert first.status == "succeeded", first.to_dict()
    assert "loyalty_tier" not in read(path).column_names
    # The source's next generation also has a new column: the table gains it.
    second = sync(write_connection(tmp_path, INCREMENTAL, destination=config, generation=1,
                                   schema_version=2))
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


def test_a_column_the_table_has_and_the_stream_lost_is_warned(
        spark: Any, tmp_path: Path) -> None:
    sync(write_connection(tmp_path, APPEND, users=100, schema_version=2))
    # The source's schema lost `loyalty_tier`: the table keeps it, this run's rows hold null.
    second = sync(write_connection(tmp_path, APPEND, users=100), expect="warned")
    assert second.streams[0].warnings == [
        "the table has columns the stream's schema no longer has (null in this run's rows): "
        "loyalty_tier"]
    rows = read(tmp_path / "ice.yaml")
    assert {t for t, run in zip(rows.column("loyalty_tier").to_pylist(),
                                rows.column("_hw_run_id").to_pylist(), strict=True)
            if run == second.run_id} == {None}


def test_overwrite_of_one_checkpoint_is_one_overwrite_snapshot(
        spark: Any, tmp_path: Path, config: dict[str, Any]) -> None:
    path = write_connection(tmp_path, OVERWRITE, per_checkpoint=16, destination=config)
    first = sync(path)
    second = sync(write_connection(tmp_path, OVERWRITE, per_checkpoint=16, destination=config,
                                   generation=1))
    assert first.status == second.status == "succeeded", second.to_dict()
    rows = read(path)
    assert keyed(rows) == keyed(expected(generation=1))
    assert set(rows.column("_hw_run_id").to_pylist()) == {second.run_id}
    _assert_one_snapshot_per_checkpoint(path, [first, second])
    operations = [s["operation"] for s in tagged_snapshots(path)]
    assert sorted(operations) == ["append", "overwrite"]  # the first had nothing to replace


class Killed(BaseException):
    """Ends the sync where it is, as SIGKILL would (nothing in the engine catches it)."""


class DiesAfterSecondCommit(IcebergDestination):
    """Its second snapshot lands, then the process "dies" before the engine hears of it."""

    commits = 0

    def commit_files(self, *args: Any, **kwargs: Any) -> Any:
        result = super().commit_files(*args, **kwargs)
        self.commits += 1  # this instance's count (the test runs on every catalog)
        if self.commits == 2:
            raise Killed
        return result


def test_a_snapshot_that_landed_before_a_kill_is_found_not_written_twice(
        spark: Any, tmp_path: Path, config: dict[str, Any]) -> None:
    streams = [{**INCREMENTAL[0]}]
    path = connection_file(
        tmp_path, name="ice", source=SOURCE, streams=streams,
        checkpoint={"partitions_per_checkpoint": 1, "concurrent_checkpoints": 1},
        destination={"type": "iceberg", "config": config})
    with pytest.raises(Killed):
        sync(path, DiesAfterSecondCommit(config))
    assert len(tagged_snapshots(path)) == 2  # the second snapshot landed
    again = sync(path, IcebergDestination(config))
    assert again.resumed and again.attempt == 2, again.to_dict()
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
    table = table_of(path)
    referenced = {Path(t.file.file_path.removeprefix("file://")).name
                  for t in table.scan().plan_files()}
    on_disk = {p.name for p in (Path(table.location().removeprefix("file://")) / "data")
               .glob("*.parquet")}
    assert on_disk == referenced


def test_a_store_restored_from_an_older_copy_is_caught_by_the_table_s_lane_versions(
        spark: Any, tmp_path: Path, config: dict[str, Any]) -> None:
    """The lanes' versions live in the table's properties, which every catalog keeps."""
    sync(write_connection(tmp_path, INCREMENTAL, destination=config))
    with sqlite3.connect(tmp_path / "meta.db") as store, \
            sqlite3.connect(tmp_path / "older.db") as copy:
        store.backup(copy)  # a copy of the store taken now...
    path = write_connection(tmp_path, INCREMENTAL, destination=config, generation=1)
    sync(path)
    restored = connection_file(  # ...is all the next sync has: it forgot the second run
        tmp_path, name="ice", source={**SOURCE, "generation": 2}, streams=INCREMENTAL,
        store_file="older.db", checkpoint={"partitions_per_checkpoint": 2,
                                           "concurrent_checkpoints": 2},
        destination={"type": "iceberg", "config": config})
    behind = sync(restored, expect="failed")
    assert "the metadata store is behind the table" in (behind.streams[0].error or ""), \
        behind.to_dict()
    # A lane the table held no version of yet may have committed; none committed twice.
    tags = [s["headwater.tag"] for s in tagged_snapshots(path)]
    assert len(tags) == len(set(tags))
    assert unreferenced_files(table_of(path)) == set()  # the refused checkpoints' files are gone


def test_a_postgresql_catalog_keeps_nothing_in_the_warehouse_folder(
        spark: Any, tmp_path: Path, postgres_server: Any) -> None:
    with postgres_server.database() as database:
        uri = postgres_server.database_url(database).replace("postgresql://",
                                                             "postgresql+psycopg2://")
        config = iceberg_config(tmp_path, type="sql", uri=uri)
        IcebergDestination(config).check()
        path = write_connection(tmp_path, APPEND, destination=config)
        assert sync(path).status == "succeeded"
        assert not (tmp_path / "warehouse" / "catalog.db").exists()


def test_a_hadoop_catalog_s_table_is_its_folder_in_iceberg_s_hadoop_layout(
        spark: Any, tmp_path: Path) -> None:
    """Two syncs; the folder alone holds the table, readable without our catalog."""
    from pyiceberg.table import StaticTable

    path = write_connection(tmp_path, APPEND, destination=iceberg_config(tmp_path, type="hadoop"))
    first, second = sync(path), sync(path)
    assert first.status == second.status == "succeeded", second.to_dict()
    warehouse = tmp_path / "warehouse"
    assert sorted(p.name for p in warehouse.iterdir()) == ["headwater"]  # no catalog.db
    metadata = warehouse / "headwater" / "users" / "metadata"
    versions = sorted(int(p.name[1:].split(".")[0]) for p in metadata.glob("v*.metadata.json"))
    assert versions == list(range(1, len(versions) + 1))
    assert (metadata / "version-hint.text").read_text() == str(versions[-1])
    table = table_of(path)
    assert table.metadata_location == f"file://{metadata}/v{versions[-1]}.metadata.json"
    # 3 checkpoints per run, one snapshot each, every one in the current version.
    assert len(table.snapshots()) == 6
    _assert_one_snapshot_per_checkpoint(path, [first, second])
    # PyIceberg's own reader of the layout (through version-hint.text) sees the same rows.
    static = StaticTable.from_metadata(str(metadata.parent)).scan().to_arrow()
    assert keyed(static) == keyed(read(path)) == keyed(expected()) + keyed(expected())


def test_a_rest_catalog_s_tables_live_in_the_server_s_warehouse(
        spark: Any, tmp_path: Path, iceberg_rest_catalog: RestCatalogServer) -> None:
    config = {**iceberg_config(tmp_path, type="rest", uri=iceberg_rest_catalog.uri),
              "namespace": "where_tables_live"}
    path = write_connection(tmp_path, APPEND, destination=config)
    assert sync(path).status == "succeeded"
    table = table_of(path)
    assert table.location() == f"{iceberg_rest_catalog.warehouse.as_uri()}/where_tables_live/users"
    assert {t.file.file_path.rsplit("/data/", 1)[0] for t in table.scan().plan_files()} == {
        table.location()}
    assert not (tmp_path / "warehouse").exists()  # the config's folder is not used


def test_the_rest_catalog_server_listens_on_loopback_only(
        iceberg_rest_catalog: RestCatalogServer) -> None:
    port = int(iceberg_rest_catalog.uri.rsplit(":", 1)[1])
    addresses = listening_addresses(port)
    assert addresses and addresses <= LOOPBACK, addresses


def test_a_rest_catalog_whose_warehouse_is_not_local_is_refused_before_a_table_exists(
        spark: Any, tmp_path: Path) -> None:
    with rest_catalog_server(tmp_path / "server", "s3://nowhere/warehouse") as server:
        config = {**iceberg_config(tmp_path, type="rest", uri=server.uri), "namespace": "remote"}
        refused = sync(write_connection(tmp_path, APPEND, destination=config), expect="failed")
        assert refused.status == "failed"
        message = refused.streams[0].error or ""
        assert "s3://nowhere/warehouse/remote/users, where the tasks do not write" in message, (
            message)
        assert "the table was not created" in message
        assert fresh_catalog(write_connection(tmp_path, APPEND, destination=config)).list_tables(
            "remote") == []


def test_check_proves_the_catalog_writable_or_says_why_not(tmp_path: Path) -> None:
    destination = IcebergDestination(iceberg_config(tmp_path))
    destination.check()
    assert [t for t in destination.catalog().list_tables("headwater")] == []
    broken = IcebergDestination(iceberg_config(tmp_path, type="sql",
                                        uri="postgresql+psycopg2://nobody@127.0.0.1:1/none"))
    with pytest.raises(DestinationError, match=r"catalog at postgresql.* is not usable"):
        broken.check()


def _check(tmp_path: Path, catalog: dict[str, Any]) -> Any:
    """``headwater check --json`` of a connection writing to ``catalog``."""
    path = connection_file(tmp_path, name="ice", source=SOURCE, streams=APPEND,
                           destination={"type": "iceberg",
                                        "config": iceberg_config(tmp_path, **catalog)})
    return CliRunner().invoke(app, ["check", str(path), "--json"])


def test_headwater_check_against_a_rest_catalog(
        tmp_path: Path, iceberg_rest_catalog: RestCatalogServer) -> None:
    result = _check(tmp_path, {"type": "rest", "uri": iceberg_rest_catalog.uri})
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["destination"] == {"type": "iceberg",
                                                        "status": "succeeded"}
    from pyiceberg.catalog import load_catalog

    reader = load_catalog("reader", type="rest", uri=iceberg_rest_catalog.uri)
    assert reader.list_tables("headwater") == []  # its scratch table was dropped


def test_headwater_check_names_a_rest_catalog_that_is_down_never_its_token(
        tmp_path: Path) -> None:
    import socket

    with socket.socket() as probe:  # a port nothing listens on
        probe.bind(("127.0.0.1", 0))
        uri = f"http://127.0.0.1:{probe.getsockname()[1]}"
    token = "hw-test-rest-token-do-not-print"
    result = _check(tmp_path, {"type": "rest", "uri": uri, "token": token})
    assert result.exit_code == ExitCode.FAILED, result.output
    message = json.loads(result.stdout)["destination"]["error"]["message"]
    assert f"the Iceberg rest catalog at {uri} is not usable" in message, message
    assert token not in result.output
