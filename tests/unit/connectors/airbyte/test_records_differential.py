"""RECORD lines decoded in bulk give the per-record path's table and notes, for any lines.

Differential: generated stream schemas (typed, nested, open) and RECORD lines (good
values, wrong types, huge and odd numbers, date-times of every shape, missing,
extra and repeated keys, lines of other streams, broken lines) go through
:class:`RecordDecoder` and the engine's cast of its batch, and through the path
every refused block takes (:meth:`RecordBlock.records`, then the engine's typing
of dicts, and the value-by-value reference kept in ``tests/unit/table_schema``):
where the decoder does not refuse the block, column types, values (floats and
date-times exactly), nulls and notes are the same.
"""

from __future__ import annotations

import json
import subprocess
import sys
from typing import Any

import pyarrow as pa
import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from headwater.connectors.airbyte._process import RECORD_PREFIX, RecordBlock
from headwater.connectors.airbyte._records import RecordDecoder
from headwater.errors import ConnectorError
from headwater.table_schema import (
    VARIANT,
    arrow_schema_for,
    batch_from_records,
    conform_batch,
    json_kind,
)
from tests.unit.connectors._json_cases import (
    CORRUPT,
    Pairs,
    Raw,
    column_values,
    comparable,
    differential,
    json_schemas,
    records_for,
    tidy_date_times,
    tidy_dates,
    to_json,
)
from tests.unit.table_schema._records_reference import batch_from_records as reference

STREAM = "s"


def record_line(data: Any, stream: str = STREAM) -> str:
    return ('{"type":"RECORD","record":{"stream":' + json.dumps(stream) + ',"data":'
            + to_json(data) + ',"emitted_at":1700000000000}}\n')


@st.composite
def blocks(draw: st.DrawFn) -> tuple[dict[str, Any], list[str]]:
    """A stream schema and a block of RECORD lines for it (now and then one of another
    stream, one whose data is not an object, or a broken one)."""
    json_schema = draw(json_schemas())
    lines = []
    for record in draw(records_for(json_schema)):
        roll = draw(st.integers(0, 39))
        if roll == 0:  # broken, but starting like a RECORD (what goes into a block)
            line = record_line(record)
            lines.append(draw(st.sampled_from([
                line[:draw(st.integers(len(RECORD_PREFIX), len(line) - 2))],
                RECORD_PREFIX + draw(CORRUPT), line[:-1] + draw(CORRUPT), line[:-1] * 2,
                line[:-1] + " null"])) + "\n")
        elif roll == 1:
            lines.append(record_line(record, stream="other"))
        elif roll == 2:
            lines.append(record_line(draw(st.sampled_from([5, "x", [1], None]))))
        else:
            lines.append(record_line(record))
    return json_schema, lines


def outcome(schema: pa.Schema, columns: list[pa.Array], notes: Any) -> tuple[Any, ...]:
    """Types, values and notes (each row's notes as a sorted list: the per-record path
    notes keys outside the schema in a set's order).  A VARIANT column's JSON text is
    compared as the value it holds: its spacing, escapes and key order are not kept
    (Spark's ``parse_json`` keeps none of them)."""
    values = [comparable([None if text is None else json.loads(text)
                           for text in column.to_pylist()]
                          if json_kind(field) == VARIANT else column_values(column))
              for field, column in zip(schema, columns, strict=True)]
    return ([c.type for c in columns], values,
            [sorted(row, key=lambda n: (n["field"], n["reason"], n["value"]))
             for row in notes.to_lists()])


def per_record(lines: list[str], schema: pa.Schema) -> tuple[Any, ...] | None:
    """The path of a refused block; None when it fails the read (a broken line)."""
    try:
        records = [r.data for r in RecordBlock(lines, "test").records() if r.stream == STREAM]
    except ConnectorError:
        return None
    engine = outcome(schema, *batch_from_records(records, schema))
    assert engine == outcome(schema, *reference(records, schema)), \
        "the engine's typing of dicts differs from the value-by-value reference"
    return engine


def check(json_schema: dict[str, Any], lines: list[str]) -> None:
    schema = arrow_schema_for(json_schema)
    batch = RecordDecoder(STREAM, json_schema).decode(lines)
    expected = per_record(lines, schema)
    if batch is None:
        return  # refused: the block goes the per-record way, which is `expected`
    assert expected is not None, "decoded in bulk a block the per-record path refuses"
    assert outcome(schema, *conform_batch(batch, schema)) == expected


@differential(300)
@given(blocks())
@example(({"properties": {"n": {"type": "number"}, "i": {"type": "integer"}}},
          [record_line({"n": Raw("1.0"), "i": 2**63}), record_line({"n": Raw("-0.0")})]))
@example(({"properties": {"t": {"type": "string", "format": "date-time"},
                          "d": {"type": "string", "format": "date"}}},
          [record_line({"t": "2024-02-30T00:00:00Z", "d": "2024-01-01T10:00:00"}),
           record_line({"t": "0001-01-01T00:00:00.123456789+05:30", "d": "9999-12-31"})]))
@example(({"properties": {"o": {"type": "object", "properties": {"a": {"type": "integer"}}},
                          "any": {}}},
          [record_line(Pairs((("o", {"a": 1}), ("o", {"a": 2}), ("any", Raw("1.0")))))]))
def test_bulk_decoding_equals_the_per_record_path(case: tuple[dict[str, Any], list[str]]) -> None:
    check(*case)


@differential(150)
@given(st.data())
def test_tidy_blocks_are_decoded_in_bulk_and_equal(data: st.DataObject) -> None:
    """Blocks without misfits: what the decoder takes whole (so the test above is not
    only comparing refusals)."""
    json_schema = data.draw(json_schemas(dates_inside=False))
    rows = data.draw(records_for(json_schema, tidy=True))
    check(json_schema, [record_line(row) for row in rows])


#: One JSON type each: an open column or a key outside the schema the decoder may take.
ONE_TYPE = [st.integers(-10**6, 10**6), st.booleans(),
            st.text(max_size=4), st.sampled_from(["é", 'a"b', "\\", "\n", "😀", "\x7f", "x"]),
            tidy_date_times(), tidy_dates(), st.lists(st.integers(-3, 3), max_size=2),
            st.lists(st.text(max_size=2), max_size=2),
            st.fixed_dictionaries({"a": st.integers(-3, 3)}, optional={"b": st.text(max_size=2)})]


@differential(300)
@given(st.data())
def test_open_values_and_keys_outside_the_schema_equal(data: st.DataObject) -> None:
    """Open columns, fields outside the schema and undeclared nested keys of one JSON
    type each (so the decoder takes them), a missing one or a null now and then."""
    kinds = {name: data.draw(st.sampled_from(ONE_TYPE)) for name in ("any", "extra", "zz")}
    json_schema = {"properties": {"id": {"type": "integer"}, "any": {},
                                  "obj": {"type": "object",
                                          "properties": {"a": {"type": "integer"}}}}}
    rows = []
    for i in range(data.draw(st.integers(1, 6))):
        row: dict[str, Any] = {"id": i, "obj": {"a": i}}
        for name, kind in kinds.items():
            if data.draw(st.integers(0, 9)):
                value = data.draw(kind if data.draw(st.integers(0, 9)) else st.none())
                (row["obj"] if name == "zz" else row)[name] = value
        rows.append(row)
    check(json_schema, [record_line(row) for row in rows])


def test_an_inferred_list_with_leading_nulls_goes_the_per_record_way() -> None:
    """Found by the differential test: pyarrow's JSON reader makes an invalid array of
    an inferred list whose first items are null (a field outside the schema, or an
    undeclared nested key); reading it raised ArrowIndexError and failed the read."""
    json_schema = {"properties": {"id": {"type": "integer"}, "o": {
        "type": "object", "properties": {"a": {"type": "integer"}}}, "any": {}}}
    for row in ({"id": 1, "extra": [None, 1]}, {"id": 1, "o": {"a": 1, "b": [None, None, 2]}},
                {"id": 1, "any": [None, "x"]}, {"id": 1, "extra": [[None, None], [3]]}):
        lines = [record_line(row), record_line({"id": 2})]
        assert RecordDecoder(STREAM, json_schema).decode(lines) is None
        check(json_schema, lines)


def test_a_block_starting_with_null_is_refused_without_crashing() -> None:
    """pyarrow 26's JSON reader crashes the process (SIGSEGV) on a block whose first
    value is ``null``; a block that does not start with an object is refused."""
    script = ("from headwater.connectors.airbyte._records import RecordDecoder\n"
              "assert RecordDecoder('s', {'properties': {'a': {'type': 'integer'}}})"
              ".decode(['null\\n', '{}\\n']) is None\n")
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          check=False)
    assert done.returncode == 0, done.stderr[-2000:]


@pytest.mark.parametrize("rows", [
    pytest.param([{"n": {"zz": 2**63}}], id="an integer past int64"),
    pytest.param([{"n": {"zz": 1}}, {"n": {"zz": 1.5}}], id="an integer among doubles"),
    pytest.param([{"n": {"zz": {"p": 1}}}, {"n": {"zz": {"q": 2}}}], id="keys missing inside"),
    pytest.param([{"l": [{"a": 1, "zz": [None, "x"]}]}], id="a null inside, in a list"),
])
def test_undeclared_nested_keys_are_noted_as_per_record(rows: list[dict[str, Any]]) -> None:
    """Found by the differential test: a key outside an object's declared properties
    holding an integer past int64 was noted as Arrow's JSON reader read it
    (``9.223372036854776e+18``), the per-record path notes 9223372036854775808.
    (The others are typed by Arrow's inference either way: the same notes.)"""
    json_schema = {"properties": {"n": {"type": "object", "properties": {
        "a": {"type": "integer"}}}, "l": {"type": "array", "items": {
            "type": "object", "properties": {"a": {"type": "integer"}}}}}}
    check(json_schema, [record_line(row) for row in rows])
