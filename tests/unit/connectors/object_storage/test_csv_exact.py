"""CSV lands as its text says, for every annotated type a CSV column has.

The CSV differential holds the reader to dict records typed by the engine, a
path of ours that shared the reader's fault (base64 text landed as its own
bytes on both).  Here the reference is :mod:`tests.unit.connectors._exact_cases`,
computed from the generated values alone (bytes as generated, decimals exactly,
date-times from their parts): every file goes through the source's CSV reader
and the engine's task code (pyarrow's reader, Arrow's casts, base64 decoded in
bulk), and the same records typed value by value
(``batch_from_records(by_value=True)``), each held to the reference.
"""

from __future__ import annotations

import json
import tempfile
from pathlib import Path
from typing import Any

import pyarrow as pa
from hypothesis import given
from hypothesis import strategies as st

from headwater.table_schema import arrow_schema_for, batch_from_records
from tests.unit.connectors._exact_cases import (
    BASE64,
    DATE_TIME,
    LOCAL,
    TIME,
    WIDE,
    Record,
    assert_lands,
    records,
)
from tests.unit.connectors._json_cases import differential
from tests.unit.connectors.object_storage.conftest import read_all, source, write

#: The annotated types a CSV column has (text of each): no lists, no objects.
COLUMNS: dict[str, Any] = {
    "id": {"type": "integer"}, "i": {"type": "integer"}, "d": WIDE, "t": DATE_TIME,
    "l": LOCAL, "day": {"type": "string", "format": "date"}, "b": BASE64, "tm": TIME,
}


def texts(record: Record) -> dict[str, str | None]:
    """Each column's text in the record (numbers as their literal), None where absent."""
    parsed = json.loads(record.text, parse_float=str, parse_int=str)
    return {name: parsed.get(name) for name in COLUMNS}


def csv_of(rows: list[Record]) -> bytes:
    """A header, then every field quoted (an empty quoted field is the empty string),
    a missing one an empty unquoted field (null)."""
    lines = [",".join(COLUMNS)]
    for row in rows:
        lines.append(",".join("" if value is None else '"' + value.replace('"', '""') + '"'
                              for value in texts(row).values()))
    return ("\n".join(lines) + "\n").encode()


def landed(block: bytes) -> list[tuple[dict[str, Any], Any]]:
    with tempfile.TemporaryDirectory(prefix="hw-csv-exact-") as folder:
        write(Path(folder), "a.csv", block)
        stream = source(folder, globs=["*.csv"],
                        format={"type": "csv", "newlines_in_values": True},
                        schema=COLUMNS).streams()[0]
        rows = read_all(stream).sort_by("_source_record").to_pylist()
    return [(row, row["_hw_notes"]) for row in rows]


def by_value(rows: list[Record]) -> list[tuple[dict[str, Any], Any]]:
    schema = arrow_schema_for({"properties": COLUMNS})
    arrays, notes = batch_from_records([texts(row) for row in rows], schema, by_value=True)
    table = pa.Table.from_arrays(arrays, schema=schema)
    return [(row, found or None) for row, found in
            zip(table.to_pylist(), notes.to_lists(), strict=True)]


@differential(40)
@given(st.data())
def test_csv_lands_the_reference_in_bulk_and_value_by_value(data: st.DataObject) -> None:
    # readable: no epoch numbers (in CSV text they are no date-time), integers in int64.
    rows = [data.draw(records(COLUMNS, number, float_written=False, readable=True))
            for number in range(data.draw(st.integers(1, 8)))]
    assert_lands(COLUMNS, landed(csv_of(rows)), list(rows))
    assert_lands(COLUMNS, by_value(rows), list(rows))
