"""Open values (no one column type) as VARIANT, and JSON text where the user asks for it."""

from __future__ import annotations

import pyarrow as pa
import pytest

from headwater.table_schema import (
    JSON_TEXT,
    VARIANT,
    JsonText,
    arrow_field_for,
    arrow_schema_for,
    batch_from_records,
    column_type_label,
    conform_batch,
    is_open,
    json_columns_problem,
    json_kind,
    to_json_text,
    variant_columns,
)


@pytest.mark.parametrize("prop", [
    {"type": "object"},
    {"type": ["object", "null"], "additionalProperties": {"type": "integer"}},
    {"type": "object", "patternProperties": {"^x": {}}},
    {},
    {"type": ["string", "integer"]},
    {"anyOf": [{"type": "string"}, {"type": "object"}]},
    {"type": "array"},
    {"type": "array", "items": {"type": "object"}},
    {"type": "array", "items": {}},
])
def test_open_values_land_as_variant(prop: dict[str, object]) -> None:
    assert is_open(prop)
    field = arrow_field_for("v", prop)
    assert field.type == pa.string() and json_kind(field) == VARIANT
    assert column_type_label(prop) == "variant"


@pytest.mark.parametrize("prop", [
    {"type": "integer"}, {"type": ["string", "null"]},
    {"type": "array", "items": {"type": "string"}},
    {"type": "object", "properties": {"a": {"type": "integer"}}},
])
def test_typed_values_are_not_open(prop: dict[str, object]) -> None:
    assert not is_open(prop)
    assert json_kind(arrow_field_for("v", prop)) is None


def test_json_columns_switch_a_column_to_json_text() -> None:
    schema = arrow_schema_for({"properties": {"a": {"type": "object"}, "b": {},
                                              "c": {"type": "integer"}}}, json_columns=["a"])
    assert [json_kind(f) for f in schema] == [JSON_TEXT, VARIANT, None]
    assert variant_columns(schema) == ["b"]
    assert column_type_label({"type": "object"}, json_text=True) == "string (JSON text)"


def test_json_columns_must_name_nested_or_untyped_columns() -> None:
    schema = {"properties": {"a": {"type": "object", "properties": {"x": {}}},
                             "n": {"type": "integer"}, "any": {}}}
    assert json_columns_problem(schema, ["a", "any"]) is None
    assert "no column 'z'" in (json_columns_problem(schema, ["z"]) or "")
    assert "'n' is a integer" in (json_columns_problem(schema, ["n"]) or "")


def test_dict_values_become_compact_json_text_with_their_key_order() -> None:
    assert to_json_text({"z": 1, "a": [1.5, "é"]}) == '{"z":1,"a":[1.5,"é"]}'
    assert to_json_text("text") == '"text"'  # a string value is a JSON string
    assert to_json_text(JsonText('{"b": 1.50}')) == '{"b": 1.50}'  # the source's own text
    with pytest.raises(ValueError):
        to_json_text(float("nan"))


def test_records_and_batches_give_the_same_json_text() -> None:
    schema = arrow_schema_for({"properties": {"v": {}}})
    columns, notes = batch_from_records(
        [{"v": {"b": 2, "a": 1}}, {"v": "s"}, {"v": 3}, {"v": float("inf")}, {}], schema)
    assert columns[0].to_pylist() == ['{"b":2,"a":1}', '"s"', "3", None, None]
    assert [n["field"] for n in notes.to_lists()[3]] == ["v"]
    # A reader's string column is JSON text already; a struct column is serialized.
    text = pa.record_batch({"v": pa.array(['{"b": 2,  "a": 1}', None])})
    assert conform_batch(text, schema)[0][0].to_pylist() == ['{"b": 2,  "a": 1}', None]
    struct = pa.record_batch({"v": pa.array([{"b": 2, "a": 1}])})
    assert conform_batch(struct, schema)[0][0].to_pylist() == ['{"b":2,"a":1}']
