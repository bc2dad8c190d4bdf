"""Syncs into Delta tables someone else made first (plain Spark SQL), on both writers.

Issue 35, case 4 for Delta: a table whose ``id`` is a string and ``amount`` an int
must be refused before the first write (no ``_hw_*`` column added, no row), with
the columns and both types named; one whose types hold the stream's values is
adopted.  The tables are made by another writer (delta-rs: no Spark job to pay
for) and read back with plain Spark.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from deltalake import DeltaTable, write_deltalake

from headwater.connectors.sample import SampleSource
from headwater.table_schema import META_NAMES
from tests.integration._connections import connection_file, sync

pytestmark = pytest.mark.spark

SOURCE = {"seed": 3, "users": 0, "orders": 300, "rows_per_partition": 100}
ORDERS = [{"name": "orders", "sync_mode": "full_refresh", "destination_sync_mode": "append"}]


def _connection(tmp_path: Path, writer: str) -> Path:
    return connection_file(tmp_path, name="shop", source=SOURCE, streams=ORDERS, writer=writer)


@pytest.mark.parametrize("writer", ["auto", "spark"])
def test_a_table_whose_types_cannot_hold_the_stream_s_is_refused_and_left_as_it_was(
        spark: Any, tmp_path: Path, writer: str) -> None:
    orders = tmp_path / "lake" / "orders"
    write_deltalake(str(orders), pa.table({"id": ["A-1", "A-2"],
                                           "amount": pa.array([5, 7], pa.int32())}))
    failed = sync(_connection(tmp_path, writer), expect="failed")
    message = failed.streams[0].error or ""
    assert f"the Delta table at {orders} exists, was not created by Headwater" in message
    assert ("id: the stream's long does not fit the table's string; amount: the stream's "
            "double does not fit the table's int") in message
    table = spark.read.format("delta").load(str(orders))
    assert table.columns == ["id", "amount"]
    assert sorted(tuple(r) for r in table.collect()) == [("A-1", 5), ("A-2", 7)]
    assert DeltaTable(str(orders)).version() == 0  # not one commit since


def test_a_table_whose_types_are_wider_is_adopted_and_read_back(spark: Any,
                                                                tmp_path: Path) -> None:
    orders = tmp_path / "lake" / "orders"
    write_deltalake(str(orders), pa.schema([("id", pa.decimal128(20, 0)),
                                            ("amount", pa.float64()),
                                            ("legacy", pa.string())]).empty_table())
    synced = sync(_connection(tmp_path, "auto"), expect="warned")
    # Its own column the stream does not write is null in these rows: said, not hidden.
    [stream] = synced.streams
    assert stream.warnings and "legacy" in stream.warnings[0], stream.warnings
    rows = spark.read.format("delta").load(str(orders))
    assert set(META_NAMES) <= set(rows.columns)
    assert dict(rows.dtypes)["id"] == "decimal(20,0)"  # the table's type is kept
    truth = SampleSource(SOURCE).expected_rows("orders")
    got = rows.where(rows["_hw_run_id"] == synced.run_id).select(
        "id", "amount", "legacy", "_hw_notes").collect()
    assert sorted(int(r["id"]) for r in got) == sorted(truth.column("id").to_pylist())
    assert sorted(r["amount"] for r in got) == sorted(truth.column("amount").to_pylist())
    assert all(r["legacy"] is None and r["_hw_notes"] is None for r in got)
