"""A stream's table layout: partitions, liquid clustering and properties, from the connection file.

Applied when the table is created; an existing table keeps its layout (a
change is reported, not applied) and gets the properties it lacks.  Partitioned
and clustered tables are written by Spark's writer (the task path writes no
partition values and does not cluster), and the run history says why.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import pytest

from headwater.config import load_connection
from headwater.engine import SyncEngine, SyncResult
from headwater.metadata_store import MetadataStore
from tests.integration._connections import connection_file

pytestmark = pytest.mark.spark

SOURCE = {"seed": 9, "users": 400, "orders": 150, "rows_per_partition": 100}
CHECKPOINT = {"partitions_per_checkpoint": 2}


#: The column each stream's table is partitioned or clustered by.
BY = {"users": "country", "orders": "status"}


def _streams(setting: str | None = None, **more: Any) -> list[dict[str, Any]]:
    """users (overwrite, staged over several checkpoints) and orders (incremental append),
    each laid out by its column of :data:`BY` with ``setting`` (``partition_by``...)."""
    def laid_out(name: str) -> dict[str, Any]:
        return {setting: [BY[name]], **more} if setting else {}

    return [{"name": "users", **laid_out("users")},
            {"name": "orders", "sync_mode": "incremental", "destination_sync_mode": "append",
             **laid_out("orders")}]


def _sync(path: Path) -> SyncResult:
    config = load_connection(path)
    result = SyncEngine(config, MetadataStore(config.metadata_store or "")).run()
    assert result.status == "succeeded", result.to_dict()
    return result


def _writers(path: Path) -> dict[str, set[tuple[str, str]]]:
    """Each stream's ``(writer, writer_reason)`` pairs in the connection's latest run."""
    config = load_connection(path)
    store = MetadataStore(config.metadata_store or "")
    run = store.list_runs(config.name)[0]
    found: dict[str, set[tuple[str, str]]] = {}
    for checkpoint in store.list_checkpoints(run.run_id):
        found.setdefault(checkpoint.stream, set()).add(
            (str(checkpoint.stats.get("writer")), str(checkpoint.stats.get("writer_reason"))))
    return found


def _detail(spark: Any, table: Path) -> Any:
    return spark.sql(f"DESCRIBE DETAIL delta.`{table}`").first()


def _properties(spark: Any, table: Path) -> dict[str, str]:
    return {r["key"]: r["value"] for r in spark.sql(f"SHOW TBLPROPERTIES delta.`{table}`")
            .collect()}


def _ids(spark: Any, table: Path) -> list[int]:
    return sorted(r["id"] for r in spark.read.format("delta").load(str(table)).select("id")
                  .collect())


def test_partitioned_and_clustered_tables_hold_what_a_plain_one_does(
        spark: Any, tmp_path: Path) -> None:
    properties = {"team": "growth", "delta.logRetentionDuration": "interval 60 days"}
    synced = {}
    for kind, setting in [("plain", None), ("partitioned", "partition_by"),
                          ("clustered", "cluster_by")]:
        folder = tmp_path / kind
        folder.mkdir()
        streams = (_streams(setting, table_properties=properties) if setting
                   else _streams())
        path = connection_file(folder, name=f"layout_{kind}", source=SOURCE,
                               streams=streams, checkpoint=CHECKPOINT)
        synced[kind] = (folder, path, _sync(path))

    plain = synced["plain"][0] / "lake"
    for kind in ("partitioned", "clustered"):
        folder, path, result = synced[kind]
        for stream in ("users", "orders"):
            table = folder / "lake" / stream
            # The same rows as the plain table's, whichever way the table is laid out.
            assert _ids(spark, table) == _ids(spark, plain / stream)
            detail = _detail(spark, table)
            wanted = [BY[stream]]
            assert list(detail["partitionColumns"]) == (wanted if kind == "partitioned" else [])
            assert list(detail["clusteringColumns"]) == (wanted if kind == "clustered" else [])
            shown = _properties(spark, table)
            assert {k: shown.get(k) for k in properties} == properties
        written = {s.name: s.records_written for s in result.streams}
        assert written == {s.name: s.records_written for s in synced["plain"][2].streams}
        # Spark's writer, and the history says why.
        for stream, pairs in _writers(path).items():
            assert {writer for writer, _ in pairs} == {"spark"}, pairs
            why = (f"partitioned by {BY[stream]}" if kind == "partitioned"
                   else "liquid clustering")
            assert all(why in reason for _, reason in pairs), pairs
    # The plain table's rows were the tasks' own files.
    plain_writers = {w for pairs in _writers(synced["plain"][1]).values() for w, _ in pairs}
    assert plain_writers == {"tasks+delta-rs"}

    # An overwrite in one checkpoint (not staged) keeps the clustering too.
    folder = synced["clustered"][0]
    path = connection_file(folder, name="layout_clustered", source={**SOURCE, "generation": 1},
                           streams=_streams("cluster_by", table_properties=properties),
                           checkpoint={"partitions_per_checkpoint": 8})
    users = {s.name: s for s in _sync(path).streams}["users"]
    table = folder / "lake" / "users"
    assert list(_detail(spark, table)["clusteringColumns"]) == ["country"]
    assert spark.read.format("delta").load(str(table)).count() == users.records_written


def test_an_existing_table_keeps_its_layout_says_so_and_gets_new_properties(
        spark: Any, tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    streams = [{"name": "users"}]
    path = connection_file(tmp_path, name="relayout", source=SOURCE, streams=streams)
    first = _sync(path)
    table = tmp_path / "lake" / "users"

    streams = [{"name": "users", "partition_by": ["country"],
                "table_properties": {"team": "growth", "delta.checkpointInterval": 20}}]
    path = connection_file(tmp_path, name="relayout", source=SOURCE, streams=streams)
    with caplog.at_level(logging.WARNING, logger="headwater"):
        again = _sync(path)
    warned = [r.getMessage() for r in caplog.records if "layout is not changed" in r.message]
    assert len(warned) == 1, [r.getMessage() for r in caplog.records]
    assert "stream users" in warned[0] and str(table) in warned[0]
    assert "neither partitioned nor clustered" in warned[0]
    assert "partition_by [country]" in warned[0]
    assert list(_detail(spark, table)["partitionColumns"]) == []  # not silently re-laid out
    shown = _properties(spark, table)
    assert shown["team"] == "growth" and shown["delta.checkpointInterval"] == "20"
    assert again.streams[0].records_written == first.streams[0].records_written
    assert spark.read.format("delta").load(str(table)).count() == SOURCE["users"]
    # New properties do not take the table off the task path.
    assert {w for pairs in _writers(path).values() for w, _ in pairs} == {"tasks+delta-rs"}

    # Properties the table holds already are not set again: one ALTER in the history.
    _sync(path)
    operations = [r["operation"] for r in
                  spark.sql(f"DESCRIBE HISTORY delta.`{table}`").collect()]
    assert operations.count("SET TBLPROPERTIES") == 1, operations
