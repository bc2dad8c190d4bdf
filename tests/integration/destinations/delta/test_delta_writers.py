"""Both ways into Delta give the same table: tasks' own files (delta-rs) and Spark's writer."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from deltalake import DeltaTable

from headwater.config import load_connection
from headwater.connectors.sample import SampleSource
from headwater.destinations._table_files._parquet import ParquetFiles, WrittenFile
from headwater.destinations.delta import _delta_rs
from headwater.engine import SyncEngine, SyncResult
from headwater.metadata_store import MetadataStore
from tests.integration._connections import connection_file

pytestmark = pytest.mark.spark

SOURCE = {"seed": 11, "users": 1200, "orders": 0, "rows_per_partition": 200,
          "updates_per_generation": 30, "new_per_generation": 20}
OVERWRITE = [{"name": "users", "sync_mode": "full_refresh", "destination_sync_mode": "overwrite"}]
APPEND = [{"name": "users", "sync_mode": "incremental", "destination_sync_mode": "append",
           "cursor_field": "updated_at"}]


def sync(folder: Path, streams: list[dict[str, Any]], writer: str, **source: Any) -> SyncResult:
    path = connection_file(folder, name="writers", source={**SOURCE, **source}, streams=streams,
                           writer=writer,
                           checkpoint={"partitions_per_checkpoint": 2, "concurrent_checkpoints": 2})
    connection = load_connection(path)
    result = SyncEngine(connection, MetadataStore(connection.metadata_store or "")).run()
    assert result.status == "succeeded", result.streams[0].error
    return result


def commits(table: Path) -> list[dict[str, Any]]:
    found = []
    for log in sorted((table / "_delta_log").glob("*.json")):
        for line in log.read_text().splitlines():
            action = json.loads(line)
            if "commitInfo" in action:
                found.append(action["commitInfo"])
    return found


def tagged_versions(table: Path, run_id: str) -> dict[int | str, int]:
    """The version of each of the run's commits in the log, by checkpoint index
    (``"published"``: the commit publishing a staged overwrite)."""
    found: dict[int | str, int] = {}
    for log in sorted((table / "_delta_log").glob("*.json")):
        for line in log.read_text().splitlines():
            info = json.loads(line).get("commitInfo") or {}
            tag = json.loads(info.get("userMetadata") or "{}").get("headwater") or {}
            if tag.get("run_id") == run_id:
                key = "published" if "published" in tag else int(tag["checkpoint"])
                found[key] = int(log.stem)
    return found


def added_stats(table: Path) -> list[dict[str, Any]]:
    return [json.loads(json.loads(line)["add"]["stats"])
            for log in sorted((table / "_delta_log").glob("*.json"))
            for line in log.read_text().splitlines() if '"add"' in line]


@pytest.mark.parametrize("writer", ["auto", "spark"])
def test_overwrite_then_append_land_the_same_rows_either_way(
        spark: Any, tmp_path: Path, writer: str) -> None:
    users = tmp_path / "lake" / "users"
    first = sync(tmp_path, OVERWRITE, writer)
    again = sync(tmp_path, OVERWRITE, writer, generation=1)
    rows = spark.read.format("delta").load(str(users))
    truth = SampleSource({**SOURCE, "generation": 1}).expected_rows("users")
    assert first.streams[0].records_written == 1200 and again.streams[0].records_written == 1220
    assert Counter(r["id"] for r in rows.select("id").collect()) == Counter(
        truth.column("id").to_pylist())
    # Every checkpoint of a run reports its bytes, whoever wrote it; an overwrite's
    # checkpoints are staged (no table version), and its last one records the version
    # of the one commit that published them all.
    assert again.streams[0].bytes > 0
    store = MetadataStore(load_connection(tmp_path / "writers.yaml").metadata_store or "")
    recorded = {c.index: c.stats["delta_version"] for c in store.list_checkpoints(again.run_id)}
    last = max(recorded)
    assert len(recorded) > 1 and recorded == {**dict.fromkeys(recorded), last:
                                              again.streams[0].published_version}
    assert tagged_versions(users, again.run_id) == {"published": recorded[last]}

    engines = {c.get("engineInfo", "").split(":")[0].split("/")[0] for c in commits(users)
               if c.get("operation") == "WRITE"}
    assert engines == ({"delta-rs"} if writer == "auto" else {"Apache-Spark"})
    # Files carry Delta statistics on the listed columns, so readers can skip them.
    stats = added_stats(users)
    assert all("_hw_checkpoint" in s["minValues"] and "_hw_run_id" in s["maxValues"]
               for s in stats if s["numRecords"])
    latest = spark.sql(f"SELECT max(_hw_checkpoint) FROM delta.`{users}`").first()[0]
    assert spark.read.format("delta").load(str(users)).where(
        f"_hw_checkpoint = {latest}").count() > 0


def test_a_table_spark_wrote_takes_task_written_files_and_back(spark: Any, tmp_path: Path) -> None:
    users = tmp_path / "lake" / "users"
    sync(tmp_path, APPEND, "spark")
    sync(tmp_path, APPEND, "auto", generation=1)
    # Enough commits for Spark to write a log checkpoint over delta-rs's commits.
    for generation in range(2, 6):
        sync(tmp_path, APPEND, "spark" if generation % 2 else "auto", generation=generation)
    rows = spark.read.format("delta").load(str(users))
    expected = 1200 + 5 * (30 + 20)
    assert rows.count() == expected
    assert rows.select("id", "updated_at").distinct().count() == expected
    assert {c.get("engineInfo", "").split(":")[0].split("/")[0] for c in commits(users)} >= {
        "delta-rs", "Apache-Spark"}


def test_spark_reads_and_writes_a_table_whose_log_delta_rs_checkpointed(
        spark: Any, tmp_path: Path) -> None:
    """delta-rs checkpoints the log of a table it created every ten commits, as Spark would."""
    folder = tmp_path / "users"
    schema = pa.schema([pa.field("id", pa.int64())])
    _delta_rs.create_table(str(folder), schema, {})
    for version in range(1, 11):
        batch = pa.RecordBatch.from_pydict({"id": [version]}, schema)
        written = ParquetFiles(folder=str(folder), stats_columns=["id"]).write(iter([batch]))
        _delta_rs.commit_files(str(folder), [WrittenFile(**r) for b in written
                                             for r in b.to_pylist()],
                               mode="append", app_id="a", version=version, tag="{}")
    assert (folder / "_delta_log" / "00000000000000000009.checkpoint.parquet").exists()
    assert sorted(r["id"] for r in spark.read.format("delta").load(str(folder)).collect()) == (
        list(range(1, 11)))
    spark.createDataFrame([(11,)], "id long").write.format("delta").mode("append").save(
        str(folder))
    assert spark.read.format("delta").load(str(folder)).count() == 11
    assert DeltaTable(str(folder)).version() == 11
