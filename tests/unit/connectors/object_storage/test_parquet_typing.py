"""Parquet values Spark's reader refuses or reads otherwise land without loss.

Found by the differential test against ``spark.read.parquet``
(``tests/integration/connectors/object_storage/test_parquet_differential.py``);
for nanosecond and far-off timestamps Spark refuses the file
(``PARQUET_TYPE_ILLEGAL``, an overflow), so the reference here is pyarrow's own
read of the file: a value the table holds exactly lands, any other is null with
a note keeping it, and the read never fails.
"""

from __future__ import annotations

import datetime as dt
import decimal
import io
import json
import math
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from tests.unit.connectors.object_storage.conftest import read_all, source, write


def _land(tmp_path: Path, table: pa.Table,
          schema: dict[str, Any] | None = None) -> pa.Table:
    out = io.BytesIO()
    pq.write_table(table, out, row_group_size=2)
    write(tmp_path, "in/a.parquet", out.getvalue())
    declared = {} if schema is None else {"schema": schema}
    return read_all(source(str(tmp_path), globs=["in/*"], format={"type": "parquet"},
                           **declared).streams()[0]).sort_by("_source_record")


def _notes(table: pa.Table) -> list[list[tuple[str, str, str]]]:
    return [[(n["field"], n["reason"], n["value"]) for n in notes or []]
            for notes in table.column("_hw_notes").to_pylist()]


def test_nanoseconds_land_where_they_divide_into_microseconds(tmp_path: Path) -> None:
    nanos = [1_000, 1, None, -1_500, 1_700_000_000_123_456_000]
    landed = _land(tmp_path, pa.table({
        "naive": pa.array(nanos, pa.timestamp("ns")),
        "utc": pa.array(nanos, pa.timestamp("ns", tz="UTC"))}))
    epoch = dt.datetime(1970, 1, 1, tzinfo=dt.UTC)
    want = [epoch + dt.timedelta(microseconds=1), None, None, None,
            dt.datetime(2023, 11, 14, 22, 13, 20, 123456, tzinfo=dt.UTC)]
    assert landed.column("naive").to_pylist() == want
    assert landed.column("utc").to_pylist() == want
    reason = "expected date-time: a ns value past the us a date-time holds"
    assert _notes(landed) == [
        [], [("naive", reason, "1970-01-01 00:00:00.000000001Z"),
             ("utc", reason, "1970-01-01 00:00:00.000000001Z")], [],
        [("naive", reason, "1969-12-31 23:59:59.999998500Z"),
         ("utc", reason, "1969-12-31 23:59:59.999998500Z")], []]


def test_timestamps_past_the_microsecond_range_are_noted(tmp_path: Path) -> None:
    far = 2**62  # milliseconds: 146 million years, past int64 microseconds
    landed = _land(tmp_path, pa.table({"at": pa.array([far, 0, -far], pa.timestamp("ms"))}))
    assert landed.column("at").to_pylist() == [
        None, dt.datetime(1970, 1, 1, tzinfo=dt.UTC), None]
    reason = "out of range: a date-time past what us since 1970 hold"
    assert _notes(landed) == [[("at", reason, f"{far} ms since 1970-01-01")], [],
                              [("at", reason, f"{-far} ms since 1970-01-01")]]


def test_decimals_binary_and_maps_land_as_they_are(tmp_path: Path) -> None:
    big = decimal.Decimal("12345678901234567890.1234567890")
    wide = decimal.Decimal("1" * 45 + ".5")
    landed = _land(tmp_path, pa.table({
        "d": pa.array([big, None], pa.decimal128(38, 10)),
        "w": pa.array([wide, None], pa.decimal256(60, 1)),
        "b": pa.array([b"\x00\xff", b""], pa.binary()),
        "f": pa.array([b"ab", None], pa.binary(2)),
        "m": pa.array([[("k", 1), ("j", None)], []], pa.map_(pa.string(), pa.int64())),
        "s": pa.array([{"m": [("k", 1.5)]}, None],
                      pa.struct([("m", pa.map_(pa.string(), pa.float64()))]))}))
    assert landed.schema.field("d").type == pa.decimal128(38, 10)
    assert landed.column("d").to_pylist() == [big, None]
    assert landed.column("w").to_pylist() == [str(wide), None]  # past 38 digits: its text
    assert landed.column("b").to_pylist() == [b"\x00\xff", b""]
    assert landed.column("f").to_pylist() == [b"ab", None]
    assert [json.loads(v) for v in landed.column("m").to_pylist()] == [{"k": 1, "j": None}, {}]
    assert json.loads(landed.column("s").to_pylist()[0]["m"]) == {"k": 1.5}
    assert _notes(landed) == [[], []]


def test_an_unsigned_value_past_int64_is_noted_with_its_digits(tmp_path: Path) -> None:
    landed = _land(tmp_path, pa.table({"u": pa.array([2**63 - 1, 2**64 - 1], pa.uint64())}))
    assert landed.column("u").to_pylist() == [2**63 - 1, None]
    assert [[(n[0], n[2]) for n in row] for row in _notes(landed)] == [
        [], [("u", str(2**64 - 1))]]


def test_declared_types_land_as_their_values_say_not_as_arrow_s_casts_read_them(
        tmp_path: Path) -> None:
    """Found auditing Arrow's casts against the value-by-value path: a double landed
    in a decimal as its binary expansion (1.1 as 1.100000000000000089), a decimal in
    a double not correctly rounded (0.3333333333 as 0.33333333330000003), 2 as true,
    true as 1, a date-time as its microseconds and "-nan" as NaN, none noted; a decimal
    in an integer or a double column was refused value by value.  Each value is what
    its text says, or null with a note."""
    third = decimal.Decimal("0.3333333333")
    landed = _land(tmp_path, pa.table({
        "f2d": pa.array([1.1, 0.1, None], pa.float64()),
        "d2f": pa.array([third, decimal.Decimal(3), decimal.Decimal(0)], pa.decimal128(38, 10)),
        "d2i": pa.array([decimal.Decimal(3), decimal.Decimal("3.5"), None],
                        pa.decimal128(38, 10)),
        "d2s": pa.array([third, decimal.Decimal(0), None], pa.decimal128(38, 10)),
        "i2b": pa.array([1, 0, 2], pa.int64()),
        "b2i": pa.array([True, None, None], pa.bool_()),
        "t2i": pa.array([None, 0, None], pa.timestamp("us", tz="UTC")),
        "s2f": pa.array(["nan", "-nan", "1.5"], pa.string()),
    }), schema={
        "f2d": {"type": "number", "format": "decimal", "precision": 38, "scale": 18},
        "d2f": {"type": "number"}, "d2i": {"type": "integer"}, "d2s": {"type": "string"},
        "i2b": {"type": "boolean"}, "b2i": {"type": "integer"}, "t2i": {"type": "integer"},
        "s2f": {"type": "number"}})
    columns = landed.select(["f2d", "d2f", "d2i", "d2s", "i2b", "b2i", "t2i", "s2f"])
    rows = columns.to_pylist()
    assert rows[0]["f2d"] == decimal.Decimal("1.1") and rows[1]["f2d"] == decimal.Decimal("0.1")
    assert [row["d2f"] for row in rows] == [0.3333333333, 3.0, 0.0]
    assert [row["d2i"] for row in rows] == [3, None, None]
    assert [row["d2s"] for row in rows] == ["0.3333333333", "0.0000000000", None]
    assert [row["i2b"] for row in rows] == [True, False, None]
    assert [row["b2i"] for row in rows] == [None, None, None]
    assert [row["t2i"] for row in rows] == [None, None, None]
    assert math.isnan(rows[0]["s2f"]) and [row["s2f"] for row in rows[1:]] == [None, 1.5]
    assert [sorted((n[0], n[2]) for n in row) for row in _notes(landed)] == [
        [("b2i", "true")],
        [("d2i", "3.5000000000"), ("s2f", "-nan"), ("t2i", '"1970-01-01 00:00:00+00:00"')],
        [("i2b", "2")],
    ]
