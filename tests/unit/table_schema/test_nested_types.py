"""Objects with declared properties land as structs, arrays of them as lists of structs.

Both ways in are covered, dict records (HTTP, Airbyte's per-record path) and
Arrow batches (a reader's own types), and they must agree: a misfit inside a
struct costs that field (null plus a note ``parent.child``), never the record.
"""

from __future__ import annotations

import datetime as dt
import io
import json
from typing import Any

import pyarrow as pa
import pyarrow.json as pa_json

from headwater.table_schema import (
    UTC_TIMESTAMP,
    arrow_schema_for,
    arrow_type_for,
    batch_from_records,
    conform_batch,
)

ORDER: dict[str, Any] = {"type": "object", "properties": {
    "id": {"type": "integer"},
    "customer": {"type": ["null", "object"], "properties": {
        "name": {"type": "string"},
        "score": {"type": "number"},
        "since": {"type": "string", "format": "date-time"},
        "address": {"type": "object", "properties": {"city": {"type": "string"},
                                                     "zip": {"type": "string"}}},
        "tags": {"type": "array", "items": {"type": "string"}},
    }},
    "lines": {"type": "array", "items": {"type": "object", "properties": {
        "sku": {"type": "string"}, "qty": {"type": "integer"},
        "day": {"type": "string", "format": "date"}}}},
    "grid": {"type": "array", "items": {"type": "array", "items": {"type": "integer"}}},
    "open": {"type": "object"},
}}
SCHEMA = arrow_schema_for(ORDER)
UTC = dt.UTC


def test_declared_objects_are_structs_open_ones_are_json_text() -> None:
    customer = pa.struct([
        ("name", pa.string()), ("score", pa.float64()), ("since", UTC_TIMESTAMP),
        ("address", pa.struct([("city", pa.string()), ("zip", pa.string())])),
        ("tags", pa.list_(pa.string()))])
    assert SCHEMA.field("customer").type == customer
    assert SCHEMA.field("lines").type == pa.list_(pa.struct([
        ("sku", pa.string()), ("qty", pa.int64()), ("day", pa.date32())]))
    assert SCHEMA.field("grid").type == pa.list_(pa.list_(pa.int64()))
    assert SCHEMA.field("open").type == pa.string()
    assert arrow_type_for({"type": "object", "properties": {}}) == pa.string()
    # An array of open objects is open as a whole: one VARIANT (JSON text) column.
    assert arrow_type_for({"type": "array", "items": {"type": "object"}}) == pa.string()


GOOD = {"id": 1, "customer": {"name": "Ada", "score": 3, "since": "2024-03-01T10:11:12.123456Z",
                              "address": {"zip": "75001", "city": "Paris"}, "tags": ["a", "b"]},
        "lines": [{"sku": "x", "qty": 2, "day": "2024-03-01"}, {"qty": 1, "sku": "y"}],
        "grid": [[1, 2], [], [3]]}
GOOD_ROW = {"id": 1, "customer": {
    "name": "Ada", "score": 3.0, "since": dt.datetime(2024, 3, 1, 10, 11, 12, 123456, tzinfo=UTC),
    "address": {"city": "Paris", "zip": "75001"}, "tags": ["a", "b"]},
    "lines": [{"sku": "x", "qty": 2, "day": dt.date(2024, 3, 1)},
              {"sku": "y", "qty": 1, "day": None}],
    "grid": [[1, 2], [], [3]], "open": None}
MISFITS = {"id": 2, "customer": {"name": "Bo", "score": "high",
                                 "since": "2024-03-01T10:11:12+02:00",
                                 "address": {"city": "Oslo", "floor": 3}},
           "lines": [{"sku": "z", "qty": 1}, {"sku": "w", "qty": "many"}]}


def table_of(columns: list[pa.Array]) -> list[dict[str, Any]]:
    return pa.Table.from_arrays(columns, schema=SCHEMA).to_pylist()


def test_dict_records_land_as_structs_and_misfits_cost_one_field() -> None:
    columns, notes = batch_from_records([GOOD, MISFITS, {"id": 3, "customer": None}], SCHEMA)
    rows = table_of(columns)
    assert rows[0] == GOOD_ROW
    assert rows[1]["customer"] == {
        "name": "Bo", "score": None, "since": dt.datetime(2024, 3, 1, 8, 11, 12, tzinfo=UTC),
        "address": {"city": "Oslo", "zip": None}, "tags": None}
    assert rows[1]["lines"] == [{"sku": "z", "qty": 1, "day": None},
                                {"sku": "w", "qty": None, "day": None}]
    assert rows[2]["customer"] is None
    found = notes.to_lists()
    assert found[0] == [] and found[2] == []
    assert {(n["field"], n["value"]) for n in found[1]} == {
        ("customer.score", "high"), ("customer.address.floor", "3"), ("lines.qty", "many")}


def test_a_value_that_is_not_an_object_is_null_with_a_note() -> None:
    columns, notes = batch_from_records([{"id": 1, "customer": "nobody", "lines": {"a": 1}}],
                                        SCHEMA)
    row = table_of(columns)[0]
    assert row["customer"] is None and row["lines"] is None
    assert [(n["field"], n["reason"].split(":")[0]) for n in notes.to_lists()[0]] == [
        ("customer", "expected object"), ("lines", "expected array of object")]


def arrow_batch(records: list[dict[str, Any]]) -> pa.RecordBatch:
    """What pyarrow's JSON reader infers for the records (another field order, ints, text)."""
    text = "".join(json.dumps(r) + "\n" for r in records).encode()
    return pa_json.read_json(io.BytesIO(text)).combine_chunks().to_batches()[0]


def test_arrow_structs_are_cast_by_field_name_in_bulk() -> None:
    batch = arrow_batch([GOOD, {"id": 3}])
    assert batch.schema.field("customer").type != SCHEMA.field("customer").type
    columns, notes = conform_batch(batch, SCHEMA)
    assert table_of(columns) == [GOOD_ROW, {"id": 3, "customer": None, "lines": None,
                                            "grid": None, "open": None}]
    assert notes.to_lists() == [[], []]


def test_arrow_misfits_inside_structs_and_lists_are_noted_on_their_rows() -> None:
    records = [GOOD, {"id": 5, "customer": {"score": 1.5, "since": "not a time", "extra": True}},
               {"id": 6, "lines": [{"sku": "a", "qty": 1.5}, {"sku": "b", "qty": 2, "gift": 1}]}]
    batch = arrow_batch(records).slice(1)  # a slice: offsets of lists and structs matter
    columns, notes = conform_batch(batch, SCHEMA)
    rows = table_of(columns)
    assert rows[0]["customer"] == {"name": None, "score": 1.5, "since": None, "address": None,
                                   "tags": None}
    assert rows[1]["lines"] == [{"sku": "a", "qty": None, "day": None},
                                {"sku": "b", "qty": 2, "day": None}]
    found = notes.to_lists()
    assert {(n["field"], n["value"]) for n in found[0]} == {
        ("customer.since", "not a time"), ("customer.extra", "true")}
    assert {(n["field"], n["value"]) for n in found[1]} == {
        ("lines.qty", "1.5"), ("lines.gift", "1")}
    # The dict path gives the same rows and notes for the same records.
    dict_columns, dict_notes = batch_from_records(records[1:], SCHEMA)
    assert table_of(dict_columns) == rows
    assert [sorted(n["field"] for n in row) for row in dict_notes.to_lists()] == \
        [sorted(n["field"] for n in row) for row in found]


def test_nested_json_text_is_parsed_into_the_struct() -> None:
    batch = pa.record_batch({"customer": pa.array(['{"name": "Cy", "tags": ["t"]}', None])})
    columns, notes = conform_batch(batch, SCHEMA)
    assert columns[1].to_pylist() == [
        {"name": "Cy", "score": None, "since": None, "address": None, "tags": ["t"]}, None]
    assert notes.to_lists() == [[], []]
