"""Our path-based Iceberg catalog (``_hadoop.py``): Apache Iceberg's Hadoop layout, with PyIceberg.

No Spark here: real folders, real PyIceberg commits, several catalog clients on
one warehouse as several processes would have.  Spark reading and writing the
same folders is ``docs/destinations/iceberg-route-study/hadoop_interop.py``.
"""

from __future__ import annotations

import gzip
import json
import os
import threading
from pathlib import Path

import pyarrow as pa
import pytest
from pyiceberg.catalog import Catalog, load_catalog
from pyiceberg.exceptions import (
    CommitFailedException,
    NamespaceAlreadyExistsError,
    NamespaceNotEmptyError,
    NoSuchNamespaceError,
    NoSuchTableError,
    TableAlreadyExistsError,
)
from pyiceberg.table import StaticTable, Table

from headwater.destinations.iceberg._hadoop import HadoopCatalog, current_version

SCHEMA = pa.schema([pa.field("id", pa.int64()), pa.field("name", pa.string())])
#: PyIceberg retries a snapshot commit that lost on the refreshed table; 0 shows the loss.
NO_RETRY = {"commit.retry.num-retries": "0"}


def client(warehouse: Path, name: str = "lake") -> Catalog:
    """A catalog client as a user makes one: through PyIceberg's ``load_catalog``."""
    return load_catalog(name, **{
        "py-catalog-impl": "headwater.destinations.iceberg._hadoop.HadoopCatalog",
        "warehouse": f"file://{warehouse}"})


def rows(*ids: int) -> pa.Table:
    return pa.table({"id": list(ids), "name": [f"n{i}" for i in ids]}, schema=SCHEMA)


def ids(table: Table) -> list[int]:
    return sorted(table.refresh().scan().to_arrow()["id"].to_pylist())


def metadata_files(folder: Path) -> list[str]:
    return sorted(name for name in os.listdir(folder / "metadata")
                  if name.endswith(".metadata.json") or name == "version-hint.text")


@pytest.fixture
def catalog(tmp_path: Path) -> Catalog:
    made = client(tmp_path)
    made.create_namespace("raw")
    return made


def test_a_table_is_a_folder_with_v1_and_a_hint(catalog: Catalog, tmp_path: Path) -> None:
    table = catalog.create_table("raw.users", schema=SCHEMA)
    folder = tmp_path / "raw" / "users"
    assert sorted(os.listdir(folder)) == ["metadata"]
    assert sorted(os.listdir(folder / "metadata")) == ["v1.metadata.json", "version-hint.text"]
    assert (folder / "metadata" / "version-hint.text").read_text() == "1"
    assert table.location() == f"file://{folder}"
    assert table.metadata_location == f"file://{folder}/metadata/v1.metadata.json"
    written = json.loads((folder / "metadata" / "v1.metadata.json").read_text())
    assert written["location"] == f"file://{folder}" and written["format-version"] == 2


def test_each_commit_writes_the_next_version_and_another_client_reads_it(
        catalog: Catalog, tmp_path: Path) -> None:
    table = catalog.create_table("raw.users", schema=SCHEMA)
    table.append(rows(1, 2))
    table.append(rows(3))
    folder = tmp_path / "raw" / "users"
    assert metadata_files(folder) == ["v1.metadata.json", "v2.metadata.json",
                                      "v3.metadata.json", "version-hint.text"]
    assert (folder / "metadata" / "version-hint.text").read_text() == "3"
    other = client(tmp_path, "other").load_table("raw.users")
    assert other.metadata_location.endswith("/metadata/v3.metadata.json")
    assert ids(other) == [1, 2, 3]
    assert len(other.snapshots()) == 2
    # The previous versions are in the metadata log, as Java's HadoopTableOperations keeps them.
    assert [entry.metadata_file.rsplit("/", 1)[-1] for entry in other.metadata.metadata_log] == [
        "v1.metadata.json", "v2.metadata.json"]
    # PyIceberg's own reader of the layout (it trusts the hint) finds the same table.
    assert sorted(StaticTable.from_metadata(str(folder)).scan().to_arrow()["id"].to_pylist()) \
        == [1, 2, 3]


def test_a_commit_based_on_an_old_version_loses_and_nothing_is_lost(
        catalog: Catalog, tmp_path: Path) -> None:
    catalog.create_table("raw.users", schema=SCHEMA, properties=NO_RETRY)
    first = catalog.load_table("raw.users")
    second = client(tmp_path, "second").load_table("raw.users")
    first.append(rows(1))
    with pytest.raises(CommitFailedException, match="updated by another process"):
        second.append(rows(2))
    folder = tmp_path / "raw" / "users"
    assert metadata_files(folder)[-2:] == ["v2.metadata.json", "version-hint.text"]
    assert ids(first) == [1]
    again = client(tmp_path, "second").load_table("raw.users")
    again.append(rows(2))
    assert ids(first) == [1, 2]


def test_by_default_pyiceberg_retries_the_loser_on_the_reloaded_table(
        catalog: Catalog, tmp_path: Path) -> None:
    catalog.create_table("raw.users", schema=SCHEMA)
    first = catalog.load_table("raw.users")
    second = client(tmp_path, "second").load_table("raw.users")
    first.append(rows(1))
    second.append(rows(2))  # loses once, then lands as v3 on top of v2
    assert ids(first) == [1, 2]
    assert current_version(str(tmp_path / "raw" / "users" / "metadata")) == 3


def test_two_commits_racing_for_one_version_one_wins_the_link(
        catalog: Catalog, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The one window a version check cannot close: only the link's create-if-absent does.

    The loser has read v1 as current and is about to link its v2 when the winner's v2 lands.
    """
    catalog.create_table("raw.users", schema=SCHEMA, properties=NO_RETRY)
    loser = client(tmp_path, "loser").load_table("raw.users")
    winner = catalog.load_table("raw.users")
    link = os.link

    def winner_first(source: str, target: str) -> None:
        monkeypatch.setattr(os, "link", link)
        winner.append(rows(1))
        link(source, target)

    monkeypatch.setattr(os, "link", winner_first)
    with pytest.raises(CommitFailedException, match="version 2 was committed first"):
        loser.append(rows(2))
    folder = tmp_path / "raw" / "users"
    assert metadata_files(folder) == ["v1.metadata.json", "v2.metadata.json",
                                      "version-hint.text"]
    assert not [name for name in os.listdir(folder / "metadata") if name.startswith(".")]
    assert ids(winner) == [1]
    assert (folder / "metadata" / "version-hint.text").read_text() == "2"


def test_many_clients_committing_at_once_lose_nothing(catalog: Catalog, tmp_path: Path) -> None:
    catalog.create_table("raw.users", schema=SCHEMA, properties=NO_RETRY)
    landed: list[int] = []
    lock = threading.Lock()

    def commit(worker: int) -> None:
        table = client(tmp_path, f"w{worker}").load_table("raw.users")
        for n in range(5):
            row = worker * 100 + n
            while True:  # as the destination does: a lost commit is retried on a reload
                try:
                    table.append(rows(row))
                    break
                except CommitFailedException:
                    table = table.refresh()
            with lock:
                landed.append(row)

    threads = [threading.Thread(target=commit, args=(worker,)) for worker in range(6)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    table = catalog.load_table("raw.users")
    assert ids(table) == sorted(landed) and len(landed) == 30
    assert len(table.snapshots()) == 30
    folder = tmp_path / "raw" / "users"
    assert metadata_files(folder) == sorted(
        [f"v{n}.metadata.json" for n in range(1, 32)] + ["version-hint.text"])


@pytest.mark.parametrize("hint", [None, "1", "not a number", ""])
def test_the_current_version_is_the_highest_at_or_after_the_hint(
        catalog: Catalog, tmp_path: Path, hint: str | None) -> None:
    table = catalog.create_table("raw.users", schema=SCHEMA)
    table.append(rows(1))
    table.append(rows(2))
    hint_file = tmp_path / "raw" / "users" / "metadata" / "version-hint.text"
    if hint is None:
        hint_file.unlink()
    else:
        hint_file.write_text(hint)
    reloaded = client(tmp_path, "other").load_table("raw.users")
    assert reloaded.metadata_location.endswith("/v3.metadata.json")
    reloaded.append(rows(3))
    assert hint_file.read_text() == "4"
    assert ids(reloaded) == [1, 2, 3]


def test_a_hadoop_checksum_of_an_older_hint_is_removed(catalog: Catalog, tmp_path: Path) -> None:
    """Spark's HadoopCatalog on a local disk checks .version-hint.text.crc when it reads."""
    table = catalog.create_table("raw.users", schema=SCHEMA)
    checksum = tmp_path / "raw" / "users" / "metadata" / ".version-hint.text.crc"
    checksum.write_bytes(b"crc of the hint Java wrote")
    table.append(rows(1))
    assert not checksum.exists()


def test_a_hint_naming_a_deleted_version_is_passed_by_a_later_one(
        catalog: Catalog, tmp_path: Path) -> None:
    table = catalog.create_table("raw.users", schema=SCHEMA)
    table.append(rows(1))
    table.append(rows(2))
    metadata = tmp_path / "raw" / "users" / "metadata"
    (metadata / "version-hint.text").write_text("2")
    (metadata / "v2.metadata.json").unlink()  # as write.metadata.delete-after-commit may
    assert current_version(str(metadata)) == 3
    (metadata / "version-hint.text").write_text("7")  # the current metadata is gone
    with pytest.raises(FileNotFoundError, match="names version 7"):
        catalog.load_table("raw.users")


def test_a_gzip_codec_writes_gz_versions(catalog: Catalog, tmp_path: Path) -> None:
    table = catalog.create_table("raw.users", schema=SCHEMA,
                                 properties={"write.metadata.compression-codec": "gzip"})
    table.append(rows(1))
    metadata = tmp_path / "raw" / "users" / "metadata"
    assert metadata_files(metadata.parent) == ["v1.gz.metadata.json", "v2.gz.metadata.json",
                                               "version-hint.text"]
    json.loads(gzip.decompress((metadata / "v2.gz.metadata.json").read_bytes()))
    assert ids(client(tmp_path, "other").load_table("raw.users")) == [1]


def test_a_staged_create_writes_nothing_until_it_commits(
        catalog: Catalog, tmp_path: Path) -> None:
    tx = catalog.create_table_transaction("raw.users", schema=SCHEMA)
    tx.set_properties({"owner": "growth"})
    assert not (tmp_path / "raw" / "users").exists()
    assert not catalog.table_exists("raw.users")
    tx.commit_transaction()
    table = catalog.load_table("raw.users")
    assert table.properties["owner"] == "growth"
    assert metadata_files(tmp_path / "raw" / "users") == ["v1.metadata.json",
                                                          "version-hint.text"]


def test_a_create_that_finds_the_table_made_meanwhile_says_so(catalog: Catalog) -> None:
    tx = catalog.create_table_transaction("raw.users", schema=SCHEMA)
    catalog.create_table("raw.users", schema=SCHEMA)
    with pytest.raises(TableAlreadyExistsError):
        tx.commit_transaction()
    with pytest.raises(TableAlreadyExistsError):
        catalog.create_table("raw.users", schema=SCHEMA)


def test_tables_and_namespaces_are_folders(catalog: Catalog, tmp_path: Path) -> None:
    catalog.create_table("raw.users", schema=SCHEMA)
    catalog.create_namespace(("raw", "eu"))
    (tmp_path / "raw" / "not_a_table" / "metadata").mkdir(parents=True)
    assert catalog.list_tables("raw") == [("raw", "users")]
    assert catalog.list_namespaces() == [("raw",)]
    assert catalog.list_namespaces("raw") == [("raw", "eu"), ("raw", "not_a_table")]
    assert catalog.namespace_exists("raw") and not catalog.namespace_exists("raw.users")
    assert catalog.table_exists("raw.users") and not catalog.table_exists("raw.orders")
    assert catalog.load_namespace_properties("raw") == {"location": f"file://{tmp_path}/raw"}
    with pytest.raises(NamespaceAlreadyExistsError):
        catalog.create_namespace("raw")
    catalog.create_namespace_if_not_exists("raw")
    with pytest.raises(NamespaceNotEmptyError):
        catalog.drop_namespace("raw")
    catalog.drop_namespace(("raw", "eu"))
    assert not (tmp_path / "raw" / "eu").exists()
    with pytest.raises(NoSuchNamespaceError):
        catalog.list_tables("nowhere")
    with pytest.raises(NoSuchNamespaceError):
        catalog.create_table("nowhere.users", schema=SCHEMA)
    with pytest.raises(NoSuchTableError):
        catalog.load_table("raw.orders")


def test_dropping_a_table_deletes_its_folder(catalog: Catalog, tmp_path: Path) -> None:
    catalog.create_table("raw.users", schema=SCHEMA).append(rows(1))
    catalog.drop_table("raw.users")
    assert not (tmp_path / "raw" / "users").exists()
    with pytest.raises(NoSuchTableError):
        catalog.drop_table("raw.users")
    catalog.create_table("raw.users", schema=SCHEMA).append(rows(1))
    catalog.purge_table("raw.users")
    assert os.listdir(tmp_path / "raw") == []


def test_what_a_hadoop_catalog_cannot_do_is_refused(catalog: Catalog, tmp_path: Path) -> None:
    catalog.create_table("raw.users", schema=SCHEMA)
    with pytest.raises(NotImplementedError, match="rename"):
        catalog.rename_table("raw.users", "raw.people")
    with pytest.raises(NotImplementedError, match="register"):
        catalog.register_table("raw.people", f"file://{tmp_path}/x/v1.metadata.json")
    with pytest.raises(NotImplementedError, match="no properties"):
        catalog.create_namespace("eu", {"owner": "me"})
    with pytest.raises(NotImplementedError, match="no properties"):
        catalog.update_namespace_properties("raw", updates={"owner": "me"})
    with pytest.raises(ValueError, match="cannot be placed elsewhere"):
        catalog.create_table("raw.orders", schema=SCHEMA, location=f"file://{tmp_path}/else")
    table = catalog.load_table("raw.users")
    with pytest.raises(ValueError, match="cannot relocate metadata"), table.transaction() as tx:
        tx.set_properties({"write.metadata.path": f"file://{tmp_path}/meta"})
    with pytest.raises(ValueError, match="cannot name a folder"):
        catalog.create_table(("raw", ".."), schema=SCHEMA)
    assert catalog.list_views("raw") == []


def test_a_table_another_catalog_keeps_in_the_folder_is_not_created_over(
        catalog: Catalog, tmp_path: Path) -> None:
    """A SQL catalog (the embedded default) puts its tables in the same folders."""
    sql = load_catalog("headwater", type="sql", uri=f"sqlite:///{tmp_path}/catalog.db",
                       warehouse=f"file://{tmp_path}")
    sql.create_namespace("raw")
    sql.create_table("raw.users", schema=SCHEMA).append(rows(1))
    assert not catalog.table_exists("raw.users")
    with pytest.raises(ValueError, match=r"no v<N>\.metadata\.json: a table of another catalog"):
        catalog.create_table("raw.users", schema=SCHEMA)
    assert ids(sql.load_table("raw.users")) == [1]


def test_an_object_store_warehouse_is_refused() -> None:
    with pytest.raises(ValueError, match="must be a local folder"):
        HadoopCatalog("lake", warehouse="s3://bucket/warehouse")


def test_the_destination_s_commits_land_as_they_do_on_other_catalogs(
        catalog: Catalog, tmp_path: Path) -> None:
    """Task-written files added in one snapshot, staged on a branch, then published."""
    import pyarrow.parquet as pq

    from headwater.destinations.iceberg import _catalog, _commit

    table = _catalog.with_name_mapping(catalog.create_table("raw.users", schema=SCHEMA))
    folder = tmp_path / "raw" / "users" / "data"
    folder.mkdir()

    def written(name: str, *values: int) -> list[str]:
        path = str(folder / f"{name}.parquet")
        pq.write_table(rows(*values), path)
        return [path]

    _commit.commit(table, _commit.data_files(table, written("a", 1, 2)), overwrite=False,
                   summary={"headwater.version": "1"}, properties={"headwater.txn.app": "1"})
    table = catalog.load_table("raw.users")
    _commit.commit(table, _commit.data_files(table, written("b", 3)), overwrite=False,
                   summary={"headwater.version": "2"}, properties={"headwater.txn.app": "2"},
                   branch="staging")
    table = catalog.load_table("raw.users")
    assert ids(table) == [1, 2]  # main does not see the branch
    staged = _commit.current_data_files(table, branch="staging")
    _commit.commit(table, staged, overwrite=True, summary={"headwater.version": "3"},
                   properties={"headwater.txn.app": "3"}, drop_branch="staging")
    reread = client(tmp_path, "other").load_table("raw.users")
    assert ids(reread) == [3]
    assert reread.properties["headwater.txn.app"] == "3"
    assert set(reread.metadata.refs) == {"main"}
    assert [s["headwater.version"] for _, s in _commit.snapshots_newest_first(reread)] == [
        "3", "2", "1"]
    # The create, its name mapping, three commits: one version each.
    assert current_version(str(tmp_path / "raw" / "users" / "metadata")) == 5
