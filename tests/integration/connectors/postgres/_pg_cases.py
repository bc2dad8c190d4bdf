"""Generated PostgreSQL tables for the differential tests of the postgres source's readers.

A column is a :class:`Kind`: its DDL type and a strategy of PostgreSQL *input text*
(``None``: SQL NULL), inserted as ``%s::type`` so PostgreSQL parses every value
itself, edges included: integer extremes, float NaN/Infinity/-0.0, numeric NaN and
huge scales, ``infinity``/``-infinity`` dates and timestamps, BC dates, timestamps
past year 9999 and at PostgreSQL's own limits, ``24:00:00``, negative intervals,
json text jsonb normalizes, empty bytea, enum labels with quotes, arrays with NULL
elements, empty and multi-dimensional arrays, text elements with quotes, commas,
braces and backslashes.
"""

from __future__ import annotations

import datetime as dt
import json
from dataclasses import dataclass
from typing import Any

from hypothesis import strategies as st
from hypothesis.strategies import SearchStrategy

#: Types the database of a test run holds (see :func:`create_types`).
MOOD_LABELS = ["sad", "ok", "with space", 'quo"te', "ünï", ""]
TYPES_DDL = ("CREATE TYPE mood AS ENUM (" + ", ".join(
    "'" + label.replace("'", "''") + "'" for label in MOOD_LABELS) + ");"
    "CREATE DOMAIN posint AS integer CHECK (VALUE > 0);"
    "CREATE DOMAIN moment AS timestamptz;")


@dataclass(frozen=True)
class Kind:
    """A column type and the input text of its values."""

    ddl: str
    values: SearchStrategy[str]


def _or_null(values: SearchStrategy[str]) -> SearchStrategy[str | None]:
    return st.one_of(st.none(), values, values, values)


def _integers(low: int, high: int) -> SearchStrategy[str]:
    edges = [v for v in (low, high, 0, -1, 1) if low <= v <= high]
    return (st.sampled_from(edges) | st.integers(low, high)).map(str)


def _numeric(precision: int, scale: int) -> SearchStrategy[str]:
    top = 10 ** precision - 1
    digits = st.sampled_from([top, -top, 0, 1, -1]) | st.integers(-top, top)
    exact = digits.map(lambda n: f"{n}e-{scale}" if scale else str(n))
    return exact | st.just("NaN")


_FREE_NUMERIC = (
    st.builds(lambda m, e: f"{m}e{e}", st.integers(-(10 ** 30), 10 ** 30),
              st.integers(-400, 400))
    | st.sampled_from(["NaN", "Infinity", "-Infinity", "-0.000", "0.1", "1e-1000"]))


def _float_text(value: float) -> str:
    if value != value:
        return "NaN"
    if value in (float("inf"), float("-inf")):
        return "Infinity" if value > 0 else "-Infinity"
    return repr(value)


_FLOAT8 = st.floats().map(_float_text) | st.sampled_from(["-0", "1.1", "5e-324"])
_FLOAT4 = st.floats(width=32).map(_float_text) | st.sampled_from(
    ["1.1", "-0", "3.4028235e38", "1e-45", "0.1"])

_CHARS = st.characters(blacklist_categories=("Cs",), blacklist_characters="\x00")
_TEXT = st.text(_CHARS, max_size=12) | st.sampled_from(
    ["", " ", "a,b", '"q"', "{x}", "\\", "NULL", "tëxt ☃", "trailing  "])

_DATES = st.dates().map(dt.date.isoformat) | st.sampled_from([
    "0001-01-01", "9999-12-31", "infinity", "-infinity", "4714-11-24 BC", "0001-12-31 BC",
    "5874897-12-31", "10000-01-01", "1970-01-01", "2000-01-01", "1582-10-10"])
_TIMESTAMPS = st.datetimes().map(lambda t: t.isoformat(sep=" ")) | st.sampled_from([
    "0001-01-01 00:00:00", "9999-12-31 23:59:59.999999", "infinity", "-infinity",
    "4714-11-24 00:00:00 BC", "294276-12-31 23:59:59.999999", "10000-01-01 00:00:00",
    "1969-12-31 23:59:59.999999", "2000-01-01 00:00:00.000001", "2262-04-11 23:47:16.854776"])
_ZONES = st.sampled_from([dt.UTC, dt.timezone(dt.timedelta(hours=5, minutes=30)),
                          dt.timezone(dt.timedelta(hours=-8)),
                          dt.timezone(dt.timedelta(hours=14))])
_TIMESTAMPTZ = st.datetimes(timezones=_ZONES).map(lambda t: t.isoformat(sep=" ")) | \
    st.sampled_from(["0001-01-01 00:00:00+00", "0001-01-01 00:30:00+01",
                     "9999-12-31 23:59:59.999999+00", "9999-12-31 23:30:00-01", "infinity",
                     "-infinity", "4714-11-24 00:00:00+00 BC", "294276-12-31 23:59:59+00"])
_TIMES = st.times().map(dt.time.isoformat) | st.sampled_from(["24:00:00", "00:00:00"])
_INTERVALS = st.builds(lambda m, d, us: f"{m} mons {d} days {us} microseconds",
                       st.integers(-10 ** 6, 10 ** 6), st.integers(-10 ** 6, 10 ** 6),
                       st.integers(-10 ** 15, 10 ** 15))
_JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers(-10 ** 20, 10 ** 20) | st.text(_CHARS, max_size=5)
    | st.floats(allow_nan=False, allow_infinity=False),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=3), inner,
                                                                 max_size=3), max_leaves=6)
_JSON = st.builds(lambda v, spaced: json.dumps(v, indent=1 if spaced else None),
                  _JSON_VALUES, st.booleans()) | st.sampled_from(
    ['{"a":1,"a":2}', '{ "b" : [1 , 2.50] }', '1E2', '"\\u00e9"', "[]"])
_BYTEA = st.binary(max_size=12).map(lambda b: "\\x" + b.hex())


def _element(value: str | None) -> str:
    if value is None:
        return "NULL"
    return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'


def _array(elements: SearchStrategy[str]) -> SearchStrategy[str]:
    """Array input text: one-dimensional (NULL elements, empty), now and then 2x2."""
    items = st.one_of(st.none(), elements, elements)
    flat = st.lists(items, max_size=4).map(lambda xs: "{" + ",".join(map(_element, xs)) + "}")
    square = st.lists(items, min_size=4, max_size=4).map(
        lambda xs: "{{" + ",".join(map(_element, xs[:2])) + "},{"
        + ",".join(map(_element, xs[2:])) + "}}")
    bounded = st.lists(elements, min_size=1, max_size=2).map(
        lambda xs: f"[0:{len(xs) - 1}]={{" + ",".join(map(_element, xs)) + "}")
    return flat | flat | square | bounded


def _kinds() -> list[Kind]:
    return [
        Kind("smallint", _integers(-(2 ** 15), 2 ** 15 - 1)),
        Kind("integer", _integers(-(2 ** 31), 2 ** 31 - 1)),
        Kind("bigint", _integers(-(2 ** 63), 2 ** 63 - 1)),
        Kind("numeric(38, 0)", _numeric(38, 0)),
        Kind("numeric(12, 3)", _numeric(12, 3)),
        Kind("numeric(38, 38)", _numeric(38, 38)),
        Kind("numeric(50, 10)", _numeric(50, 10)),
        Kind("numeric", _FREE_NUMERIC),
        Kind("real", _FLOAT4),
        Kind("double precision", _FLOAT8),
        Kind("boolean", st.sampled_from(["true", "false"])),
        Kind("text", _TEXT),
        Kind("varchar(5)", _TEXT.map(lambda t: t[:5])),
        Kind("char(4)", _TEXT.map(lambda t: t[:4])),
        Kind('"char"', st.characters(min_codepoint=1, max_codepoint=127)),
        Kind("name", _TEXT),
        Kind("date", _DATES),
        Kind("timestamp", _TIMESTAMPS),
        Kind("timestamptz", _TIMESTAMPTZ),
        Kind("moment", _TIMESTAMPTZ),
        Kind("time", _TIMES),
        Kind("timetz", st.builds(lambda t, z: f"{t}{z}", _TIMES,
                                 st.sampled_from(["+00", "+05:30", "-08", "+14"]))),
        Kind("interval", _INTERVALS),
        Kind("uuid", st.uuids().map(str)),
        Kind("json", _JSON),
        Kind("jsonb", _JSON),
        Kind("bytea", _BYTEA),
        Kind("mood", st.sampled_from(MOOD_LABELS)),
        Kind("posint", _integers(1, 2 ** 31 - 1)),
        Kind("integer[]", _array(_integers(-(2 ** 31), 2 ** 31 - 1))),
        Kind("bigint[]", _array(_integers(-(2 ** 63), 2 ** 63 - 1))),
        Kind("real[]", _array(_FLOAT4)),
        Kind("double precision[]", _array(_FLOAT8)),
        Kind("boolean[]", _array(st.sampled_from(["true", "false"]))),
        Kind("text[]", _array(_TEXT)),
        Kind("varchar[]", _array(_TEXT)),
        Kind("char(3)[]", _array(_TEXT.map(lambda t: t[:3]))),
        Kind("smallint[]", _array(_integers(-(2 ** 15), 2 ** 15 - 1))),
        Kind("integer[][]", _array(_integers(-9, 9))),
        Kind("numeric[]", _array(_numeric(5, 2))),
        Kind("date[]", _array(_DATES)),
        Kind("point", st.builds(lambda x, y: f"({x},{y})", _FLOAT8, _FLOAT8)),
    ]


KINDS = _kinds()


@dataclass(frozen=True)
class Table:
    """A generated table: its column types and rows of input text (``_row`` is the key)."""

    kinds: tuple[Kind, ...]
    rows: tuple[tuple[str | None, ...], ...]

    @property
    def names(self) -> list[str]:
        return [f"c{i}" for i in range(len(self.kinds))]

    def create(self, conn: Any, name: str) -> None:
        """Create and fill the table ``name`` over ``conn`` (psycopg, autocommit)."""
        columns = ", ".join(f"{n} {k.ddl}" for n, k in zip(self.names, self.kinds, strict=True))
        conn.execute(f'CREATE TABLE "{name}" (_row integer PRIMARY KEY, {columns})')
        casts = ", ".join(f"%s::{k.ddl}" for k in self.kinds)
        with conn.cursor() as cur:
            cur.executemany(f'INSERT INTO "{name}" VALUES (%s, {casts})',
                            [(i, *row) for i, row in enumerate(self.rows)])


@st.composite
def tables(draw: st.DrawFn, max_columns: int = 6, max_rows: int = 6) -> Table:
    """A table of 1 to ``max_columns`` generated columns and 1 to ``max_rows`` rows."""
    kinds = tuple(draw(st.lists(st.sampled_from(KINDS), min_size=1, max_size=max_columns)))
    row = st.tuples(*(_or_null(k.values) for k in kinds))
    return Table(kinds, tuple(draw(st.lists(row, min_size=1, max_size=max_rows))))
