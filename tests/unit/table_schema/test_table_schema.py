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


NOVEMBER_14 = dt.datetime(2023, 11, 14, 22, 13, 20, tzinfo=dt.UTC)


def test_a_number_in_a_date_time_is_epoch_seconds_whatever_its_neighbours() -> None:
    # Arrow alone reads 1700000000 as microseconds (1970-01-01 00:28:20) and 5 as a
    # day: the same record landed differently beside an ISO text than alone.
    alone = {"id": 1, "at": 1700000000, "day": 5}
    beside_text = {"id": 2, "at": "2024-01-01T00:00:00Z", "day": "2024-01-02"}
    for page in ([alone], [alone, beside_text], [{**alone, "at": 1700000000.0}]):
        columns, row_notes = batch_from_records(page, SCHEMA)
        assert columns[3][0].as_py() == NOVEMBER_14
        assert columns[4][0].as_py() is None
        assert row_notes.to_lists()[0] == [
            {"field": "day", "reason": "expected date: int is not a date", "value": "5"}]
    columns, row_notes = batch_from_records([{"at": 1.5, "day": 5.5}], SCHEMA)
    assert columns[3][0].as_py() == dt.datetime(1970, 1, 1, 0, 0, 1, 500000, tzinfo=dt.UTC)
    assert [n["field"] for n in row_notes.to_lists()[0]] == ["day"]
    # A number past the years a date-time holds is a noted misfit, not a wrong instant.
    columns, row_notes = batch_from_records([{"at": 1700000000000}], SCHEMA)
    assert columns[3][0].as_py() is None
    assert row_notes.to_lists()[0][0]["field"] == "at"


def test_numbers_read_by_arrow_into_a_date_time_are_epoch_seconds_too() -> None:
    # A reader's Arrow batch (an inferred JSON block, a struct's field) cast to the table.
    nested = pa.schema([("at", UTC_TIMESTAMP), ("day", pa.date32()),
                        ("s", pa.struct([("at", UTC_TIMESTAMP)]))])
    batch = pa.record_batch({"at": pa.array([1700000000]), "day": pa.array([5]),
                             "s": pa.array([{"at": 1700000000}])})
    columns, row_notes = conform_batch(batch, nested)
    assert columns[0].to_pylist() == [NOVEMBER_14]
    assert columns[1].to_pylist() == [None]
    assert columns[2].to_pylist() == [{"at": NOVEMBER_14}]
    assert [n["field"] for n in row_notes.to_lists()[0]] == ["day"]
