"""``headwater replay`` and ``backfill`` on Iceberg tables, differentially against Delta.

The same runs land in a Delta table and an Iceberg table; rows are removed by
hand (Delta's ``DELETE``, PyIceberg's own ``delete``, whose rewritten files then
sit beside Headwater's), the run is replayed, and both tables must hold the
same rows as each other and as before.  Real Spark, a real SQLite catalog.
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

from headwater.config import load_connection
from headwater.connectors.sample import SampleSource
from headwater.destinations.iceberg import IcebergDestination
from headwater.engine import SyncEngine, SyncResult
from headwater.engine._rerun import backfill, replay
from headwater.metadata_store import MetadataStore
from tests.integration._connections import connection_file

pytestmark = pytest.mark.spark

SOURCE = {"seed": 11, "users": 600, "orders": 0, "rows_per_partition": 100,
          "updates_per_generation": 30, "new_per_generation": 20}
APPEND = [{"name": "users", "sync_mode": "incremental", "destination_sync_mode": "append"}]
DEDUP = [{"name": "users", "sync_mode": "incremental", "destination_sync_mode": "append_dedup"}]
KINDS = ("iceberg", "delta")


def _connection(folder: Path, kind: str, streams: list[dict[str, Any]], **source: Any) -> Path:
    destination = ({"type": "iceberg", "config": {"warehouse": str(folder / "warehouse")}}
                   if kind == "iceberg" else None)
    return connection_file(folder, name="rr", source={**SOURCE, **source}, streams=streams,
                           checkpoint={"partitions_per_checkpoint": 2,
                                       "concurrent_checkpoints": 2},
                           destination=destination)


def engine(path: Path) -> SyncEngine:
    connection = load_connection(path)
    return SyncEngine(connection, MetadataStore(connection.metadata_store or ""))


def sync(path: Path) -> SyncResult:
    result = engine(path).run()
    assert result.status == "succeeded", result.to_dict()
    return result


def iceberg(folder: Path) -> IcebergDestination:
    return IcebergDestination({"warehouse": str(folder / "warehouse")})


def table(spark: Any, folder: Path, kind: str) -> pa.Table:
    if kind == "iceberg":
        return iceberg(folder).catalog().load_table("headwater.users").scan().to_arrow()
    return spark.read.format("delta").load(str(folder / "lake" / "users")).toArrow()


def rows_of(rows: pa.Table, run_id: str | None = None) -> Counter[tuple[Any, ...]]:
    """Each row's identity and content (not its checkpoint or extraction time), counted."""
    columns = ["_hw_raw_id", "_hw_partition_id", "id", "updated_at", "age", "email"]
    return Counter(tuple(r[c] for c in columns) for r in rows.to_pylist()
                   if run_id is None or r["_hw_run_id"] == run_id)


def delete_by_hand(spark: Any, folder: Path, kind: str, run_id: str, ids: list[int]) -> None:
    """Delete rows of ``run_id`` (those of ``ids``) with each format's own tools."""
    if kind == "delta":
        from delta.tables import DeltaTable

        listed = ", ".join(map(str, ids))
        DeltaTable.forPath(spark, str(folder / "lake" / "users")).delete(
            f"_hw_run_id = '{run_id}' AND id IN ({listed})")
        return
    from pyiceberg.expressions import And, EqualTo, In

    live = iceberg(folder).catalog().load_table("headwater.users")
    live.delete(And(EqualTo("_hw_run_id", run_id), In("id", ids)))


def replay_snapshot(folder: Path, run_id: str) -> list[dict[str, str]]:
    """The snapshots the replay run ``run_id`` made."""
    live = iceberg(folder).catalog().load_table("headwater.users")
    found = []
    for snapshot in live.snapshots():
        assert snapshot.summary is not None
        tag = snapshot.summary.additional_properties.get("headwater.tag")
        if tag and json.loads(tag)["headwater"]["run_id"] == run_id:
            found.append({"operation": snapshot.summary.operation.value,
                          **snapshot.summary.additional_properties})
    return found


def test_replay_and_backfill_of_an_append_table_as_delta(spark: Any, tmp_path: Path) -> None:
    before, after, backfilled = {}, {}, {}
    for kind in KINDS:
        folder = tmp_path / kind
        sync(_connection(folder, kind, APPEND))
        path = _connection(folder, kind, APPEND, generation=1)
        second = sync(path)
        before[kind] = rows_of(table(spark, folder, kind))
        assert sum(rows_of(table(spark, folder, kind), second.run_id).values()) == 30 + 20
        gone = sorted(r[2] for r in rows_of(table(spark, folder, kind), second.run_id))[::2]
        delete_by_hand(spark, folder, kind, second.run_id, gone)
        assert rows_of(table(spark, folder, kind)) != before[kind]

        replayed = replay(engine(path), second.run_id)
        assert replayed.status == "succeeded" and replayed.replay_of == second.run_id
        after[kind] = rows_of(table(spark, folder, kind))
        again = replay(engine(path), second.run_id)  # idempotent
        assert again.status == "succeeded"
        assert rows_of(table(spark, folder, kind)) == after[kind]
        if kind == "iceberg":
            made = replay_snapshot(folder, replayed.run_id)
            assert [s["operation"] for s in made] == ["overwrite"]  # one snapshot, its marker
            counts = iceberg(folder).run_row_counts(spark, "users")
            assert counts == Counter(table(spark, folder, kind).column("_hw_run_id").to_pylist())

        result = backfill(engine(path), "users", "2024-01-01T00:02:30Z", "2024-01-01T00:07:00Z")
        assert result.status == "succeeded" and result.kind == "backfill"
        added = [r["id"] for r in table(spark, folder, kind).to_pylist()
                 if r["_hw_run_id"] == result.run_id]
        # Today's world (generation 1): the window holds initial ids 150..419 less those
        # updated since (their cursor moved on); Delta must add the very same.
        assert 200 < len(added) <= 270 and set(added) <= set(range(150, 420))
        backfilled[kind] = rows_of(table(spark, folder, kind))
    assert after["iceberg"] == after["delta"] == before["delta"] == before["iceberg"]
    assert backfilled["iceberg"] == backfilled["delta"]


def test_replay_and_backfill_of_a_dedup_table_as_delta(spark: Any, tmp_path: Path) -> None:
    truth = SampleSource({**SOURCE, "generation": 1}).expected_rows("users")
    world = Counter(zip(truth.column("id").to_pylist(), truth.column("updated_at").to_pylist(),
                        strict=True))
    replayed, backfilled = {}, {}
    for kind in KINDS:
        folder = tmp_path / kind
        sync(_connection(folder, kind, DEDUP))
        path = _connection(folder, kind, DEDUP, generation=1)
        second = sync(path)
        ids = sorted(r[2] for r in rows_of(table(spark, folder, kind), second.run_id))
        delete_by_hand(spark, folder, kind, second.run_id, ids)
        assert table(spark, folder, kind).num_rows < 600 + 20

        assert replay(engine(path), second.run_id).status == "succeeded"
        rows = table(spark, folder, kind)
        assert Counter(zip(rows.column("id").to_pylist(), rows.column("updated_at").to_pylist(),
                           strict=True)) == world
        replayed[kind] = rows_of(rows)

        result = backfill(engine(path), "users", "2024-01-01T00:02:30Z", "2024-01-01T00:07:00Z")
        assert result.status == "succeeded"
        rows = table(spark, folder, kind)
        ids_now = rows.column("id").to_pylist()
        assert len(ids_now) == len(set(ids_now))  # merged: still one row per key
        backfilled[kind] = rows_of(rows)
    assert replayed["iceberg"] == replayed["delta"]
    assert backfilled["iceberg"] == backfilled["delta"]


def test_delete_runs_rewrites_only_files_holding_them(spark: Any, tmp_path: Path) -> None:
    folder = tmp_path / "iceberg"
    first = sync(_connection(folder, "iceberg", APPEND))
    second = sync(_connection(folder, "iceberg", APPEND, generation=1))
    destination = iceberg(folder)
    assert destination.run_row_counts(spark, "users") == {first.run_id: 600,
                                                          second.run_id: 50}
    live = destination.catalog().load_table("headwater.users")
    files_before = {t.file.file_path for t in live.scan().plan_files()}
    assert destination.delete_runs(spark, "users", [second.run_id]) == 50
    assert destination.run_row_counts(spark, "users") == {first.run_id: 600}
    live = destination.catalog().load_table("headwater.users")
    files_after = {t.file.file_path for t in live.scan().plan_files()}
    assert files_after < files_before  # the first run's files kept as they were
    assert destination.delete_runs(spark, "users", ["no-such-run"]) == 0
