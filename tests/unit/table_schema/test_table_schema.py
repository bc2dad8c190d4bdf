"""JSON Schema -> Arrow types, and conforming reader output with a note for every misfit."""

from __future__ import annotations

import datetime as dt

import pyarrow as pa

from headwater.table_schema import (
    UTC_TIMESTAMP,
    arrow_schema_for,
    arrow_type_for,
    batch_from_records,
    conform_batch,
)

SCHEMA = arrow_schema_for({
    "type": "object",
    "properties": {
        "id": {"type": "integer"},
        "price": {"type": ["null", "number"]},
        "paid": {"type": "boolean"},
        "at": {"type": "string", "format": "date-time"},
        "day": {"type": "string", "format": "date"},
        "tags": {"type": "array", "items": {"type": "string"}},
        "extra": {"type": "object"},
    },
})


def test_json_schema_types_map_to_arrow() -> None:
    assert SCHEMA.types == [pa.int64(), pa.float64(), pa.bool_(), UTC_TIMESTAMP, pa.date32(),
                            pa.list_(pa.string()), pa.string()]
    assert arrow_type_for({"type": ["string", "integer"]}) == pa.string()
    assert arrow_type_for({"type": "string", "format": "date-time",
                           "airbyte_type": "timestamp_without_timezone"}) == pa.timestamp("us")


def test_dict_records_keep_misfits_and_unknown_fields_as_notes() -> None:
    columns, row_notes = batch_from_records([
        {"id": 1, "price": "9.5", "paid": True, "at": "2024-01-01T00:00:00Z", "day": "2024-01-02",
         "tags": ["a"], "extra": {"k": 1}},
        {"id": "x", "price": 2, "paid": "maybe", "at": "not a date", "surprise": 5},
    ], SCHEMA)
    notes = row_notes.to_lists()
    batch = pa.RecordBatch.from_arrays(columns, schema=SCHEMA)
    assert batch.column(0).to_pylist() == [1, None]
    assert batch.column(1).to_pylist() == [9.5, 2.0]
    assert batch.column(3).to_pylist()[0] == dt.datetime(2024, 1, 1, tzinfo=dt.UTC)
    assert batch.column(6).to_pylist() == ['{"k":1}', None]  # JSON text of a VARIANT
    assert notes[0] == []
    assert {(n["field"], n["value"]) for n in notes[1]} == {
        ("id", "x"), ("paid", "maybe"), ("at", "not a date"), ("surprise", "5")}
    assert row_notes.array().null_count == 1


def test_arrow_batches_are_cast_and_only_misfits_go_value_by_value() -> None:
    batch = pa.record_batch({"id": pa.array(["1", "2", "three"]),
                             "at": pa.array([0, 1, 2], pa.timestamp("s"))})
    columns, row_notes = conform_batch(batch, SCHEMA)
    notes = row_notes.to_lists()
    assert columns[0].to_pylist() == [1, 2, None]
    assert columns[1].null_count == 3  # a missing column becomes nulls, not a misfit
    assert columns[3].type == UTC_TIMESTAMP
    assert notes == [[], [], [{"field": "id", "reason": notes[2][0]["reason"], "value": "three"}]]
    assert "expected int64" in notes[2][0]["reason"]
