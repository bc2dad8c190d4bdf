"""Generated JSON schemas and JSON text for the differential tests of bulk decoders.

A bulk decoder (Airbyte RECORD lines, JSON Lines objects) reads JSON *text*, so
the records are generated as text: a value is a Python value, or :class:`Raw`
(JSON text written as given: ``1.0``, ``-0.0``, ``1E400``, escapes) or
:class:`Pairs` (an object written key by key, so a key may repeat).  The
per-record paths parse the same text with ``json.loads``; comparing what both
make of it is the test.
"""

from __future__ import annotations

import datetime as dt
import decimal
import json
import math
import os
from dataclasses import dataclass
from typing import Any

import pyarrow as pa
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st

from headwater.table_schema import map_leaf_types


def differential(max_examples: int) -> settings:
    """The settings of a differential test: in CI the same examples every run
    (``derandomize``, no example database); with ``HEADWATER_RANDOM_EXAMPLES=1``
    ``--hypothesis-seed`` picks others (how the tests are run at many seeds)."""
    return settings(max_examples=max_examples, deadline=None, database=None,
                    derandomize=not os.environ.get("HEADWATER_RANDOM_EXAMPLES"),
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])


@dataclass(frozen=True)
class Raw:
    """JSON text written as it is."""

    text: str


@dataclass(frozen=True)
class Pairs:
    """An object written pair by pair (a key may appear twice: the last one wins in Python)."""

    items: tuple[tuple[str, Any], ...]


def to_json(value: Any) -> str:
    """``value`` as JSON text (compact, as connectors write it); Raw and Pairs as they say."""
    if isinstance(value, Raw):
        return value.text
    if isinstance(value, Pairs):
        return "{" + ",".join(f"{json.dumps(k)}:{to_json(v)}" for k, v in value.items) + "}"
    if isinstance(value, dict):
        return "{" + ",".join(f"{json.dumps(k)}:{to_json(v)}" for k, v in value.items()) + "}"
    if isinstance(value, list):
        return "[" + ",".join(to_json(v) for v in value) + "]"
    if isinstance(value, float) and not math.isfinite(value):
        return "1E400" if value > 0 else "-1E400"  # what a JSON writer has for them
    return json.dumps(value)


def comparable(value: Any) -> Any:
    """Floats by their repr (NaN equal to itself, -0.0 told from 0.0), date-times with
    their zone, decimals by their text."""
    if isinstance(value, float):
        return ("float", repr(value))
    if isinstance(value, decimal.Decimal):
        return ("decimal", str(value))
    if isinstance(value, dt.datetime):
        return ("datetime", value.isoformat())
    if isinstance(value, list):
        return [comparable(item) for item in value]
    if isinstance(value, dict):
        return {key: comparable(item) for key, item in value.items()}
    return value



def _as_numbers(kind: pa.DataType) -> pa.DataType:
    return map_leaf_types(kind, lambda leaf: pa.int64() if pa.types.is_timestamp(leaf)
                          else pa.int32() if pa.types.is_date32(leaf) else leaf)


def column_values(column: pa.Array) -> list[Any]:
    """A column's values, its date-times and dates (at any depth) as their numbers:
    a value Python's datetime has no room for (year 0, read from an integer taken as
    days or microseconds) is compared too."""
    return column.cast(_as_numbers(column.type)).to_pylist()


# ---------------------------------------------------------------------- values

_YEARS = st.sampled_from(["0001", "0000", "1969", "1970", "2024", "9999", "0999", "1000"])


@st.composite
def date_times(draw: st.DrawFn) -> str:
    """ISO 8601 text in many shapes: offsets, ``Z``, 0-9 fractional digits, the edge years,
    days past their month, a date alone, a leap second."""
    year = draw(_YEARS | st.integers(1000, 8999).map(lambda y: f"{y:04d}"))
    month = draw(st.sampled_from(["01", "02", "06", "12", "13", "00"]) | st.integers(1, 12).map(
        lambda m: f"{m:02d}"))
    day = draw(st.sampled_from(["01", "28", "29", "30", "31", "32", "00"])
               | st.integers(1, 28).map(lambda d: f"{d:02d}"))
    date = f"{year}-{month}-{day}"
    if draw(st.integers(0, 5)) == 0:
        return date  # a date alone, in a date-time column too
    hour = draw(st.sampled_from(["00", "23", "24", "12", "09"]))
    minute = draw(st.sampled_from(["00", "59", "60", "30"]))
    second = draw(st.sampled_from(["00", "59", "60", "07"]))
    digits = draw(st.integers(0, 9))
    fraction = "" if digits == 0 else "." + "".join(
        draw(st.lists(st.sampled_from("0159"), min_size=digits, max_size=digits)))
    offset = draw(st.sampled_from(["", "", "Z", "z", "+00:00", "-00:00", "+05:30", "-08:00",
                                   "+0530", "+05", "+23:59", "+24:00", "-12:00"]))
    clock = f"{hour}:{minute}" if draw(st.integers(0, 7)) == 0 else f"{hour}:{minute}:{second}"
    sep = draw(st.sampled_from(["T", "T", " ", "t"]))
    return f"{date}{sep}{clock}{fraction}{offset}"


#: Numbers where a date or date-time belongs: epoch seconds in a date-time column, a
#: misfit in a date column, whatever the block's other values (Arrow alone reads them
#: as microseconds or days); some past the years a date-time holds.
EPOCHS = st.one_of(st.integers(-2**36, 2**36), st.floats(-1e11, 1e11),
                   st.sampled_from([0, 5, -719163, 1700000000, 1700000000.5, 1700000000000,
                                    -62135596800]))


@st.composite
def tidy_date_times(draw: st.DrawFn) -> str:
    """Date-times as APIs write them: the shapes a bulk path takes whole."""
    text = (f"{draw(st.integers(1000, 8999)):04d}-{draw(st.integers(1, 12)):02d}-"
            f"{draw(st.integers(1, 28)):02d}T{draw(st.integers(0, 23)):02d}:"
            f"{draw(st.integers(0, 59)):02d}:{draw(st.integers(0, 59)):02d}")
    text += draw(st.sampled_from(["", ".5", ".123", ".123456"]))
    return text + draw(st.sampled_from(["", "Z", "+02:00", "-08:00"]))


@st.composite
def tidy_dates(draw: st.DrawFn) -> str:
    return (f"{draw(st.integers(1000, 8999)):04d}-{draw(st.integers(1, 12)):02d}-"
            f"{draw(st.integers(1, 28)):02d}")


INTS = (st.integers(-2**31, 2**31) | st.sampled_from(
    [0, -1, 2**53 + 1, 2**63 - 1, -2**63, 2**63, -2**63 - 1, 2**64, 10**30, -10**30]))
FLOAT_TEXT = st.sampled_from(["1.0", "-0.0", "0.0", "1e308", "-1e308", "1E400", "2.5e-320",
                              "1.5", "100", "1e2", "0.1", "123456789012345678901234567890",
                              "5e-324", "1.7976931348623157e308", "-1"]).map(Raw)
FLOATS = (st.floats(allow_nan=False, allow_infinity=False) | FLOAT_TEXT
          | st.integers(-10**6, 10**6))
#: Decimal literals past a float's digits, at a decimal(38, 18)'s edges and one past them.
DECIMAL_TEXT = st.builds(
    lambda sign, whole, fraction, exponent: Raw(f"{sign}{whole}{fraction}{exponent}"),
    st.sampled_from(["", "-"]),
    st.sampled_from(["0", "1", "12345678901234567890", "99999999999999999999",
                     "100000000000000000000"]) | st.integers(0, 10**21).map(str),
    st.sampled_from(["", ".5", ".123456789012345678", ".999999999999999999",
                     ".0000000000000000001", ".10"]),
    st.sampled_from(["", "", "", "e0", "E-2", "e+3"]))
STRINGS = (st.text(max_size=6) | st.sampled_from(
    ["", "é", "😀", "a\"b", "back\\slash", "tab\tnew\nline", "\u2028", "\x00", "null", "1",
     "true", "2024-01-01", "2024-01-01T00:00:00Z"])
    | st.sampled_from([r'"\u00e9"', r'"\/"', r'"\ud83d\ude00"', r'"\u0000"', r'"a\u0022b"'])
    .map(Raw))

LEAF_WILD = st.one_of(
    st.none(), st.booleans(), INTS, FLOATS, STRINGS, date_times(),
    st.just([]), st.just({}), st.lists(st.integers(-3, 3) | st.text(max_size=2), max_size=2),
    st.dictionaries(st.sampled_from(["a", "b"]), st.integers(-3, 3) | st.text(max_size=2),
                    max_size=2))

#: Values of open columns and keys outside the schema in tidy records: what a bulk path
#: may take (text that looks like a date, escapes, nulls), without numbers like 1.0.
TIDY_ANY = st.one_of(
    st.none(), st.booleans(), st.integers(-10**6, 10**6), st.text(max_size=4),
    st.sampled_from(["é", 'a"b', "\\", "\n", "😀"]), tidy_date_times(), tidy_dates(),
    st.lists(st.integers(-3, 3) | st.none(), max_size=2),
    st.dictionaries(st.sampled_from(["a", "b"]), st.integers(-3, 3) | st.text(max_size=2),
                    max_size=2))

# ---------------------------------------------------------------------- schemas

_LEAVES = ["integer", "number", "boolean", "string", "date-time", "local", "date", "decimal"]


def _leaf_prop(kind: str, nullable: bool) -> dict[str, Any]:
    base: dict[str, Any] = {
        "integer": {"type": "integer"}, "number": {"type": "number"},
        "boolean": {"type": "boolean"}, "string": {"type": "string"},
        "date-time": {"type": "string", "format": "date-time"},
        "local": {"type": "string", "format": "date-time",
                  "airbyte_type": "timestamp_without_timezone"},
        "date": {"type": "string", "format": "date"},
        "decimal": {"type": "number", "format": "decimal", "precision": 38, "scale": 18},
    }[kind]
    if nullable:
        base = {**base, "type": ["null", base["type"]]}
    return base


@st.composite
def properties(draw: st.DrawFn, depth: int = 0, dates_inside: bool = True) -> dict[str, Any]:
    """One JSON Schema property: a leaf, an array, an object with properties, or open."""
    leaves = _LEAVES if dates_inside or depth == 0 else _LEAVES[:4]
    choices = list(leaves) + (["array", "object", "open"] if depth < 2 else [])
    kind = draw(st.sampled_from(choices))
    nullable = draw(st.booleans())
    if kind in _LEAVES:
        return _leaf_prop(kind, nullable)
    if kind == "array":
        return {"type": ["null", "array"] if nullable else "array",
                "items": draw(properties(depth + 1, dates_inside))}
    if kind == "object":
        names = draw(st.lists(st.sampled_from(["a", "b", "c", "d"]), min_size=1, max_size=3,
                              unique=True))
        return {"type": ["null", "object"] if nullable else "object",
                "properties": {n: draw(properties(depth + 1, dates_inside)) for n in names}}
    return draw(st.sampled_from([{}, {"type": "object"}, {"type": ["string", "integer"]},
                                 {"type": "array"}, {"type": "array", "items": {}}]))


@st.composite
def json_schemas(draw: st.DrawFn, dates_inside: bool = True) -> dict[str, Any]:
    names = draw(st.lists(st.sampled_from(["id", "n", "x", "when", "obj", "tags", "any",
                                           "é"]), min_size=1, max_size=5, unique=True))
    return {"type": "object",
            "properties": {n: draw(properties(0, dates_inside)) for n in names}}


def _types(prop: dict[str, Any]) -> list[str]:
    declared = prop.get("type")
    types = [declared] if isinstance(declared, str) else list(declared or [])
    return [t for t in types if t != "null"]


@st.composite
def fitting(draw: st.DrawFn, prop: dict[str, Any], tidy: bool) -> Any:
    """A value that fits ``prop`` (mostly), in the forms a JSON writer may give it."""
    types = _types(prop)
    anything = TIDY_ANY if tidy else LEAF_WILD
    if len(types) != 1:
        return draw(anything)
    kind, fmt = types[0], prop.get("format")
    if kind == "integer":
        return draw(st.integers(-10**6, 10**6) if tidy else INTS)
    if kind == "number" and fmt == "decimal":
        return draw(st.integers(-1000, 1000) | DECIMAL_TEXT.filter(lambda raw: "e" not in
                                                                   raw.text.lower())
                    if tidy else DECIMAL_TEXT | FLOATS | INTS)
    if kind == "number":
        return draw(st.floats(-1e6, 1e6) | st.integers(-1000, 1000) if tidy else FLOATS)
    if kind == "boolean":
        return draw(st.booleans())
    if kind == "string" and fmt == "date-time":
        return draw(tidy_date_times() if tidy else date_times() | date_times() | EPOCHS)
    if kind == "string" and fmt == "date":
        return draw(tidy_dates() if tidy else date_times() | date_times() | EPOCHS)
    if kind == "string":
        return draw(st.text(max_size=5) if tidy else STRINGS)
    if kind == "array":
        items = prop.get("items")
        if not isinstance(items, dict):
            return draw(anything)
        return draw(st.lists(value_for(items, tidy), max_size=3))
    if kind == "object":
        props = prop.get("properties") or {}
        if not props:
            return draw(anything)
        record = {name: draw(value_for(child, tidy)) for name, child in props.items()
                  if draw(st.integers(0, 4)) > 0}
        if draw(st.integers(0, 9)) == 0:
            record["zz"] = draw(anything)  # a key the properties do not name
        return record
    return draw(anything)


@st.composite
def value_for(draw: st.DrawFn, prop: dict[str, Any], tidy: bool,
              wild_share: float = 0.0) -> Any:
    if draw(st.integers(0, 5)) == 0:
        return None
    if wild_share and draw(st.floats(0, 1)) < wild_share:
        return draw(LEAF_WILD)
    return draw(fitting(prop, tidy))


@st.composite
def records_for(draw: st.DrawFn, json_schema: dict[str, Any], max_records: int = 8,
                tidy: bool = False) -> list[Any]:
    """Records for ``json_schema``: fitting values, some wrong types, missing and extra keys,
    a repeated key now and then (as :class:`Pairs`); with ``tidy`` only values that fit,
    as APIs write them (what a bulk path takes whole)."""
    props = json_schema["properties"]
    tidy = tidy or draw(st.booleans())
    wild_share = 0.0 if tidy else draw(st.sampled_from([0.0, 0.0, 0.05, 0.3]))
    records: list[Any] = []
    for _ in range(draw(st.integers(1, max_records))):
        record = {name: draw(value_for(prop, tidy, wild_share)) for name, prop in props.items()
                  if draw(st.integers(0, 7)) > 0}
        if draw(st.integers(0, 11)) == 0:
            record[draw(st.sampled_from(["extra", "more"]))] = draw(TIDY_ANY if tidy
                                                                     else LEAF_WILD)
        if tidy:
            records.append(record)
            continue
        if record and draw(st.integers(0, 19)) == 0:
            items = list(record.items())
            name = draw(st.sampled_from([k for k, _ in items]))
            items.insert(draw(st.integers(0, len(items))), (name, draw(LEAF_WILD)))
            records.append(Pairs(tuple(items)))
            continue
        records.append(record)
    return records


#: What a broken line may look like (the line is replaced by this, or cut).
CORRUPT = st.sampled_from(["", "{", "not json", "[1, 2]", "null", "42", '"text"', "{}}",
                           '{"a": 1,}', "{'a': 1}", "\x00"])
