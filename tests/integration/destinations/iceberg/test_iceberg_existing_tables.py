"""Syncs into Iceberg tables someone else made first, and table properties that reach the files.

Issue 35, cases 4 and 5: a table with ``id string`` and ``amount int`` was adopted
silently (ids as text, fractional amounts null, ``_hw_*`` columns added beside the
old rows); ``write.format.default: orc`` and ``write.parquet.compression-codec:
zstd`` were set on a table whose files were snappy Parquet.  Real Spark, the
embedded catalog, read back with PyIceberg and pyarrow's Parquet metadata.
"""

from __future__ import annotations

from decimal import Decimal
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from headwater.connectors.sample import SampleSource
from headwater.errors import ConfigError
from headwater.table_schema import META_NAMES
from tests.integration._connections import connection_file, engine, sync
from tests.integration.destinations.iceberg._catalogs import iceberg_config, reader

pytestmark = pytest.mark.spark

SOURCE = {"seed": 3, "users": 0, "orders": 300, "rows_per_partition": 100}
ORDERS = {"name": "orders", "sync_mode": "full_refresh", "destination_sync_mode": "append"}


def _connection(tmp_path: Path, **stream: Any) -> Path:
    return connection_file(tmp_path, name="shop", source=SOURCE, streams=[{**ORDERS, **stream}],
                           destination={"type": "iceberg", "config": iceberg_config(tmp_path)})


def _foreign_table(tmp_path: Path, rows: pa.Table) -> Any:
    """``headwater.orders`` made by another writer (PyIceberg), holding ``rows``."""
    catalog = reader(iceberg_config(tmp_path))
    catalog.create_namespace("headwater")
    table = catalog.create_table("headwater.orders", schema=rows.schema)
    table.append(rows)
    return table


def test_a_table_whose_types_cannot_hold_the_stream_s_is_refused_and_left_as_it_was(
        spark: Any, tmp_path: Path) -> None:
    rows = pa.table({"id": pa.array(["A-1", "A-2"]), "amount": pa.array([5, 7], pa.int32())})
    before = _foreign_table(tmp_path, rows)
    path = _connection(tmp_path)
    failed = sync(path, expect="failed")
    message = failed.streams[0].error or ""
    assert "the Iceberg table headwater.orders exists, was not created by Headwater" in message
    assert ("id: the stream's long does not fit the table's string; amount: the stream's "
            "double does not fit the table's int") in message
    after = reader(iceberg_config(tmp_path)).load_table("headwater.orders")
    assert after.metadata_location == before.metadata_location  # not one change
    assert after.scan().to_arrow().equals(rows)
    assert not any(name.startswith("_hw_") for name in after.schema().column_names)


def test_a_table_whose_types_are_wider_is_adopted_and_read_back(spark: Any,
                                                                tmp_path: Path) -> None:
    old = pa.table({"id": pa.array([Decimal(-1)], pa.decimal128(20, 0)),
                    "amount": pa.array([1.5], pa.float64()),
                    "legacy": pa.array(["kept"])})
    _foreign_table(tmp_path, old)
    synced = sync(_connection(tmp_path), expect="warned")
    # Its own column the stream does not write is null in these rows: said, not hidden.
    [stream] = synced.streams
    assert stream.warnings and "legacy" in stream.warnings[0], stream.warnings
    table = reader(iceberg_config(tmp_path)).load_table("headwater.orders")
    got = table.scan().to_arrow()
    truth = SampleSource(SOURCE).expected_rows("orders")
    assert got.num_rows == truth.num_rows + 1
    assert set(META_NAMES) <= set(got.column_names)
    mine = got.filter(pa.compute.equal(got.column("_hw_run_id"), synced.run_id))
    assert sorted(int(i) for i in mine.column("id").to_pylist()) == sorted(
        truth.column("id").to_pylist())
    assert sorted(mine.column("amount").to_pylist()) == sorted(truth.column("amount").to_pylist())
    assert mine.column("legacy").null_count == mine.num_rows
    # No value became a note (PyIceberg 0.12 reads a null list as []: test_iceberg_read_by_spark).
    assert not any(mine.column("_hw_notes").to_pylist())


def test_the_codec_asked_reaches_every_data_file(spark: Any, tmp_path: Path) -> None:
    """(The target file size is proven on the tasks' writer: tests/unit/destinations/iceberg/
    test_iceberg_properties.py; the sample source hands each task one batch.)"""
    path = _connection(tmp_path, table_properties={
        "write.parquet.compression-codec": "zstd", "write.target-file-size-bytes": 4096})
    sync(path)
    table = reader(iceberg_config(tmp_path)).load_table("headwater.orders")
    assert table.properties["write.parquet.compression-codec"] == "zstd"
    files = [task.file for task in table.scan().plan_files()]
    assert len(files) == 3  # one per partition
    for file in files:
        metadata = pq.read_metadata(file.file_path.removeprefix("file://"))
        codecs = {metadata.row_group(g).column(c).compression
                  for g in range(metadata.num_row_groups) for c in range(metadata.num_columns)}
        assert codecs == {"ZSTD"}, file.file_path
    assert table.scan().to_arrow().num_rows == SOURCE["orders"]


def test_a_format_other_than_parquet_is_refused_before_the_table_exists(
        spark: Any, tmp_path: Path) -> None:
    path = _connection(tmp_path, table_properties={"write.format.default": "orc"})
    with pytest.raises(ConfigError, match=r"write\.format\.default: 'orc': .*Parquet files only"):
        engine(path).run()
    catalog = reader(iceberg_config(tmp_path))
    assert not catalog.table_exists("headwater.orders")
