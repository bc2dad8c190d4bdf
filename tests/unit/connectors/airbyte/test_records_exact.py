"""RECORD lines land as their text says, decoded in bulk or record by record (issue 35).

The differential test holds :class:`RecordDecoder` to the per-record path; this one
holds both to a reference of their own (:mod:`tests.unit.connectors._exact_cases`):
decimals beyond a float's digits, integers past 2**53 and int64's edges,
date-times and dates at the calendar's edges, the values computed from the
generated text.  Each block goes the per-record way on purpose (a value no bulk
decoder takes, or a stream with decimals, which is never decoded in bulk) and,
without the misfit, the bulk way where the stream allows it; either is typed as
the engine types what a source yields.
"""

from __future__ import annotations

import json
from decimal import Decimal
from typing import Any

import pyarrow as pa
from hypothesis import given
from hypothesis import strategies as st

from headwater.connectors.airbyte._process import RecordBlock
from headwater.connectors.airbyte._records import RecordDecoder
from headwater.connectors.airbyte._source import block_items
from headwater.table_schema import arrow_schema_for, batch_from_records, conform_batch
from tests.unit.connectors._exact_cases import (
    WITH_DECIMALS,
    WITHOUT_DECIMALS,
    Record,
    assert_lands,
    records,
    unfit,
)
from tests.unit.connectors._json_cases import differential

STREAM = "s"


def record_line(data: str) -> str:
    return ('{"type":"RECORD","record":{"stream":' + json.dumps(STREAM) + ',"data":' + data
            + ',"emitted_at":1700000000000}}\n')


def landed(columns: dict[str, Any], rows: list[Record]) -> tuple[list[Any], bool]:
    """The block's rows as the engine types them, and whether it was decoded in bulk."""
    json_schema = {"type": "object", "properties": columns}
    schema = arrow_schema_for(json_schema)
    items = list(block_items(RecordDecoder(STREAM, json_schema),
                             RecordBlock([record_line(row.text) for row in rows], "test")))
    out: list[Any] = []
    for item in items:
        columns_, notes = (conform_batch(item, schema) if isinstance(item, pa.RecordBatch)
                           else batch_from_records([item], schema))
        table = pa.Table.from_arrays(columns_, schema=schema)
        out.extend(zip(table.to_pylist(), notes.to_lists(), strict=True))
    return out, any(isinstance(item, pa.RecordBatch) for item in items)


@differential(60)
@given(st.data())
def test_record_lines_land_their_text_in_bulk_and_per_record(data: st.DataObject) -> None:
    columns = data.draw(st.sampled_from([WITH_DECIMALS, WITHOUT_DECIMALS]))
    rows = [data.draw(records(columns, number)) for number in range(data.draw(st.integers(1, 8)))]
    broken = list(rows)
    broken.insert(data.draw(st.integers(0, len(rows))), data.draw(unfit(1000)))
    got, in_bulk = landed(columns, broken)
    assert not in_bulk
    assert_lands(columns, got, broken)
    got, in_bulk = landed(columns, rows)
    assert_lands(columns, got, rows)


def test_a_stream_with_decimals_lands_them_exactly() -> None:
    """Issue 35's object as RECORD lines: each stream with a decimal is read record by
    record, where json.loads made floats of them (12345678901234567890.123456789012345678
    landed as ...567000.000..., the valid extreme was noted as -1e+20)."""
    columns = {"d": {"type": "number", "format": "decimal", "precision": 38, "scale": 18},
               "i": {"type": "integer"}}
    rows = [Record('{"d":12345678901234567890.123456789012345678,"i":9007199254740993.0}',
                   {}, set()),
            Record('{"d":-99999999999999999999.999999999999999999,"i":-9223372036854775808}',
                   {}, set()),
            Record('{"d":1.0000000000000000001,"i":9223372036854775808}', {}, set())]
    got, _ = landed(columns, rows)
    assert [(row["d"], row["i"]) for row, _ in got] == [
        (Decimal("12345678901234567890.123456789012345678"), 9007199254740993),
        (Decimal("-99999999999999999999.999999999999999999"), -(2**63)), (None, None)]
    assert [sorted((n["field"], n["value"]) for n in notes) for _, notes in got] == [
        [], [], [("d", "1.0000000000000000001"), ("i", "9223372036854775808")]]
