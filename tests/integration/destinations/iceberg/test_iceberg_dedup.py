"""``append_dedup`` on Iceberg, differentially against the Delta destination.

The same source, streams and syncs land in a Delta table (Spark's MERGE) and an
Iceberg table (copy-on-write, ``_merge.py``); both must hold the same rows.  Real
Spark, the Iceberg table read back with PyIceberg through a catalog client of the
test's own.

Which catalogs: a merge's commit (an ``overwrite`` snapshot replacing files), its
retry when another writer committed first, and finding a landed merge after a
kill go through the catalog, so those run on every kind (``_catalogs.py``).
What rows a merge keeps is row logic, the same whatever the catalog: the
comparison with Delta (each sync's rows), the partitioned table and the ties run
on the default (hadoop) one.
"""

from __future__ import annotations

import datetime as dt
import json
from collections import Counter
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from headwater.config import load_connection
from headwater.connectors.sample import SampleSource
from headwater.destinations._base import CommitMarker
from headwater.destinations.delta import DeltaDestination
from headwater.destinations.iceberg import IcebergDestination, _merge, _rewrite
from headwater.engine import SyncResult
from headwater.engine._task import _partition_digest
from headwater.metadata_store import MetadataStore
from headwater.plan import CheckpointPlan, StreamPlan
from headwater.sdk import Partition
from tests.integration._connections import connection_file, sync
from tests.integration._merge_ties import SCHEMA, STREAM, tie_rows
from tests.integration.destinations.iceberg._catalogs import (
    iceberg_config,
    load_table,
    unreferenced_files,
)

pytestmark = pytest.mark.spark

SOURCE = {"seed": 7, "users": 600, "orders": 0, "rows_per_partition": 100,
          "updates_per_generation": 40, "new_per_generation": 25}
DEDUP = [{"name": "users", "sync_mode": "incremental", "destination_sync_mode": "append_dedup",
          "cursor_field": "updated_at", "primary_key": ["id"]}]
#: The metadata columns both destinations must agree on (the others say when and by which run).
SAME_META = ["_hw_raw_id", "_hw_partition_id"]


def _connection(folder: Path, config: dict[str, Any] | None, *, per_checkpoint: int = 3,
                partition_by: list[str] | None = None, **source: Any) -> Path:
    """The connection writing to Iceberg on ``config``, or to Delta when it is None.

    By default two checkpoints per sync (six partitions, three each): the second merges
    into what the first committed, and every checkpoint is a commit of its own (a MERGE on
    Delta, a rewrite on Iceberg), which is what a sync here costs, not its rows."""
    destination = None if config is None else {"type": "iceberg", "config": config}
    streams = [{**DEDUP[0], "partition_by": partition_by}] if partition_by else DEDUP
    return connection_file(folder, name="dd", source={**SOURCE, **source}, streams=streams,
                           checkpoint={"partitions_per_checkpoint": per_checkpoint,
                                       "concurrent_checkpoints": 2},
                           destination=destination)


def iceberg_rows(config: dict[str, Any]) -> pa.Table:
    return load_table(config).scan().to_arrow()


def delta_rows(spark: Any, folder: Path) -> pa.Table:
    return spark.read.format("delta").load(str(folder / "lake" / "users")).toArrow()


def content(rows: pa.Table) -> Counter[tuple[Any, ...]]:
    """Each row's data columns and the metadata both destinations must agree on."""
    names = sorted(n for n in rows.column_names
                   if not n.startswith("_hw_") or n in SAME_META)
    return Counter(tuple(json.dumps(r[n], default=str, sort_keys=True) if isinstance(
        r[n], (dict, list)) else r[n] for n in names) for r in rows.select(names).to_pylist())


def keyed(rows: pa.Table) -> Counter[tuple[int, Any]]:
    return Counter(zip(rows.column("id").to_pylist(), rows.column("updated_at").to_pylist(),
                       strict=True))


def truth(generation: int) -> pa.Table:
    return SampleSource({**SOURCE, "generation": generation}).expected_rows("users")


def snapshots(config: dict[str, Any]) -> list[dict[str, str]]:
    found = []
    for snapshot in load_table(config).snapshots():
        assert snapshot.summary is not None
        found.append({"operation": snapshot.summary.operation.value,
                      **snapshot.summary.additional_properties})
    return found


def committed(path: Path, *runs: SyncResult) -> Counter[tuple[str, int]]:
    store = MetadataStore(load_connection(path).metadata_store or "")
    return Counter((run.run_id, c.index) for run in runs for c in store.list_checkpoints(
        run.run_id) if c.status in ("committed", "released"))


def marked(config: dict[str, Any]) -> Counter[tuple[str, int]]:
    tags = [json.loads(s["headwater.tag"])["headwater"] for s in snapshots(config)]
    return Counter((t["run_id"], t["checkpoint"]) for t in tags)


def orphans(config: dict[str, Any]) -> set[str]:
    return unreferenced_files(load_table(config))


def test_dedup_syncs_hold_what_delta_holds(spark: Any, tmp_path: Path) -> None:
    # A plain table and a partitioned one (whose rewritten files must each hold one
    # partition value too) beside one Delta table: the same syncs, the same rows.
    delta = tmp_path / "delta"
    tables = {name: (tmp_path / name, iceberg_config(tmp_path / name), partition_by)
              for name, partition_by in (("plain", None), ("partitioned", ["bucket(3, id)"]))}
    runs: dict[str, list[SyncResult]] = {name: [] for name in tables}
    for generation in range(3):
        sync(_connection(delta, None, generation=generation))
        in_delta = content(delta_rows(spark, delta))  # read once: a Spark job each time
        for name, (ice, config, partition_by) in tables.items():
            runs[name].append(sync(_connection(ice, config, partition_by=partition_by,
                                               generation=generation)))
            assert content(iceberg_rows(config)) == in_delta, name
    for name, (ice, config, partition_by) in tables.items():
        rows = iceberg_rows(config)
        assert sorted(rows.column("id").to_pylist()) == sorted(
            truth(2).column("id").to_pylist()), name
        assert keyed(rows) == keyed(truth(2)), name
        # Each checkpoint is exactly one snapshot, with its marker; updates rewrote files.
        assert marked(config) == committed(
            _connection(ice, config, partition_by=partition_by), *runs[name])
        operations = Counter(s["operation"] for s in snapshots(config))
        assert operations["overwrite"] >= 2, (name, operations)
        assert orphans(config) == set(), name


class Killed(BaseException):
    """Ends the sync where it is, as SIGKILL would (nothing in the engine catches it)."""


class DiesAfterFirstMerge(IcebergDestination):
    """Its first merge lands, then the process "dies" before the engine hears of it."""

    merges = 0

    def commit_files(self, *args: Any, **kwargs: Any) -> Any:
        result = super().commit_files(*args, **kwargs)
        self.merges += 1  # this instance's count (the test runs on every catalog)
        if self.merges == 1:
            raise Killed
        return result


# The lookup reads the table's snapshots, the same on every catalog: what differs is how a
# catalog points at the table's latest metadata after the "kill", so the path-based default
# and the REST server (SQLite and PostgreSQL are the same ``SqlCatalog``, run by the test below).
@pytest.mark.parametrize("config", ["hadoop", "rest"], indirect=True)
def test_a_merge_that_landed_before_a_kill_is_found_not_rewritten(
        spark: Any, tmp_path: Path, config: dict[str, Any],
        monkeypatch: pytest.MonkeyPatch) -> None:
    ice = tmp_path / "ice"
    # Three checkpoints: the first merge lands before the kill, the other two after it.
    sync(_connection(ice, config, per_checkpoint=2))
    path = _connection(ice, config, per_checkpoint=2, generation=1)
    with pytest.raises(Killed):
        sync(path, DiesAfterFirstMerge(config))
    landed = len(snapshots(config))
    assert snapshots(config)[-1]["operation"] == "overwrite"  # the merge rewrote files
    computed: list[int] = []
    original = _merge.merge

    def counting(*args: Any, **kwargs: Any) -> Any:
        computed.append(1)
        return original(*args, **kwargs)

    monkeypatch.setattr(_merge, "merge", counting)
    again = sync(path, IcebergDestination(config))
    assert again.resumed and again.attempt == 2, again.to_dict()
    store = MetadataStore(load_connection(path).metadata_store or "")
    found_again = [c for c in store.list_checkpoints(again.run_id)
                   if c.stats.get("already_committed")]
    assert len(found_again) == 1
    # One snapshot per checkpoint of the run, the landed one not rewritten again.
    planned = len(store.list_checkpoints(again.run_id))
    assert len(snapshots(config)) == landed + planned - 1
    assert len(computed) == planned - 1
    assert keyed(iceberg_rows(config)) == keyed(truth(1))
    assert orphans(config) == set()


def test_a_writer_committing_meanwhile_makes_the_merge_compute_again(
        spark: Any, tmp_path: Path, config: dict[str, Any],
        monkeypatch: pytest.MonkeyPatch) -> None:
    ice = tmp_path / "ice"
    sync(_connection(ice, config, per_checkpoint=16))
    original = _merge.merge
    calls: list[int] = []
    other: dict[str, Any] = {}

    def with_a_writer_meanwhile(spark_: Any, table: Any, new_files: Any, **kwargs: Any) -> Any:
        rewrite = original(spark_, table, new_files, **kwargs)
        calls.append(1)
        if len(calls) == 1:
            # Another writer appends a newer row of a key new to the table, which this
            # checkpoint inserts: a rewrite computed before that append would insert it
            # too (the key twice); computed again, the other writer's newer row wins.
            # The other writer is a catalog client of its own.
            batch = pa.concat_tables([pq.read_table(_rewrite.local(p)) for p in new_files])
            row = max(batch.to_pylist(), key=lambda r: r["id"])
            assert row["id"] >= SOURCE["users"]
            row.update(updated_at=row["updated_at"] + dt.timedelta(days=30),
                       _hw_run_id="another-writer", _hw_checkpoint=10**6)
            other.update(id=row["id"], updated_at=row["updated_at"])
            live = load_table(config)
            live.append(pa.Table.from_pylist([row], schema=_rewrite.arrow_schema(live)))
        return rewrite

    monkeypatch.setattr(_merge, "merge", with_a_writer_meanwhile)
    sync(_connection(ice, config, per_checkpoint=16, generation=1))
    assert len(calls) == 2  # the stale rewrite was not committed: computed again
    rows = iceberg_rows(config)
    ids = rows.column("id").to_pylist()
    assert len(ids) == len(set(ids))  # no key twice
    kept = [r for r in rows.to_pylist() if r["id"] == other["id"]]
    assert [(r["_hw_run_id"], r["updated_at"]) for r in kept] == [
        ("another-writer", other["updated_at"])]
    assert orphans(config) == set()


# ------------------------------------------------- ties, as test_delta_merge_ties
# (row logic: on the default (hadoop) catalog only)

def _tie_commit(spark: Any, destination: Any, partitions: tuple[Partition, ...],
                records: list[tuple[Partition, int, int]], index: int) -> None:
    checkpoint = CheckpointPlan(index=index, checkpoint_id=f"ckpt-{index}", lane=0,
                                partitions=partitions)
    plan = StreamPlan(stream=STREAM, state_before=None, lanes=1, checkpoints=(checkpoint,),
                      json_schema=SCHEMA)
    destination.prepare(spark, plan, pa.schema([pa.field(n, pa.int64())
                                                for n in ("id", "updated", "version")]))
    marker = CommitMarker(app_id="test/items/0", version=index, run_id="run-1", stream="items",
                          checkpoint_index=index)
    destination.commit(spark, plan, checkpoint, tie_rows(spark, records, index), marker)


def _kept(spark: Any, tmp_path: Path, partitions: tuple[Partition, ...],
          batches: list[list[tuple[Partition, int, int]]]) -> tuple[list[int], list[int]]:
    """The versions each destination keeps after committing ``batches`` (checkpoints 1, 2...)."""
    ice = IcebergDestination({"warehouse": str(tmp_path / "warehouse")})
    delta = DeltaDestination({"path": str(tmp_path / "lake")})
    for index, records in enumerate(batches, start=1):
        _tie_commit(spark, ice, partitions, records, index)
        _tie_commit(spark, delta, partitions, records, index)
    iced = ice.catalog().load_table("headwater.items").scan().to_arrow()
    delta_kept = spark.read.format("delta").load(str(tmp_path / "lake" / "items"))
    return (iced.column("version").to_pylist(),
            [r["version"] for r in delta_kept.select("version").collect()])


def test_ties_go_to_the_later_record_partition_and_checkpoint_as_in_delta(
        spark: Any, tmp_path: Path) -> None:
    one = Partition(stream="items", id="objects/a.jsonl")
    # Records 0..11 of one object, every one at the same cursor: as text "9" > "11".
    assert _kept(spark, tmp_path / "a", (one,), [[(one, n, n) for n in range(12)]]) == (
        [11], [11])
    first, second = Partition(stream="items", id="window-1"), Partition(stream="items",
                                                                         id="window-2")
    early, late = sorted((first, second), key=_partition_digest, reverse=True)
    assert _kept(spark, tmp_path / "b", (early, late),
                 [[(late, 0, 200), (early, 7, 100)]]) == ([200], [200])
    part = Partition(stream="items", id="p")
    assert _kept(spark, tmp_path / "c", (part,), [[(part, 5, 1)], [(part, 0, 2)]]) == (
        [2], [2])
