"""The Delta destination on Azure: whole syncs through the task path give Spark's writer's rows.

Each append/overwrite mode syncs twice (generation 0, then 1) into a table on
Azurite (``abfss://``, reached with the ``fs.azure.account.key.*`` setting on the
session, as a user sets it for Spark's ABFS) through the task path, and into a
local folder through Spark's Delta writer.  Spark itself cannot read the Azurite
table (ABFS speaks the Data Lake endpoint, which Azurite lacks, and hadoop-azure is
not on the session's classpath), so the table is copied, log and files, to a local
folder, and Spark reads that copy: every column of every row equals what Spark's
own writer wrote, each row once.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from pyarrow import fs as pafs

from headwater.config import load_connection
from headwater.connectors.sample import SampleSource
from headwater.destinations.delta import DeltaDestination, _delta_rs
from headwater.destinations.delta._destination import WRITER_TASKS
from headwater.metadata_store import MetadataStore
from tests.integration._s3 import free_port
from tests.integration._stores import AZURE_KEY, AzureServer
from tests.integration.destinations.delta._s3_proxy import proxy_process
from tests.integration.destinations.delta._tables import (
    azure_location,
    azure_table,
    session_settings,
)
from tests.integration.destinations.delta.test_s3_destination import (
    MODES,
    SOURCE,
    commit,
    found_on_resume,
    marker,
    sync,
    table_rows,
    upload,
    writers_of,
)
from tests.integration.destinations.delta.test_s3_destination import (
    SCHEMA as ID_SCHEMA,
)

pytestmark = pytest.mark.spark


def copy_to_local(azure_server: AzureServer, container: str, key: str, to: Path) -> Path:
    """Every object under the table's prefix, copied to ``to`` (a table Spark can read)."""
    table = azure_table(azure_server, container, key)
    fs, base = table.filesystem()
    pafs.copy_files(base, str(to), source_filesystem=fs,
                    destination_filesystem=pafs.LocalFileSystem())
    return to


def run_writers(folder: Path) -> set[tuple[str, str]]:
    """``(writer, writer_reason)`` of every checkpoint of the connection's latest run."""
    config = load_connection(next(folder.glob("*.yaml")))
    store = MetadataStore(config.metadata_store or "")
    run = store.list_runs(config.name)[0]
    return {(str(c.stats.get("writer")), str(c.stats.get("writer_reason")))
            for c in store.list_checkpoints(run.run_id)}


@pytest.mark.parametrize("mode", sorted(MODES))
def test_the_task_path_on_azure_gives_the_rows_spark_s_writer_gives(
        spark: Any, azure_server: AzureServer, azure_container: str, tmp_path: Path,
        mode: str, caplog: pytest.LogCaptureFixture) -> None:
    lakes = {"auto": azure_location(azure_container, "lake"),
             "spark": str(tmp_path / "spark-lake")}
    results = {writer: [sync(tmp_path / writer, lake, mode, writer, generation=g)
                        for g in (0, 1)] for writer, lake in lakes.items()}
    assert {w for w, _ in run_writers(tmp_path / "auto")} == {WRITER_TASKS}
    assert all("Azure with conditional writes" in reason
               for _, reason in run_writers(tmp_path / "auto"))
    copy = copy_to_local(azure_server, azure_container, "lake/users", tmp_path / "copy")
    spark_table = f"{lakes['spark']}/users"
    assert writers_of(spark, str(copy)) == {"delta-rs"}
    tasks_rows = table_rows(spark, str(copy))
    assert tasks_rows == table_rows(spark, spark_table)
    assert set(tasks_rows.values()) == {1}  # every row once
    if mode == "overwrite":
        truth = SampleSource({**SOURCE, "generation": 1}).expected_rows("users")
        ids = [r["id"] for r in spark.read.format("delta").load(str(copy)).collect()]
        assert sorted(ids) == sorted(truth.column("id").to_pylist())
    assert [r.streams[0].records_written for r in results["auto"]] == [
        r.streams[0].records_written for r in results["spark"]]
    assert not (copy / "_headwater_staging").exists()  # published, then removed
    assert AZURE_KEY not in caplog.text


def test_a_commit_that_landed_and_lost_its_answer_counts_once_and_is_found_on_resume(
        spark: Any, azure_server: AzureServer, azure_container: str,
        caplog: pytest.LogCaptureFixture) -> None:
    """The driver reaches Azurite through a proxy that answers 500 to the first commit put
    the store accepted: the commit is durable, delta-rs hears an error (and its retry of
    the put is refused: the blob exists).  The table decides: the commit counts once."""
    direct = azure_table(azure_server, azure_container, "lake/users")
    _delta_rs.create_table(direct, ID_SCHEMA, {})
    written = upload(direct, [1, 2, 3])
    upstream, account = azure_server.blob_endpoint.rsplit("/", 1)
    with (proxy_process(upstream, free_port()) as proxy,
          session_settings(spark, {f"headwater.azure.blob.endpoint.{account}":
                                   f"{proxy.endpoint}/{account}"})):
        proxy.lose_next_commit_answer()
        destination = DeltaDestination({"path": azure_location(azure_container, "lake")})
        first = commit(spark, destination, written, marker(0, 1))
        assert (first.version, first.rows, first.writer) == (1, 3, WRITER_TASKS)
        lost = [r["path"].rsplit("/", 1)[1] for r in proxy.puts_of_commits()
                if r["answered"] == 500 and r["status"] == 201]
        assert lost == [f"{1:020d}.json"]
        assert all({k.lower(): v for k, v in r["headers"].items()}.get("if-none-match") == "*"
                   for r in proxy.puts_of_commits())
        found_on_resume(spark, destination, direct)
    assert AZURE_KEY not in caplog.text
