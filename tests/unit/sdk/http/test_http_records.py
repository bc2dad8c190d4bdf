"""Page records typed in bulk land exactly as the engine's own path for dicts types them."""

from __future__ import annotations

from typing import Any

import pyarrow as pa
import pytest

from headwater.sdk.http._records import records_batch
from headwater.table_schema import arrow_schema_for, batch_from_records, conform_batch

SCHEMA = arrow_schema_for({"type": "object", "properties": {
    "id": {"type": "integer"},
    "title": {"type": "string"},
    "score": {"type": "number"},
    "updated_at": {"type": "string", "format": "date-time"},
    "tags": {"type": "array", "items": {"type": "string"}},
    "done": {"type": "boolean"},
}})


def engine_path(records: list[Any]) -> tuple[list[pa.Array], list[list[dict[str, str]]]]:
    columns, notes = batch_from_records(records, SCHEMA)
    return columns, notes.to_lists()


def bulk_path(records: list[Any]) -> tuple[list[pa.Array], list[list[dict[str, str]]]]:
    batch = records_batch(records, SCHEMA)
    assert batch is not None
    columns, notes = conform_batch(batch, SCHEMA)
    return columns, notes.to_lists()


@pytest.mark.parametrize("records", [
    [{"id": 1_704_067_200 + i, "title": f"t{i}", "score": i / 2, "done": i % 2 == 0,
      "updated_at": "2024-01-01T00:00:00Z", "tags": ["a", "b"]} for i in range(50)],
    # missing keys, nulls, an int in a number column
    [{"id": 1}, {"id": 2, "title": None, "score": 3}, {}],
    # misfits: each becomes null with a note on its row, exactly as the engine notes it
    [{"id": "12", "title": 5, "score": "x", "done": "yes", "updated_at": "not a date",
      "tags": "[1]"},
     {"id": 1.5, "title": {"nested": [1]}, "score": True, "done": 1, "tags": [None, "c"]},
     {"id": True, "updated_at": 1_704_067_200}],
])
def test_bulk_typing_equals_the_engine_path(records: list[dict[str, Any]]) -> None:
    expected_columns, expected_notes = engine_path([dict(r) for r in records])
    columns, notes = bulk_path([dict(r) for r in records])
    assert [c.to_pylist() for c in columns] == [c.to_pylist() for c in expected_columns]
    assert [c.type for c in columns] == [c.type for c in expected_columns]
    assert notes == expected_notes


@pytest.mark.parametrize("records", [
    [{"id": 1, "unknown": "x"}],          # a key outside the schema: the engine notes it
    [{"id": 1}, ["not", "an", "object"]],  # not a dict
    [{"id": 1, "_hw_notes": [{"field": "id", "reason": "r", "value": "v"}]}],
    [],
])
def test_records_outside_the_common_case_are_left_to_the_engine(records: list[Any]) -> None:
    assert records_batch(records, SCHEMA) is None


def test_pages_of_nested_objects_are_typed_in_bulk_into_structs() -> None:
    # The schema an object with `properties` maps to once objects land as structs
    # (issue 17 item 2): a page of them is one batch, no record left to the engine.
    address = pa.struct([("city", pa.string()), ("zip", pa.int64())])
    schema = pa.schema([("id", pa.int64()), ("address", address),
                        ("contacts", pa.list_(pa.struct([("email", pa.string())])))])
    records = [{"id": i, "address": {"city": f"c{i}", "zip": i},
                "contacts": [{"email": f"{i}@x"}]} for i in range(100)]
    records.append({"id": 100, "address": None, "contacts": []})
    batch = records_batch(records, schema)
    assert batch is not None
    assert batch.schema == schema  # no notes column: every value fitted
    assert batch.to_pylist() == records
