"""CSV read in bulk gives the per-record path's rows, notes and rejects, for generated files.

Differential: hypothesis writes CSV files (a header, a BOM now and then, ``\\n``
or ``\\r\\n``, three delimiters, quoted fields holding the delimiter, quotes and
newlines, empty fields beside empty quoted strings, unicode, integers past
int64, floats in exponent form, NaN and infinities, booleans in every spelling
the per-record path takes, ISO dates and date-times, text that pyarrow's
defaults took for null, rows with too few or too many fields).  The file goes
through :func:`read_csv` (pyarrow's reader) typed as the engine types a batch
(:func:`conform_batch`); the reference is the record the generator meant (checked
against Python's :mod:`csv` module) typed one record at a time as dict records are
(:func:`batch_from_records`), and a ragged row a reject with its reason.  Every
record number has the same values, nulls and notes either way, so a bad row
never shifts the others.
"""

from __future__ import annotations

import csv
import io
from dataclasses import dataclass
from typing import Any

import pyarrow as pa
from hypothesis import example, given
from hypothesis import strategies as st

from headwater.connectors.object_storage._config import CsvFormat
from headwater.connectors.object_storage._formats import (
    KEY_COLUMN,
    RECORD_COLUMN,
    ReadPosition,
    read_csv,
    reject_batch,
)
from headwater.connectors.object_storage._inference import (
    _refined,
    _sample_csv,
    infer_json_schema,
)
from headwater.table_schema import arrow_schema_for, batch_from_records, conform_batch
from tests.unit.connectors._json_cases import column_values, comparable, differential

KEY = "folder/a.csv"

_INTS = st.integers(-(2**70), 2**70).map(str)
_FLOATS = st.one_of(st.floats(allow_nan=False).map(lambda x: f"{x:e}"),
                    st.floats(allow_nan=False).map(repr),
                    st.sampled_from(["nan", "NaN", "-nan", "+NaN", "inf", "-inf", "-0.0", "1E5",
                                     "1e-320"]))
_BOOLS = st.sampled_from(["true", "false", "True", "FALSE", "1", "0"])
_DATES = st.dates().map(lambda d: d.isoformat())
_DATE_TIMES = st.tuples(st.datetimes(), st.sampled_from(["", "Z", "+05:30"])).map(
    lambda t: t[0].isoformat() + t[1])
_TEXT = st.one_of(st.text(st.characters(blacklist_categories=["Cs"], blacklist_characters="\0")),
                  st.sampled_from(["NA", "N/A", "null", "NULL", "None", "nan", "#N/A", ",", '"',
                                   "a\nb", "a\r\nb", " x "]))
#: Column kinds: the declared property and the text of its values.
KINDS: dict[str, tuple[dict[str, Any], st.SearchStrategy[str]]] = {
    "int": ({"type": "integer"}, _INTS),
    "num": ({"type": "number"}, _FLOATS),
    "bool": ({"type": "boolean"}, _BOOLS),
    "date": ({"type": "string", "format": "date"}, _DATES),
    "at": ({"type": "string", "format": "date-time"}, _DATE_TIMES),
    "text": ({"type": "string"}, _TEXT),
}


@dataclass(frozen=True)
class Cell:
    """One field: its text, and whether it is written quoted (an empty unquoted field
    is null, an empty quoted one the empty string)."""

    text: str
    quoted: bool


@dataclass
class CsvCase:
    columns: list[str]
    rows: list[list[Cell]]
    delimiter: str
    newline: str
    bom: bool

    def data(self) -> bytes:
        lines = [self.delimiter.join(self.columns)]
        for row in self.rows:
            lines.append(self.delimiter.join(
                '"' + c.text.replace('"', '""') + '"' if c.quoted else c.text for c in row))
        text = "".join(line + self.newline for line in lines)
        return ("\ufeff" if self.bom else "").encode() + text.encode("utf-8")


@st.composite
def csv_cases(draw: st.DrawFn) -> CsvCase:
    kinds = draw(st.lists(st.sampled_from(sorted(KINDS)), min_size=1, max_size=4))
    columns = [f"{kind}{i}" for i, kind in enumerate(kinds)]
    delimiter = draw(st.sampled_from([",", ";", "\t"]))
    rows = []
    for _ in range(draw(st.integers(0, 8))):
        row = []
        for kind in kinds:
            values = st.one_of(KINDS[kind][1], _TEXT) if draw(st.integers(0, 9)) == 0 \
                else KINDS[kind][1]
            text = draw(st.none() | values)
            if text is None:
                row.append(Cell("", quoted=False))
                continue
            must = text == "" or any(c in text for c in (delimiter, '"', "\r", "\n")) \
                or text != text.strip() or text.startswith("\ufeff")
            row.append(Cell(text, quoted=must or draw(st.booleans())))
        roll = draw(st.integers(0, 11))
        if roll == 0:
            row.append(Cell(draw(_INTS), quoted=False))  # one field too many
        elif roll == 1 and len(row) > 1:
            row.pop()  # one too few
        if len(row) == 1 and not row[0].text and not row[0].quoted:
            row[0] = Cell("", quoted=True)  # a blank line is no record
        rows.append(row)
    return CsvCase(columns, rows, delimiter, draw(st.sampled_from(["\n", "\r\n"])),
                   draw(st.booleans()))


def _landed(columns: list[pa.Array], notes: Any, target: pa.Schema,
            ragged: bool = False) -> list[tuple[int, Any, list[tuple[str, str]]]]:
    assert [c.type for c in columns] == target.types
    table = pa.Table.from_arrays([pa.array(column_values(c)) if len(c) else c
                                  for c in columns], names=target.names)
    out = []
    for values, row_notes in zip(table.to_pylist(), notes.to_lists(), strict=True):
        found = sorted((n["field"], n["reason"]) for n in row_notes)
        out.append((values[RECORD_COLUMN], comparable(values), found))
    return out


def declared(case: CsvCase) -> dict[str, Any]:
    """The stream schema declaring each column's kind."""
    return infer_json_schema(pa.schema([]), {
        name: KINDS[name.rstrip("0123456789")][0] for name in case.columns})


def inferred(case: CsvCase) -> dict[str, Any]:
    """The stream schema a sync infers from the object (as ``_sample_object`` does)."""
    fmt = CsvFormat(type="csv", delimiter=case.delimiter, newlines_in_values=True)
    return infer_json_schema(_refined(_sample_csv(io.BytesIO(case.data()), fmt, 1000)), None)


def check(case: CsvCase, json_schema: dict[str, Any]) -> None:
    data = case.data()
    # The generator's records are what Python's csv module reads from the text.
    text = data.decode("utf-8").removeprefix("\ufeff")
    parsed = list(csv.reader(io.StringIO(text, newline=""), delimiter=case.delimiter))
    assert parsed == [case.columns] + [[c.text for c in row] for row in case.rows]

    target = arrow_schema_for(json_schema)
    data_schema = pa.schema([f for f in target if f.name not in (KEY_COLUMN, RECORD_COLUMN)])
    fmt = CsvFormat(type="csv", delimiter=case.delimiter, newlines_in_values=True)
    bulk = []
    for item in read_csv(io.BytesIO(data), KEY, data_schema, fmt, ReadPosition()):
        assert isinstance(item, pa.RecordBatch)
        bulk += _landed(*conform_batch(item, target), target)

    want = []
    for number, row in enumerate(case.rows):
        if len(row) != len(case.columns):
            reason = f"expected {len(case.columns)} columns, got {len(row)} (line {number + 2})"
            batch = reject_batch(KEY, [(number, reason, "")])
            want += _landed(*conform_batch(batch, target), target)
            continue
        record: dict[str, Any] = {name: None if not c.text and not c.quoted else c.text
                                  for name, c in zip(case.columns, row, strict=True)}
        record[KEY_COLUMN], record[RECORD_COLUMN] = KEY, number
        want += _landed(*batch_from_records([record], target), target)
    assert sorted(bulk, key=lambda r: r[0]) == want


@differential(300)
@given(csv_cases())
@example(CsvCase(["text0", "int1"], [[Cell("NA", False), Cell("1", False)],
                                     [Cell("x", False)],
                                     [Cell("", True), Cell("9223372036854775808", False)],
                                     [Cell("a\r\nb", True), Cell("2", False)]],
                 ",", "\r\n", True))
def test_csv_reads_as_records_read_one_by_one(case: CsvCase) -> None:
    check(case, declared(case))


@differential(200)
@given(csv_cases())
def test_inferred_schemas_read_alike(case: CsvCase) -> None:
    check(case, inferred(case))


def test_integers_past_int64_are_inferred_as_decimals_not_doubles() -> None:
    """pyarrow infers a double for them, which rounds 9223372036854775809 (found
    writing the generator); text past 38 digits stays text."""
    case = CsvCase(["a", "b"], [[Cell("9223372036854775809", False), Cell("1" * 40, False)],
                                [Cell("-1", True), Cell("2", False)]], ",", "\n", False)
    properties = inferred(case)["properties"]
    assert properties["a"] == {"type": ["null", "number"], "format": "decimal",
                               "precision": 38, "scale": 0}
    assert properties["b"] == {"type": ["null", "string"]}
    check(case, inferred(case))
