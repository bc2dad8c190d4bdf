"""Bulk decoding of RECORD lines: the same table and notes as the per-record path, or a refusal."""

from __future__ import annotations

import json
from typing import Any

import pyarrow as pa
import pytest

from headwater.connectors.airbyte._records import RecordDecoder
from headwater.table_schema import arrow_schema_for, batch_from_records, conform_batch

SCHEMA: dict[str, Any] = {"type": "object", "properties": {
    "id": {"type": "integer"},
    "score": {"type": ["null", "number"]},
    "active": {"type": "boolean"},
    "name": {"type": "string"},
    "created_at": {"type": "string", "format": "date-time"},
    "local_at": {"type": "string", "format": "date-time",
                 "airbyte_type": "timestamp_without_timezone"},
    "day": {"type": "string", "format": "date"},
    "tags": {"type": "array", "items": {"type": "string"}},
    "address": {"type": "object", "properties": {"city": {"type": "string"}}},
    "anything": {},
}}

ROWS: list[dict[str, Any]] = [
    {"id": 1, "score": 1.5, "active": True, "name": 'Zoë "Z" \\ 😀',
     "created_at": "2024-01-01T10:00:00+02:00", "local_at": "2024-01-01T10:00:00Z",
     "day": "2024-02-03", "tags": ["a", "b"], "extra": "kept",
     "address": {"zip": "75001", "city": "Paris", "geo": {"lat": 48, "ok": True}},
     "anything": 7},
    {"id": 2, "score": 2, "active": False, "name": "plain", "created_at": "2024-01-01",
     "day": "2024-02-03T08:00:00", "tags": [], "extra": "also",
     "address": None, "anything": 8},
    {"id": 3, "score": None, "name": "", "created_at": "2024-13-01T00:00:00Z",
     "tags": None, "extra": "third", "address": {"city": "Zürich\n", "zip": "8001",
                                                 "geo": {"lat": 47, "ok": False}}},
]


def lines(rows: list[dict[str, Any]], stream: str = "items") -> list[str]:
    """RECORD lines as the Airbyte CDK prints them (compact JSON)."""
    return [json.dumps({"type": "RECORD", "record": {"stream": stream, "data": row,
                                                     "emitted_at": 1700000000000}},
                       separators=(",", ":")) + "\n" for row in rows]


def per_record(rows: list[dict[str, Any]]) -> tuple[pa.Table, list[list[dict[str, str]]]]:
    schema = arrow_schema_for(SCHEMA)
    columns, notes = batch_from_records(rows, schema)
    return pa.Table.from_arrays(columns, schema=schema), notes.to_lists()


def bulk(block: list[str]) -> tuple[pa.Table, list[list[dict[str, str]]]]:
    batch = RecordDecoder("items", SCHEMA).decode(block)
    assert batch is not None, "the decoder refused a block it should decode"
    schema = arrow_schema_for(SCHEMA)
    columns, notes = conform_batch(batch, schema)
    return pa.Table.from_arrays(columns, schema=schema), notes.to_lists()


def test_bulk_decoding_gives_the_per_record_table_and_notes() -> None:
    table, notes = bulk(lines(ROWS))
    expected, expected_notes = per_record(ROWS)
    assert table.equals(expected), (table.to_pylist(), expected.to_pylist())
    assert notes == expected_notes
    # What the comparison covers: a struct with keys outside its properties (noted),
    # JSON text, a cast date-time, a value that does not fit (month 13), a field outside
    # the schema.
    assert table.column("address").to_pylist() == [{"city": "Paris"}, None,
                                                   {"city": "Zürich\n"}]
    assert table.column("anything").to_pylist() == ["7", "8", None]
    assert sorted(n["field"] for n in notes[2]) == ["address.geo", "address.zip",
                                                    "created_at", "extra"]
    assert {n["field"]: n["value"] for n in notes[0]}["address.geo"] == '{"lat": 48, "ok": true}'


def test_an_open_column_of_strings_is_json_text_as_per_record() -> None:
    rows: list[dict[str, Any]] = [{"id": 1, "anything": "x"}, {"id": 2, "anything": 'q"é'}]
    table, _ = bulk(lines(rows))
    expected, _ = per_record(rows)
    # A VARIANT column: the same JSON values (their escapes may differ, as VARIANT ignores).
    texts = table.column("anything").to_pylist()
    assert [json.loads(t) for t in texts] == ["x", 'q"é'] == [
        json.loads(t) for t in expected.column("anything").to_pylist()]


def test_records_of_other_streams_are_left_out() -> None:
    block = lines(ROWS[:1]) + lines([{"id": 99}], stream="other") + lines(ROWS[1:2])
    table, _ = bulk(block)
    assert table.column("id").to_pylist() == [1, 2]


@pytest.mark.parametrize("block", [
    pytest.param(lines([{"id": 1}, {"id": "not-a-number"}]), id="wrong type"),
    pytest.param(lines([{"id": 1}, {"id": 1.5}]), id="fraction in an integer"),
    pytest.param([*lines([{"id": 1}]), '{"type":"RECORD","record":{"stream":"items",\n'],
                 id="malformed JSON"),
    pytest.param(lines([{"id": 1, "anything": {"city": None}}]), id="null inside JSON text"),
    pytest.param(lines([{"id": 1, "anything": {"city": "a"}}, {"id": 2, "anything": {}}]),
                 id="key missing inside JSON text"),
    pytest.param(lines([{"id": 1, "anything": 2.0}]), id="number that may be an integer"),
    pytest.param(lines([{"id": 1, "address": {"at": "2024-01-01"}}]),
                 id="text Arrow takes for a date"),
    pytest.param(lines([{"id": 1, "_hw_notes": []}]), id="reserved notes field"),
    pytest.param(['{"type":"RECORD","record":{"stream":"items"}}\n'], id="no data"),
])
def test_blocks_that_could_differ_are_refused(block: list[str]) -> None:
    assert RecordDecoder("items", SCHEMA).decode(block) is None


def test_a_field_outside_the_schema_missing_or_null_is_taken_with_the_same_notes() -> None:
    # Its nulls (a JSON null, a record without it) are noted by neither path.
    rows: list[dict[str, Any]] = [{"id": 1, "extra": "x"}, {"id": 2}, {"id": 3, "extra": None}]
    table, notes = bulk(lines(rows))
    expected, expected_notes = per_record(rows)
    assert table.equals(expected)
    assert notes == expected_notes == [
        [{"field": "extra", "reason": "not in the stream schema", "value": "x"}], [], []]


def test_streams_with_decimals_or_base64_are_never_decoded_in_bulk() -> None:
    for prop in ({"type": "number", "format": "decimal", "precision": 10, "scale": 2},
                 {"type": "string", "contentEncoding": "base64"}):
        decoder = RecordDecoder("items", {"properties": {"id": {"type": "integer"}, "v": prop}})
        assert decoder.decode(lines([{"id": 1}])) is None


# -- struct columns: objects with declared properties, read under their declared type ----

NESTED_JSON_SCHEMA: dict[str, Any] = {"type": "object", "properties": {
    "id": {"type": "integer"},
    "address": {"type": "object", "properties": {
        "city": {"type": "string"}, "zip": {"type": "string"},
        "geo": {"type": "object", "properties": {"lat": {"type": "number"},
                                                 "ok": {"type": "boolean"}}}}},
    "contacts": {"type": "array", "items": {"type": "object", "properties": {
        "kind": {"type": "string"}, "tags": {"type": "array", "items": {"type": "string"}}}}},
    "created_at": {"type": "string", "format": "date-time"},
}}
#: The table columns such a schema maps to once objects with declared properties land
#: as structs (built here directly: the decoder must not depend on who maps them).
NESTED = pa.schema([
    pa.field("id", pa.int64()),
    pa.field("address", pa.struct([
        pa.field("city", pa.string()), pa.field("zip", pa.string()),
        pa.field("geo", pa.struct([pa.field("lat", pa.float64()),
                                   pa.field("ok", pa.bool_())]))])),
    pa.field("contacts", pa.list_(pa.struct([
        pa.field("kind", pa.string()), pa.field("tags", pa.list_(pa.string()))]))),
    pa.field("created_at", pa.timestamp("us", tz="UTC")),
])

NESTED_ROWS: list[dict[str, Any]] = [
    {"id": 1, "address": {"city": 'Zoë "Z" \\ 😀', "zip": "75001",
                          "geo": {"lat": 48, "ok": True}},
     "contacts": [{"kind": "mail", "tags": ["a", "b"]}, {"kind": "tel", "tags": []}],
     "created_at": "2024-01-01T10:00:00+02:00"},
    {"id": 2, "address": None, "contacts": None, "created_at": "2024-13-01T00:00:00Z"},
    {"id": 3, "address": {}, "contacts": []},
    {"id": 4, "address": {"city": "Zürich\n", "geo": {"lat": 47.5}},
     "contacts": [{"kind": None}, {}]},
    {"id": 5, "address": {"zip": "8001", "geo": None}},
]


def nested_per_record(rows: list[dict[str, Any]]) -> tuple[pa.Table, list[list[dict[str, str]]]]:
    columns, notes = batch_from_records(rows, NESTED)
    return pa.Table.from_arrays(columns, schema=NESTED), notes.to_lists()


def nested_decoder() -> RecordDecoder:
    return RecordDecoder("items", NESTED_JSON_SCHEMA, NESTED)


def test_struct_columns_decode_in_bulk_to_the_per_record_table_and_notes() -> None:
    batch = nested_decoder().decode(lines(NESTED_ROWS))
    assert batch is not None, "the decoder refused nested objects with declared properties"
    assert pa.types.is_struct(batch.schema.field("address").type)  # read as data, not text
    columns, notes = conform_batch(batch, NESTED)
    table = pa.Table.from_arrays(columns, schema=NESTED)
    expected, expected_notes = nested_per_record(NESTED_ROWS)
    assert table.equals(expected), (table.to_pylist(), expected.to_pylist())
    assert notes.to_lists() == expected_notes
    assert table.column("address")[0].as_py() == {
        "city": 'Zoë "Z" \\ 😀', "zip": "75001", "geo": {"lat": 48.0, "ok": True}}
    assert table.column("address")[2].as_py() == {"city": None, "zip": None, "geo": None}
    assert [n["field"] for n in expected_notes[1]] == ["created_at"]


@pytest.mark.parametrize("row", [
    pytest.param({"id": 1, "address": {"city": "a", "floor": 3}}, id="nested key not declared"),
    pytest.param({"id": 1, "contacts": [{"kind": "a", "note": "x"}]},
                 id="key not declared in a list of objects"),
])
def test_undeclared_nested_keys_decode_in_bulk_with_the_per_record_notes(
        row: dict[str, Any]) -> None:
    block = lines([NESTED_ROWS[0], row])
    batch = nested_decoder().decode(block)
    assert batch is not None
    columns, notes = conform_batch(batch, NESTED)
    expected, expected_notes = nested_per_record([NESTED_ROWS[0], row])
    assert pa.Table.from_arrays(columns, schema=NESTED).equals(expected)
    assert notes.to_lists() == expected_notes
    assert expected_notes[1], "the undeclared key is kept as a note"


@pytest.mark.parametrize("row", [
    pytest.param({"id": 1, "address": {"at": "2024-01-01T00:00:00Z"}},
                 id="undeclared nested key Arrow takes for a date-time"),
    pytest.param({"id": 1, "address": {"zip": 75001}}, id="number where text is declared"),
    pytest.param({"id": 1, "address": {"geo": {"lat": "48"}}}, id="text where a number is"),
    pytest.param({"id": 1, "address": "Paris"}, id="text where an object is"),
    pytest.param({"id": 1, "contacts": {"kind": "a"}}, id="object where an array is"),
])
def test_nested_blocks_that_could_differ_are_refused(row: dict[str, Any]) -> None:
    block = lines([NESTED_ROWS[0], row])
    assert nested_decoder().decode(block) is None
    nested_per_record([NESTED_ROWS[0], row])  # the per-record path takes them, with notes


def test_structs_with_leaves_the_reader_cannot_type_keep_the_per_record_path() -> None:
    schema = pa.schema([pa.field("id", pa.int64()), pa.field("event", pa.struct([
        pa.field("at", pa.timestamp("us", tz="UTC"))]))])
    decoder = RecordDecoder("items", {"properties": {"id": {"type": "integer"}}}, schema)
    assert decoder.decode(lines([{"id": 1, "event": {"at": "2024-01-01T00:00:00Z"}}])) is None
