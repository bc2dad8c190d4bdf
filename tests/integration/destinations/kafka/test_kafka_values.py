"""What a row's key and value are, as Spark's ``to_json`` makes them for the tasks: exact
decimals, ISO 8601 timestamps in UTC with microseconds, nulls kept, tombstones for deletes
(on the shared Spark session, no broker)."""

from __future__ import annotations

import datetime as dt
import json
from decimal import Decimal
from typing import Any

import pyarrow as pa
import pytest

from headwater.destinations.kafka import _records
from headwater.table_schema import META_FIELDS

pytestmark = pytest.mark.spark

DATA = pa.schema([("id", pa.int64()), ("region", pa.string()),
                  ("amount", pa.decimal128(38, 18)), ("at", pa.timestamp("us", tz="UTC")),
                  ("day", pa.date32()), ("note", pa.string()), ("_pg_deleted", pa.bool_())])


def _frame(spark: Any, rows: list[dict[str, Any]]) -> Any:
    meta = {"_hw_raw_id": "abc-7", "_hw_extracted_at": dt.datetime(2024, 1, 1, tzinfo=dt.UTC),
            "_hw_run_id": "run", "_hw_partition_id": "p-1", "_hw_checkpoint": 1,
            "_hw_notes": None}
    table = pa.Table.from_pylist([{**meta, **row} for row in rows],
                                 schema=pa.schema(META_FIELDS + list(DATA)))
    return spark.createDataFrame(table.to_pandas())


def test_keys_and_values_are_stable_exact_json(spark: Any) -> None:
    at = dt.datetime(2024, 5, 1, 12, 0, 0, 123456, tzinfo=dt.UTC)
    rows = [{"id": 1, "region": "eu", "amount": Decimal("12345678901234567890.123456789012345678"),
             "at": at, "day": dt.date(2024, 5, 1), "note": None, "_pg_deleted": False},
            {"id": 2, "region": "us", "amount": None, "at": None, "day": None, "note": "x",
             "_pg_deleted": True}]
    prepared = _records.prepare(_frame(spark, rows), DATA.names, ["id", "region"],
                                tombstones=True).orderBy("k").collect()
    first, deleted = prepared
    assert first["k"] == '{"id":1,"region":"eu"}'
    value = json.loads(first["v"], parse_float=Decimal)
    assert value["amount"] == Decimal("12345678901234567890.123456789012345678")
    assert value["at"] == "2024-05-01T12:00:00.123456Z"
    assert value["day"] == "2024-05-01"
    assert "note" in value and value["note"] is None
    assert (first["u"], first["r"], first["n"]) == ("p-1", "7", None)
    assert deleted["k"] == '{"id":2,"region":"us"}' and deleted["v"] is None


def test_a_stream_without_a_primary_key_has_null_keys_and_keeps_deletes_as_rows(
        spark: Any) -> None:
    rows = [{"id": 3, "region": "eu", "amount": Decimal("0.5"), "at": None, "day": None,
             "note": None, "_pg_deleted": True}]
    prepared = _records.prepare(_frame(spark, rows), DATA.names, [], tombstones=False).collect()
    assert prepared[0]["k"] is None
    assert json.loads(prepared[0]["v"])["_pg_deleted"] is True
