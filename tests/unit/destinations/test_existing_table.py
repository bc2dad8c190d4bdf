"""The rule for adopting a table Headwater did not create: each shared column must hold
every value of the stream's type, else the column, both types and what to do."""

from __future__ import annotations

import pyarrow as pa
import pytest

from headwater.destinations._existing_table import holds, is_headwater_table, misfits, refuse
from headwater.errors import ConfigError
from headwater.table_schema import LOGICAL_KEY, META_FIELDS, META_NAMES, VARIANT

UTC = pa.timestamp("us", tz="UTC")


@pytest.mark.parametrize(("table", "stream"), [
    (pa.int64(), pa.int32()),                  # int -> long
    (pa.int64(), pa.int64()),
    (pa.float64(), pa.float32()),              # float -> double
    (pa.float64(), pa.int32()),                # every int is a double
    (pa.decimal128(12, 4), pa.decimal128(10, 2)),  # more integer and fraction digits
    (pa.decimal128(20, 0), pa.int64()),        # 19 digits hold every long
    (pa.large_string(), pa.string()),
    (UTC, pa.timestamp("ms", tz="UTC")),
    (pa.date32(), pa.date32()),
    (pa.int64(), pa.null()),
])
def test_a_type_that_holds_every_value_of_the_stream_s_fits(table: pa.DataType,
                                                            stream: pa.DataType) -> None:
    assert holds(table, stream)


@pytest.mark.parametrize(("table", "stream"), [
    (pa.string(), pa.int64()),                 # ids would land as text
    (pa.int32(), pa.float64()),                # fractional amounts would be null
    (pa.int32(), pa.int64()),                  # long -> int loses values
    (pa.float64(), pa.int64()),                # a double holds 53 bits, not 64
    (pa.float32(), pa.float64()),
    (pa.decimal128(10, 2), pa.decimal128(10, 3)),  # a fraction digit lost
    (pa.decimal128(10, 2), pa.decimal128(11, 2)),  # an integer digit lost
    (pa.decimal128(19, 1), pa.int64()),
    (pa.timestamp("us"), UTC),                 # with / without time zone
    (pa.timestamp("ns", tz="UTC"), UTC),       # nanoseconds end in 2262
    (pa.int64(), pa.string()),
    (pa.bool_(), pa.int64()),
])
def test_a_type_that_loses_or_changes_values_does_not(table: pa.DataType,
                                                      stream: pa.DataType) -> None:
    assert not holds(table, stream)


def test_each_misfit_names_the_column_and_both_types() -> None:
    table = pa.schema([("id", pa.string()), ("amount", pa.int32()), ("note", pa.string())])
    stream = pa.schema([("id", pa.int64()), ("amount", pa.float64()), ("name", pa.string())])
    found = misfits(table, stream, adds_nested_fields=True)
    assert [m.describe() for m in found] == [
        "id: the stream's long does not fit the table's string",
        "amount: the stream's double does not fit the table's int"]
    with pytest.raises(ConfigError) as raised:
        refuse(found, table="Iceberg table shop.orders", stream="orders")
    message = raised.value.message
    assert "the Iceberg table shop.orders exists, was not created by Headwater" in message
    assert "id: the stream's long does not fit the table's string" in message
    assert "Nothing was written" in message and "Rename or drop that table" in message
    assert "declare the column's type" in message
    refuse([], table="t", stream="orders")  # nothing to refuse: returns


def test_nested_columns_are_compared_field_by_field() -> None:
    table = pa.schema([("address", pa.struct([("zip", pa.string())])),
                       ("tags", pa.list_(pa.int64()))])
    stream = pa.schema([("address", pa.struct([("zip", pa.int64()), ("city", pa.string())])),
                        ("tags", pa.list_(pa.int32()))])
    assert [m.column for m in misfits(table, stream, adds_nested_fields=True)] == ["address.zip"]
    assert [m.column for m in misfits(table, stream, adds_nested_fields=False)] == [
        "address.zip", "address.city"]


def test_required_columns_and_variants() -> None:
    table = pa.schema([pa.field("id", pa.int64(), nullable=False),
                       pa.field("legacy", pa.string(), nullable=False),
                       pa.field("payload", pa.string(), metadata={LOGICAL_KEY: VARIANT})])
    stream = pa.schema([("id", pa.int64()), ("payload", pa.struct([("a", pa.int64())]))])
    found = misfits(table, stream, adds_nested_fields=True)
    assert [m.column for m in found] == ["legacy", "id"]  # a VARIANT holds anything
    assert "NOT NULL" in found[0].describe() and "has no such column" in found[0].describe()


def test_a_headwater_table_has_every_metadata_column() -> None:
    assert is_headwater_table([*META_NAMES, "id"])
    assert not is_headwater_table(["id", "amount", "_hw_run_id"])
    assert [f.name for f in META_FIELDS] == META_NAMES
