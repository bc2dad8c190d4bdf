"""Dict records typed in bulk land exactly as the value-by-value path typed them.

Differential: generated schemas and records (good values, misfits, missing keys,
nulls, huge ints, NaN, date-times of every shape) through
:func:`headwater.table_schema.batch_from_records` and through the reference kept
from before the bulk path (``_records_reference``): same types, values, nulls and
notes, note for note.
"""

from __future__ import annotations

import base64
import decimal
import math
from typing import Any

import pyarrow as pa
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from headwater.table_schema import (
    JSON_TEXT,
    LOCAL_TIMESTAMP,
    LOGICAL_KEY,
    UTC_TIMESTAMP,
    VARIANT,
    batch_from_plain_records,
    batch_from_records,
)
from tests.unit.table_schema._records_reference import batch_from_records as reference

# ---------------------------------------------------------------- values

_YEARS = st.sampled_from(["0001", "0999", "1000", "1970", "2024", "8999", "9999", "0000"])
_TWO = st.integers(0, 61).map(lambda n: f"{n:02d}")
_FRACTIONS = st.sampled_from(["", ".5", ".123456", ".1234567", ".", ".12"])
_OFFSETS = st.sampled_from(["", "Z", "z", "+05:30", "-00:00", "+23:59", "+24:00", "+0530",
                            "-08:00", "+5:30"])


@st.composite
def iso_date_times(draw: st.DrawFn) -> str:
    """ISO 8601 text, most of it well formed, some of it at or past the edges."""
    month = draw(st.sampled_from(["01", "02", "12", "13", "00"]) | _TWO)
    day = draw(st.sampled_from(["01", "28", "29", "30", "31", "32"]))
    text = (f"{draw(_YEARS)}-{month}-{day}{draw(st.sampled_from(['T', ' ', 't']))}"
            f"{draw(_TWO)}:{draw(_TWO)}:{draw(_TWO)}{draw(_FRACTIONS)}{draw(_OFFSETS)}")
    if draw(st.booleans()):  # most values are well formed
        fraction = draw(st.sampled_from(["", ".5", ".123456"]))
        offset = draw(st.sampled_from(["", "Z", "+05:30", "-08:00"]))
        text = f"2024-03-{day[:1]}1T10:{draw(st.sampled_from(['00', '59']))}:00{fraction}{offset}"
    return draw(st.sampled_from([text, text, text, f" {text}", f"{text} ", text[:10],
                                 text[:16]]))


@st.composite
def tidy_date_times(draw: st.DrawFn) -> str:
    """ISO 8601 text as APIs write it (offset or none, fractions), a day past its
    month now and then: the pages the bulk path takes whole."""
    day = draw(st.integers(1, 31))
    edge = draw(st.integers(0, 9)) == 0  # a year at the edge of what Python holds
    year = draw(st.sampled_from([0, 1, 999, 9999]) if edge else st.integers(1000, 8999))
    text = (f"{year:04d}-{draw(st.integers(1, 12)):02d}-"
            f"{day if day < 29 or draw(st.integers(0, 3)) == 0 else 28:02d}"
            f"{draw(st.sampled_from(['T', ' ']))}{draw(st.integers(0, 23)):02d}:"
            f"{draw(st.integers(0, 59)):02d}:{draw(st.integers(0, 59)):02d}"
            f"{draw(st.sampled_from(['', '.5', '.25', '.123456', '.000001']))}")
    offset = draw(st.sampled_from(["", "Z", "+05:30", "-08:00", "+23:59", "-00:00"]))
    return text + offset


WILD = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-2**65, 2**65),
    st.sampled_from([0, 1, -1, 2**53 + 1, 2**63 - 1, 2**63, -2**63, 2**64]),
    st.floats(allow_nan=True, allow_infinity=True),
    st.sampled_from([math.nan, 1.5, 2.0, -0.0]),
    st.text(max_size=6),
    st.sampled_from(["12", "1.5", "nan", "NaN", "true", "0", "aGk=", "[1, 2]", '{"a": 1}',
                     "not base64!", "1e400"]),
    iso_date_times(),
    st.lists(st.integers(-3, 3) | st.text(max_size=2) | st.none(), max_size=3),
    st.dictionaries(st.sampled_from(["a", "b", "c", "x"]), st.integers(-3, 3) | st.text(max_size=2)
                    | st.none(), max_size=3),
)

#: Base64 text (valid, and now and then not: bad padding, not the alphabet, not
#: ASCII) and bytes as they are (Avro's, fastavro's dicts).
BASE64 = (st.binary(max_size=6).map(lambda b: base64.b64encode(b).decode("ascii"))
          | st.sampled_from(["aGk=", "", "AAEC", "aGk", "aGk==", "a", "é", "aGk=\n", "====",
                             b"\x00\xff", b""]))

# Each kind of column: its Arrow field and the values that fit it.
KINDS: dict[str, tuple[pa.Field, st.SearchStrategy[Any]]] = {
    "int": (pa.field("_", pa.int64()), st.integers(-2**40, 2**40)),
    "float": (pa.field("_", pa.float64()), st.floats() | st.integers(-10**6, 10**6)),
    "bool": (pa.field("_", pa.bool_()), st.booleans()),
    "string": (pa.field("_", pa.string()), st.text(max_size=8)),
    "utc": (pa.field("_", UTC_TIMESTAMP), iso_date_times()),
    "local": (pa.field("_", LOCAL_TIMESTAMP), iso_date_times()),
    "date": (pa.field("_", pa.date32()), iso_date_times()),
    "decimal": (pa.field("_", pa.decimal128(10, 2)),
                st.decimals(-10**6, 10**6, places=2, allow_nan=False).map(str)
                | st.integers(-10**6, 10**6)),
    "binary": (pa.field("_", pa.binary()), BASE64),
    "binaries": (pa.field("_", pa.list_(pa.binary())), st.lists(BASE64 | st.none(),
                                                                max_size=3)),
    "struct_of_binary": (pa.field("_", pa.struct([("b", pa.binary())])),
                         st.fixed_dictionaries({}, optional={"b": BASE64 | WILD})),
    "struct": (pa.field("_", pa.struct([("a", pa.int64()), ("b", pa.string()),
                                        ("c", UTC_TIMESTAMP)])),
               st.fixed_dictionaries({}, optional={"a": st.integers(-5, 5) | WILD,
                                                   "b": st.text(max_size=3),
                                                   "c": iso_date_times(), "x": WILD})),
    "strings": (pa.field("_", pa.list_(pa.string())), st.lists(st.text(max_size=3) | st.none(),
                                                                max_size=3)),
    "structs": (pa.field("_", pa.list_(pa.struct([("x", pa.int64())]))),
                st.lists(st.fixed_dictionaries({}, optional={"x": st.integers(-3, 3) | WILD}),
                         max_size=3)),
    "ints_of_ints": (pa.field("_", pa.list_(pa.list_(pa.int64()))),
                     st.lists(st.lists(st.integers(-3, 3), max_size=2), max_size=2)),
    "variant": (pa.field("_", pa.string(), metadata={LOGICAL_KEY: VARIANT}), WILD),
    "json_text": (pa.field("_", pa.string(), metadata={LOGICAL_KEY: JSON_TEXT}), WILD),
}


@st.composite
def cases(draw: st.DrawFn) -> tuple[pa.Schema, list[Any]]:
    """A schema of a few kinds of columns and a page of records for it."""
    kinds = draw(st.lists(st.sampled_from(sorted(KINDS)), min_size=1, max_size=5))
    fields = [KINDS[kind][0].with_name(f"c{i}") for i, kind in enumerate(kinds)]
    wild_share = draw(st.sampled_from([0.0, 0.0, 0.0, 0.05, 0.5]))
    tidy = draw(st.booleans())  # date-times as APIs write them, or at and past the edges


    def value(kind: str) -> Any:
        if wild_share and draw(st.floats(0, 1)) < wild_share:
            return draw(WILD)
        fitting = (tidy_date_times() if tidy and kind in ("utc", "local", "date")
                   else KINDS[kind][1])
        return draw(st.none() | fitting if draw(st.booleans()) else fitting)

    records: list[Any] = []
    for _ in range(draw(st.integers(1, 12))):
        record = {f.name: value(kind) for f, kind in zip(fields, kinds, strict=True)
                  if draw(st.integers(0, 9)) > 0}  # a key is sometimes missing
        if draw(st.integers(0, 19)) == 0:
            record["unknown"] = draw(WILD)  # outside the schema: noted
        records.append(record)
    return pa.schema(fields), records


def _comparable(value: Any) -> Any:
    """A value with NaN made equal to itself (and -0.0 told from 0.0)."""
    if isinstance(value, float):
        return ("float", repr(value))
    if isinstance(value, decimal.Decimal):
        return ("decimal", str(value))
    if isinstance(value, list):
        return [_comparable(item) for item in value]
    if isinstance(value, dict):
        return {key: _comparable(item) for key, item in value.items()}
    return value


def _typed(function: Any, schema: pa.Schema, records: list[Any]) -> tuple[Any, ...]:
    columns, notes = function([dict(r) for r in records], schema)
    return ([c.type for c in columns], [_comparable(_values(c)) for c in columns],
            notes.to_lists())


def _values(column: pa.Array) -> list[Any]:
    """A column's values; a date-time's as its integer where Python's datetime has no
    room for it (an int taken as microseconds may be outside years 1-9999)."""
    if pa.types.is_timestamp(column.type):
        return [column.type, *column.view(pa.int64()).to_pylist()]
    return column.to_pylist()


@settings(max_examples=200, deadline=None, derandomize=True, database=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(cases())
@example((pa.schema([("t", UTC_TIMESTAMP), ("n", pa.int64())]),
          [{"t": "2024-01-01T10:00:00Z", "n": 1}, {"t": "2024-01-01 10:00:00.5", "n": "x"},
           {"t": "2024-02-30T00:00:00Z"}]))
@example((pa.schema([("t", LOCAL_TIMESTAMP), ("d", pa.date32()), ("f", pa.float64())]),
          [{"t": "2024-01-01T10:00:00+05:30", "d": "2024-01-01T10:00:00Z", "f": 2**53 + 1},
           {"t": "2024-01-01T10:00:00", "d": "2024-01-01", "f": 3}]))
@example((pa.schema([("t", UTC_TIMESTAMP), ("f", pa.float64())]),
          [{"t": "0000-01-01T10:00:00Z", "f": math.nan}, {"t": "9999-12-31T23:00:00-05:00"}]))
@example((pa.schema([("d", pa.date32())]), [{"d": "2024-01-01"}, {"d": "0000-01-01T10:00:00"}]))
@example((pa.schema([("t", UTC_TIMESTAMP), ("l", LOCAL_TIMESTAMP), ("d", pa.date32())]),
          [{"t": 1700000000, "l": 1.5, "d": 5}, {"t": -62135596800, "l": None, "d": -719163}]))
def test_bulk_typing_equals_the_value_by_value_path(case: tuple[pa.Schema, list[Any]]) -> None:
    schema, records = case
    expected = _typed(reference, schema, records)
    assert _typed(batch_from_records, schema, records) == expected
    if all(key in schema.names for record in records for key in record):
        # Plain records, as an HTTP page hands them over (records_batch checked them).
        assert _typed(batch_from_plain_records, schema, records) == expected


DATE_TIMES = pa.schema([("utc", UTC_TIMESTAMP), ("local", LOCAL_TIMESTAMP), ("day", pa.date32())])


@settings(max_examples=200, deadline=None, derandomize=True, database=None,
          suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.fixed_dictionaries({}, optional={
    name: tidy_date_times() | st.none() for name in DATE_TIMES.names}), min_size=1, max_size=8))
def test_pages_of_date_times_equal_the_value_by_value_path(records: list[Any]) -> None:
    # Pages the bulk path takes whole (with a day or a year past the edge now and then).
    assert _typed(batch_from_records, DATE_TIMES, records) == \
        _typed(reference, DATE_TIMES, records)


def test_a_page_of_date_times_and_numbers_is_typed_without_a_note() -> None:
    schema = pa.schema([("id", pa.int64()), ("at", UTC_TIMESTAMP), ("day", pa.date32()),
                        ("score", pa.float64())])
    records = [{"id": i, "at": f"2024-01-01T10:00:0{i % 10}Z", "day": "2024-01-02",
                "score": i} for i in range(100)]
    columns, notes = batch_from_records(records, schema)
    assert not notes.any()
    assert [c.type for c in columns] == list(schema.types)
    assert str(columns[1][7].as_py()) == "2024-01-01 10:00:07+00:00"


def test_a_list_where_a_struct_belongs_is_a_noted_misfit_not_a_crash() -> None:
    """Found by the differential test (seed 184801): both paths raised AttributeError."""
    target = pa.struct([("a", pa.int64()), ("b", pa.string())])
    schema = pa.schema([("c0", target)])
    cases = [([{}, {"c0": None}, {"c0": []}], [None, None, None], [[], [], ["c0"]]),
             ([{"c0": []}, {"c0": [1]}, {"c0": {"a": 1, "b": "x"}}],
              [None, None, {"a": 1, "b": "x"}], [["c0"], ["c0"], []])]
    for records, values, noted in cases:
        columns, notes = batch_from_records(records, schema)
        assert columns[0].to_pylist() == values
        assert [[note["field"] for note in notes[row]] for row in range(3)] == noted


def test_date_time_text_only_arrow_reads_is_a_noted_misfit_inside_a_struct_too() -> None:
    """Found by the differential test (seed 206087): Arrow's cast read year 0, which no
    Python datetime (nor Spark) holds; the value-by-value path notes it."""
    target = pa.struct([("c", pa.timestamp("us", tz="UTC")), ("d", pa.date32())])
    schema = pa.schema([("c1", target)])
    records = [{"c1": {"c": "0000-01-01T00:00:00", "d": "0000-01-01"}},
               {"c1": {"c": "2024-02-03T04:05:06Z", "d": "2024-02-03"}}]
    columns, notes = batch_from_records(records, schema)
    rows = columns[0].to_pylist()
    assert rows[0] == {"c": None, "d": None}
    assert str(rows[1]["c"]) == "2024-02-03 04:05:06+00:00" and str(rows[1]["d"]) == "2024-02-03"
    assert sorted(note["field"] for note in notes[0]) == ["c1.c", "c1.d"]
    assert not notes[1]
