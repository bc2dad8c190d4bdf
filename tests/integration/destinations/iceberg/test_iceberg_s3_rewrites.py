"""Iceberg's copy-on-write rewrites in a warehouse on S3, differentially against a local one.

``append_dedup``, a replay, ``state realign``'s counts and deletes by run, and
rows handed to the driver (a dedup table's replay, the tie commits) read and
rewrite the table's files through the same pyarrow filesystem the tasks write
with (``_rewrite.locate``).  Each test runs the same syncs (or commits) into a
warehouse on the run's S3-compatible server (moto on 127.0.0.1, the
``s3_server`` fixture, a SQL catalog in SQLite) and into a local one, and both
tables, read with PyIceberg's scan through catalog clients of the test's own,
must hold the same rows, every column (but the run id and extraction time, which
two runs fill differently).  A rewrite overtaken by another committer is
computed again and leaves no file of its own behind in the bucket.
"""

from __future__ import annotations

import datetime as dt
from collections import Counter
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest

from headwater.connectors.sample import SampleSource
from headwater.destinations.iceberg import IcebergDestination, _merge, _rewrite
from headwater.engine._rerun import replay
from headwater.sdk import Partition
from tests.integration._connections import connection_file, engine, sync
from tests.integration._s3 import S3Server
from tests.integration.destinations.delta._s3 import access
from tests.integration.destinations.iceberg.test_iceberg_dedup import _tie_commit
from tests.integration.destinations.iceberg.test_iceberg_s3 import (
    destination_config,
    reader,
    rows_of,
)

pytestmark = pytest.mark.spark

SOURCE = {"seed": 23, "users": 300, "orders": 0, "rows_per_partition": 100,
          "updates_per_generation": 30, "new_per_generation": 20}
DEDUP = {"name": "users", "sync_mode": "incremental", "destination_sync_mode": "append_dedup",
         "cursor_field": "updated_at", "primary_key": ["id"]}
APPEND = {"name": "users", "sync_mode": "incremental", "destination_sync_mode": "append"}
S3, LOCAL = "s3", "local"


def warehouses(bucket: str, tmp_path: Path) -> dict[str, str]:
    return {S3: f"s3a://{bucket}/warehouse", LOCAL: str(tmp_path / LOCAL / "warehouse")}


def connection(folder: Path, warehouse: str, stream: dict[str, Any], generation: int,
               per_checkpoint: int = 1) -> Path:
    return connection_file(
        folder, name="ice-rw", source={**SOURCE, "generation": generation}, streams=[stream],
        checkpoint={"partitions_per_checkpoint": per_checkpoint, "concurrent_checkpoints": 2},
        destination={"type": "iceberg", "config": destination_config(folder, warehouse)})


def table(tmp_path: Path, where: str, warehouse: str, server: S3Server) -> Any:
    return reader(tmp_path / where, warehouse, server).load_table("headwater.users")


def snapshot_rows(tmp_path: Path, warehouse: dict[str, str], server: S3Server,
                  ) -> dict[str, Counter[tuple[Any, ...]]]:
    """Each warehouse's table, every column but the per-run ones, read by PyIceberg's scan."""
    return {where: rows_of(table(tmp_path, where, w, server).scan().to_arrow())
            for where, w in warehouse.items()}


def same_but_checkpoint(rows: Counter[tuple[Any, ...]]) -> Counter[tuple[Any, ...]]:
    """:func:`rows_of`'s rows without their first column, ``_hw_checkpoint`` (sorted first)."""
    found: Counter[tuple[Any, ...]] = Counter()
    for row, count in rows.items():
        found[row[1:]] += count
    return found


def keyed(rows: pa.Table) -> Counter[tuple[int, Any]]:
    return Counter(zip(rows.column("id").to_pylist(), rows.column("updated_at").to_pylist(),
                       strict=True))


def truth(generation: int) -> pa.Table:
    return SampleSource({**SOURCE, "generation": generation}).expected_rows("users")


def stored_files(server: S3Server, bucket: str, table_: Any) -> set[str]:
    """Every Parquet object under the table's ``data/`` prefix."""
    prefix = table_.location().removeprefix(f"s3://{bucket}/") + "/data/"
    listed = server.client().get_paginator("list_objects_v2").paginate(Bucket=bucket,
                                                                        Prefix=prefix)
    return {f"s3://{bucket}/{o['Key']}" for page in listed for o in page.get("Contents", [])
            if o["Key"].endswith(".parquet")}


def referenced_files(table_: Any) -> set[str]:
    """The data files any snapshot of the table references (a rewritten file stays
    referenced by the snapshots before the rewrite)."""
    return {t.file.file_path for s in table_.snapshots()
            for t in table_.scan(snapshot_id=s.snapshot_id).plan_files()}


def operations(table_: Any) -> Counter[str]:
    return Counter(s.summary.operation.value for s in table_.snapshots() if s.summary)


@pytest.mark.parametrize("partition_by", [None, ["bucket(3, id)"]],
                         ids=["unpartitioned", "partitioned"])
def test_dedup_syncs_and_their_replay_on_s3_hold_what_a_local_warehouse_holds(
        spark: Any, s3_server: S3Server, s3_bucket: str, tmp_path: Path,
        partition_by: list[str] | None) -> None:
    stream = {**DEDUP, "partition_by": partition_by} if partition_by else DEDUP
    warehouse = warehouses(s3_bucket, tmp_path)
    second: dict[str, str] = {}
    for generation in (0, 1):  # updates of keys written by the first sync, and new keys
        for where, w in warehouse.items():
            result = sync(connection(tmp_path / where, w, stream, generation))
            second[where] = result.run_id
        rows = snapshot_rows(tmp_path, warehouse, s3_server)
        assert rows[S3] == rows[LOCAL], generation
    on_s3 = table(tmp_path, S3, warehouse[S3], s3_server)
    assert keyed(on_s3.scan().to_arrow()) == keyed(truth(1))
    assert operations(on_s3)["overwrite"] >= 1  # the second sync rewrote files on S3
    assert stored_files(s3_server, s3_bucket, on_s3) == referenced_files(on_s3)

    # A dedup table's replay: the rows are handed to the driver, written, then MERGEd.
    for where, w in warehouse.items():
        path = connection(tmp_path / where, w, stream, 1)
        assert replay(engine(path), second[where]).status == "succeeded"
    rows = snapshot_rows(tmp_path, warehouse, s3_server)
    assert rows[S3] == rows[LOCAL]
    on_s3 = table(tmp_path, S3, warehouse[S3], s3_server)
    assert keyed(on_s3.scan().to_arrow()) == keyed(truth(1))
    assert stored_files(s3_server, s3_bucket, on_s3) == referenced_files(on_s3)


def test_replay_and_realign_by_run_on_s3_as_in_a_local_warehouse(
        spark: Any, s3_server: S3Server, s3_bucket: str, tmp_path: Path) -> None:
    from pyiceberg.expressions import And, EqualTo, In

    warehouse = warehouses(s3_bucket, tmp_path)
    runs: dict[str, list[str]] = {}
    destinations: dict[str, IcebergDestination] = {}
    for where, w in warehouse.items():
        folder = tmp_path / where
        runs[where] = [sync(connection(folder, w, APPEND, g, per_checkpoint=2)).run_id
                       for g in (0, 1)]
        destinations[where] = IcebergDestination(destination_config(folder, w))
    before = snapshot_rows(tmp_path, warehouse, s3_server)
    assert before[S3] == before[LOCAL]

    # Rows of the second run deleted by hand (PyIceberg's own copy-on-write), then replayed.
    for where, w in warehouse.items():
        live = table(tmp_path, where, w, s3_server)
        gone = sorted(r["id"] for r in live.scan().to_arrow().to_pylist()
                      if r["_hw_run_id"] == runs[where][1])[::2]
        live.delete(And(EqualTo("_hw_run_id", runs[where][1]), In("id", gone)))
        assert snapshot_rows(tmp_path, {where: w}, s3_server)[where] != before[where]
        path = connection(tmp_path / where, w, APPEND, 1, per_checkpoint=2)
        assert replay(engine(path), runs[where][1]).status == "succeeded"
    after = snapshot_rows(tmp_path, warehouse, s3_server)
    assert after[S3] == after[LOCAL]
    # As before the deletes, but for the replay's checkpoint on the rows it wrote again.
    assert same_but_checkpoint(after[S3]) == same_but_checkpoint(before[S3])

    # state realign: rows counted by run, then one run's rows deleted.
    counts = {where: d.run_row_counts(spark, "users") for where, d in destinations.items()}
    assert counts[S3] == {runs[S3][0]: 300, runs[S3][1]: 50}
    assert [counts[LOCAL][r] for r in runs[LOCAL]] == [counts[S3][r] for r in runs[S3]]
    deleted = {where: d.delete_runs(spark, "users", [runs[where][1]])
               for where, d in destinations.items()}
    assert deleted == {S3: 50, LOCAL: 50}
    assert destinations[S3].run_row_counts(spark, "users") == {runs[S3][0]: 300}
    rows = snapshot_rows(tmp_path, warehouse, s3_server)
    assert rows[S3] == rows[LOCAL] and sum(rows[S3].values()) == 300
    on_s3 = table(tmp_path, S3, warehouse[S3], s3_server)
    assert on_s3.snapshots()[-1].summary.additional_properties[  # type: ignore[union-attr]
        "headwater.deleted_runs"] == runs[S3][1]
    assert destinations[S3].delete_runs(spark, "users", ["no-such-run"]) == 0
    # The replay's and the deletes' rewrites left no file of their own unreferenced.
    assert stored_files(s3_server, s3_bucket, on_s3) == referenced_files(on_s3)


# ---------------------------------------------- ties, through rows handed to the driver
# (test_iceberg_dedup's commits, with the rows handed to the destination's ``commit``)

def test_ties_on_s3_go_where_they_go_in_a_local_warehouse(
        spark: Any, s3_server: S3Server, s3_bucket: str, tmp_path: Path) -> None:
    one = Partition(stream="items", id="objects/a.jsonl")
    part = Partition(stream="items", id="p")
    kept: dict[str, list[list[int]]] = {}
    for where, w in warehouses(s3_bucket, tmp_path).items():
        folder = tmp_path / where
        folder.mkdir(parents=True, exist_ok=True)
        destination = IcebergDestination(destination_config(folder, w))
        # Twelve records of one object at one cursor (as text "9" > "11"), then a later
        # checkpoint's record that must win over the table's row of the same key.
        _tie_commit(spark, destination, (one,), [(one, n, n) for n in range(12)], 1)
        first = reader(folder, w, s3_server).load_table("headwater.items").scan().to_arrow()
        _tie_commit(spark, destination, (part,), [(part, 0, 100)], 2)
        second = reader(folder, w, s3_server).load_table("headwater.items").scan().to_arrow()
        kept[where] = [first.column("version").to_pylist(), second.column("version").to_pylist()]
    assert kept[S3] == kept[LOCAL] == [[11], [100]]


# ------------------------------------------------------- a rewrite that loses a race

def test_a_merge_overtaken_on_s3_is_computed_again_and_leaves_no_file(
        spark: Any, s3_server: S3Server, s3_bucket: str, tmp_path: Path,
        monkeypatch: pytest.MonkeyPatch) -> None:
    warehouse = f"s3a://{s3_bucket}/warehouse"
    sync(connection(tmp_path, warehouse, DEDUP, 0, per_checkpoint=16))
    original = _merge.merge
    computed: list[Any] = []
    other: dict[str, Any] = {}
    filesystem = access(s3_server).filesystem()

    def with_a_writer_meanwhile(spark_: Any, table_: Any, new_files: Any, **kwargs: Any) -> Any:
        rewrite = original(spark_, table_, new_files, **kwargs)
        computed.append(rewrite)
        if len(computed) == 1:
            # Another committer (a catalog client of its own) lands first a newer row of
            # a key this checkpoint inserts: the stale rewrite would hold the key twice.
            batch = pa.concat_tables([pq.read_table(_rewrite.locate(p, access(s3_server))[1],
                                                    filesystem=filesystem) for p in new_files])
            row = max(batch.to_pylist(), key=lambda r: r["id"])
            assert row["id"] >= SOURCE["users"]
            row.update(updated_at=row["updated_at"] + dt.timedelta(days=30),
                       _hw_run_id="another-writer", _hw_checkpoint=10**6)
            other.update(id=row["id"], updated_at=row["updated_at"])
            live = reader(tmp_path, warehouse, s3_server).load_table("headwater.users")
            live.append(pa.Table.from_pylist([row], schema=_rewrite.arrow_schema(live)))
        return rewrite

    monkeypatch.setattr(_merge, "merge", with_a_writer_meanwhile)
    sync(connection(tmp_path, warehouse, DEDUP, 1, per_checkpoint=16))
    assert len(computed) == 2  # the stale rewrite was not committed: computed again
    stale = computed[0]
    assert stale.written, "the first computation rewrote files"
    on_s3 = reader(tmp_path, warehouse, s3_server).load_table("headwater.users")
    rows = on_s3.scan().to_arrow()
    ids = rows.column("id").to_pylist()
    assert len(ids) == len(set(ids))  # no key twice
    kept = [r for r in rows.to_pylist() if r["id"] == other["id"]]
    assert [(r["_hw_run_id"], r["updated_at"]) for r in kept] == [
        ("another-writer", other["updated_at"])]
    others = rows.filter(pc.not_equal(rows["id"], other["id"]))
    assert keyed(others) == Counter({k: n for k, n in keyed(truth(1)).items()
                                     if k[0] != other["id"]})
    # The loser's files are gone from the bucket: every object is referenced.
    stored = stored_files(s3_server, s3_bucket, on_s3)
    assert not set(stale.written) & stored
    assert stored == referenced_files(on_s3)
