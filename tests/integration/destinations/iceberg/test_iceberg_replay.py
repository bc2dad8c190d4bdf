"""``headwater replay`` and ``backfill`` on Iceberg tables, differentially against Delta.

The same runs land in a Delta table and an Iceberg table; rows are removed by
hand (Delta's ``DELETE``, PyIceberg's own ``delete``, whose rewritten files then
sit beside Headwater's), the run is replayed, and both tables must hold the
same rows as each other and as before.  Real Spark, the Iceberg table read and
changed by hand through a catalog client of the test's own.

Which catalogs: a replay's commit (one ``overwrite`` snapshot replacing a run's
rows) and a backfill's go through the catalog, so the append table's replay and
backfill run on every kind (``_catalogs.py``), compared with Delta on the default
one.  A dedup table's replay commits a MERGE (the catalog side of which
``test_iceberg_dedup.py`` runs on every kind) and ``delete_runs`` the same
rewrite commit as a replay: what they keep is row logic, on the default only.
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

from headwater.connectors.sample import SampleSource
from headwater.destinations.iceberg import IcebergDestination
from headwater.engine._rerun import backfill, replay
from tests.integration._connections import connection_file, engine, sync
from tests.integration.destinations.iceberg._catalogs import iceberg_config, load_table

pytestmark = pytest.mark.spark

SOURCE = {"seed": 11, "users": 600, "orders": 0, "rows_per_partition": 100,
          "updates_per_generation": 30, "new_per_generation": 20}
APPEND = [{"name": "users", "sync_mode": "incremental", "destination_sync_mode": "append"}]
DEDUP = [{"name": "users", "sync_mode": "incremental", "destination_sync_mode": "append_dedup"}]
#: The destination each test compares: Iceberg on its ``config``, and (default catalog only) Delta.
ICEBERG, DELTA = "iceberg", "delta"


def kinds(config: dict[str, Any]) -> tuple[str, ...]:
    """Iceberg, and Delta to compare with when the catalog is the default (hadoop)."""
    return (ICEBERG, DELTA) if "catalog" not in config else (ICEBERG,)


def _connection(folder: Path, config: dict[str, Any] | None, streams: list[dict[str, Any]],
                **source: Any) -> Path:
    """The connection writing to Iceberg on ``config``, or to Delta when it is None."""
    destination = None if config is None else {"type": "iceberg", "config": config}
    return connection_file(folder, name="rr", source={**SOURCE, **source}, streams=streams,
                           checkpoint={"partitions_per_checkpoint": 2,
                                       "concurrent_checkpoints": 2},
                           destination=destination)


def table(spark: Any, folder: Path, config: dict[str, Any] | None) -> pa.Table:
    if config is not None:
        return load_table(config).scan().to_arrow()
    return spark.read.format("delta").load(str(folder / "lake" / "users")).toArrow()


def rows_of(rows: pa.Table, run_id: str | None = None) -> Counter[tuple[Any, ...]]:
    """Each row's identity and content (not its checkpoint or extraction time), counted."""
    columns = ["_hw_raw_id", "_hw_partition_id", "id", "updated_at", "age", "email"]
    return Counter(tuple(r[c] for c in columns) for r in rows.to_pylist()
                   if run_id is None or r["_hw_run_id"] == run_id)


def delete_by_hand(spark: Any, folder: Path, config: dict[str, Any] | None, run_id: str,
                   ids: list[int]) -> None:
    """Delete rows of ``run_id`` (those of ``ids``) with each format's own tools."""
    if config is None:
        from delta.tables import DeltaTable

        listed = ", ".join(map(str, ids))
        DeltaTable.forPath(spark, str(folder / "lake" / "users")).delete(
            f"_hw_run_id = '{run_id}' AND id IN ({listed})")
        return
    from pyiceberg.expressions import And, EqualTo, In

    load_table(config).delete(And(EqualTo("_hw_run_id", run_id), In("id", ids)))


def replay_snapshot(config: dict[str, Any], run_id: str) -> list[dict[str, str]]:
    """The snapshots the replay run ``run_id`` made."""
    found = []
    for snapshot in load_table(config).snapshots():
        assert snapshot.summary is not None
        tag = snapshot.summary.additional_properties.get("headwater.tag")
        if tag and json.loads(tag)["headwater"]["run_id"] == run_id:
            found.append({"operation": snapshot.summary.operation.value,
                          **snapshot.summary.additional_properties})
    return found


def test_replay_and_backfill_of_an_append_table_as_delta(
        spark: Any, tmp_path: Path, config: dict[str, Any]) -> None:
    before, after, backfilled = {}, {}, {}
    for kind in kinds(config):
        folder, on = tmp_path / kind, (config if kind == ICEBERG else None)
        sync(_connection(folder, on, APPEND))
        path = _connection(folder, on, APPEND, generation=1)
        second = sync(path)
        before[kind] = rows_of(table(spark, folder, on))
        assert sum(rows_of(table(spark, folder, on), second.run_id).values()) == 30 + 20
        gone = sorted(r[2] for r in rows_of(table(spark, folder, on), second.run_id))[::2]
        delete_by_hand(spark, folder, on, second.run_id, gone)
        assert rows_of(table(spark, folder, on)) != before[kind]

        replayed = replay(engine(path), second.run_id)
        assert replayed.status == "succeeded" and replayed.replay_of == second.run_id
        after[kind] = rows_of(table(spark, folder, on))
        again = replay(engine(path), second.run_id)  # idempotent
        assert again.status == "succeeded"
        assert rows_of(table(spark, folder, on)) == after[kind]
        if on is not None:
            made = replay_snapshot(on, replayed.run_id)
            assert [s["operation"] for s in made] == ["overwrite"]  # one snapshot, its marker
            counts = IcebergDestination(on).run_row_counts(spark, "users")
            assert counts == Counter(table(spark, folder, on).column("_hw_run_id").to_pylist())

        result = backfill(engine(path), "users", "2024-01-01T00:02:30Z", "2024-01-01T00:07:00Z")
        assert result.status == "succeeded" and result.kind == "backfill"
        added = [r["id"] for r in table(spark, folder, on).to_pylist()
                 if r["_hw_run_id"] == result.run_id]
        # Today's world (generation 1): the window holds initial ids 150..419 less those
        # updated since (their cursor moved on); Delta must add the very same.
        assert 200 < len(added) <= 270 and set(added) <= set(range(150, 420))
        backfilled[kind] = rows_of(table(spark, folder, on))
    # Delta (when compared) holds the very same rows as Iceberg, before and after.
    assert all(rows == before[ICEBERG] for rows in (*before.values(), *after.values()))
    assert all(rows == backfilled[ICEBERG] for rows in backfilled.values())


def test_replay_and_backfill_of_a_dedup_table_as_delta(spark: Any, tmp_path: Path) -> None:
    config = iceberg_config(tmp_path)
    truth = SampleSource({**SOURCE, "generation": 1}).expected_rows("users")
    world = Counter(zip(truth.column("id").to_pylist(), truth.column("updated_at").to_pylist(),
                        strict=True))
    replayed, backfilled = {}, {}
    for kind in kinds(config):
        folder, on = tmp_path / kind, (config if kind == ICEBERG else None)
        sync(_connection(folder, on, DEDUP))
        path = _connection(folder, on, DEDUP, generation=1)
        second = sync(path)
        ids = sorted(r[2] for r in rows_of(table(spark, folder, on), second.run_id))
        delete_by_hand(spark, folder, on, second.run_id, ids)
        assert table(spark, folder, on).num_rows < 600 + 20

        assert replay(engine(path), second.run_id).status == "succeeded"
        rows = table(spark, folder, on)
        assert Counter(zip(rows.column("id").to_pylist(), rows.column("updated_at").to_pylist(),
                           strict=True)) == world
        replayed[kind] = rows_of(rows)

        result = backfill(engine(path), "users", "2024-01-01T00:02:30Z", "2024-01-01T00:07:00Z")
        assert result.status == "succeeded"
        rows = table(spark, folder, on)
        ids_now = rows.column("id").to_pylist()
        assert len(ids_now) == len(set(ids_now))  # merged: still one row per key
        assert Counter(zip(ids_now, rows.column("updated_at").to_pylist(), strict=True)) == world
        backfilled[kind] = rows_of(rows)
    assert all(rows == replayed[ICEBERG] for rows in replayed.values())
    assert all(rows == backfilled[ICEBERG] for rows in backfilled.values())


def test_delete_runs_rewrites_only_files_holding_them(spark: Any, tmp_path: Path) -> None:
    config = iceberg_config(tmp_path)
    folder = tmp_path / "iceberg"
    first = sync(_connection(folder, config, APPEND))
    second = sync(_connection(folder, config, APPEND, generation=1))
    destination = IcebergDestination(config)
    assert destination.run_row_counts(spark, "users") == {first.run_id: 600,
                                                          second.run_id: 50}
    files_before = {t.file.file_path for t in load_table(config).scan().plan_files()}
    assert destination.delete_runs(spark, "users", [second.run_id]) == 50
    assert destination.run_row_counts(spark, "users") == {first.run_id: 600}
    files_after = {t.file.file_path for t in load_table(config).scan().plan_files()}
    assert files_after < files_before  # the first run's files kept as they were
    assert destination.delete_runs(spark, "users", ["no-such-run"]) == 0
