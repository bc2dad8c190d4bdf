"""Generated JSON records with what each value must land as, computed from its text alone.

The differential tests compare a bulk path with its fallback; where both share a
fault they agree with each other (a fallback that parsed numbers as floats agreed
with itself, issue 35).  Here each value is generated with the value its column
must hold and the note it must leave, computed without any reader: decimals and
integers from the generated text with :class:`decimal.Decimal` and ``int``,
date-times and dates from the parts the text was written from with
:mod:`datetime`'s constructors (never by parsing the text).  The tests then
drive blocks through the fallback on purpose (a malformed line, a value that
does not fit, a key outside the schema) and hold every path to these values.
"""

from __future__ import annotations

import datetime as dt
import decimal
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from hypothesis import strategies as st

#: The declared decimal (a Delta decimal's widest) and a small one for nested leaves.
WIDE = {"type": "number", "format": "decimal", "precision": 38, "scale": 18}
SMALL = {"type": "number", "format": "decimal", "precision": 10, "scale": 2}
DATE_TIME = {"type": "string", "format": "date-time"}
LOCAL = {"type": "string", "format": "date-time", "airbyte_type": "timestamp_without_timezone"}

#: The stream's columns, with decimals (top level, inside an object, in a list) or without.
WITH_DECIMALS: dict[str, Any] = {
    "id": {"type": "integer"}, "d": WIDE, "i": {"type": "integer"}, "t": DATE_TIME,
    "l": LOCAL, "day": {"type": "string", "format": "date"},
    "o": {"type": "object", "properties": {"d": SMALL, "i": {"type": "integer"}}},
    "ds": {"type": "array", "items": SMALL},
}
WITHOUT_DECIMALS: dict[str, Any] = {
    "id": {"type": "integer"}, "i": {"type": "integer"}, "t": DATE_TIME, "l": LOCAL,
    "day": {"type": "string", "format": "date"},
    "o": {"type": "object", "properties": {"i": {"type": "integer"}}},
}

_EXACT = decimal.Context(prec=1000, Emax=999_999, Emin=-999_999)
_INT64 = (-(2**63), 2**63 - 1)


@dataclass(frozen=True)
class Value:
    """One generated value: its JSON text, what its column holds, and the text of the
    note it leaves (None: it fits, or is null)."""

    text: str
    lands: Any
    note: str | None = None


def _misfit(text: str) -> Value:
    return Value(text, None, text)


def decimal_value(text: str, precision: int, scale: int) -> Value:
    """What a decimal(precision, scale) column makes of the JSON number ``text``:
    the number exactly when it has at most ``scale`` fractional digits (trailing
    zeros aside) and fewer than ``precision - scale`` integer digits, else a note
    keeping ``text``."""
    number = _EXACT.create_decimal(text)
    if not number.is_finite():
        return _misfit(text)
    step = decimal.Decimal(1).scaleb(-scale)
    exact = _EXACT.quantize(number, step)
    if exact != number or exact.copy_abs() >= decimal.Decimal(10) ** (precision - scale):
        return _misfit(text)
    return Value(text, exact)


def integer_value(text: str) -> Value:
    """What an int64 column makes of the JSON number ``text``: the integer it writes
    (``9007199254740993.0`` is 9007199254740993) when int64 holds it, else a note."""
    number = _EXACT.create_decimal(text)
    if not number.is_finite() or number != _EXACT.to_integral_value(number) \
            or not _INT64[0] <= int(number) <= _INT64[1]:
        return _misfit(text)
    return Value(text, int(number))


_FRACTION_DIGITS = st.integers(0, 18)


@st.composite
def decimal_texts(draw: st.DrawFn, whole: int, scale: int) -> str:
    """Number literals around a decimal(whole + scale, scale): beyond a float's 17
    digits, at the column's extremes, one digit past them, with exponents."""
    kind = draw(st.integers(0, 9))
    sign = draw(st.sampled_from(["", "-"]))
    if kind == 0:
        return sign + draw(st.sampled_from([
            "9" * whole + "." + "9" * scale, "0." + "0" * (scale - 1) + "1",
            "1" + "0" * whole, "9" * whole + "." + "9" * scale + "9",
            "0." + "0" * scale + "1", "0", "0.0", "1E400", "1e-400", "1E+3", "2.5e1",
            "1" + "0" * (whole - 1) + ".5E0"]))
    digits = draw(st.integers(1, whole + 1 if kind == 1 else whole))
    integer = str(draw(st.integers(10 ** (digits - 1), 10**digits - 1)))
    fraction_digits = draw(st.integers(0, scale + (1 if kind == 2 else 0)))
    fraction = "".join(draw(st.lists(st.sampled_from("0123456789"),
                                     min_size=fraction_digits, max_size=fraction_digits)))
    text = sign + integer + ("." + fraction if fraction else "")
    if kind == 3:
        text += draw(st.sampled_from(["e0", "E+0", "e-2", "E2"]))
    return text


@st.composite
def integer_texts(draw: st.DrawFn, float_written: bool = True, past_floats: bool = True,
                  ) -> str:
    """Integers past a float's 2**53, int64's extremes and one past them, some written
    with a fraction of zeros (an integer all the same) or of a half (a misfit);
    ``past_floats=False``: only those below 2**53 so written."""
    number = draw(st.sampled_from([2**53 + 1, -(2**53) - 1, 2**63 - 1, -(2**63), 2**63,
                                   -(2**63) - 1, 2**64, 10**30, 0, 12345678901234567])
                  | st.integers(-(2**64), 2**64) | st.integers(-1000, 1000))
    form = draw(st.integers(0, 5)) if float_written else 5
    if not past_floats and abs(number) >= 2**53:
        form = 5
    if form == 0:
        return f"{number}.0"
    if form == 1 and number:
        return f"{number}.5"  # a fraction: a misfit
    return str(number)


@dataclass(frozen=True)
class Instant:
    """A date-time written from its parts; ``lands`` computed with datetime, not parsed."""

    text: str
    utc: dt.datetime | None  # the instant (UTC, naive), None when it is no instant


_OFFSETS = [("", 0), ("Z", 0), ("+00:00", 0), ("-00:00", 0), ("+05:30", 330),
            ("-08:00", -480), ("+23:59", 23 * 60 + 59), ("-12:00", -720)]


@st.composite
def instants(draw: st.DrawFn) -> Instant:
    """Date-times at the calendar's edges: years 1 and 9999 (an offset may push the
    instant out of them), leap days, 0 to 9 fractional digits (past 6 they are cut),
    ``T`` or a space, a date alone (its midnight), and what is no date-time at all
    (hour 24, second 60, month 13, day 30 of February)."""
    year = draw(st.sampled_from([1, 9999, 1969, 1970, 2000, 2024, 2023, 1900])
                | st.integers(1, 9999))
    month = draw(st.integers(1, 12))
    day = draw(st.integers(1, 31))
    hour, minute, second = draw(st.integers(0, 23)), draw(st.integers(0, 59)), \
        draw(st.integers(0, 59))
    digits = draw(st.integers(0, 9))
    fraction = "".join(draw(st.lists(st.sampled_from("0123456789"), min_size=digits,
                                     max_size=digits)))
    offset, minutes = draw(st.sampled_from(_OFFSETS))
    broken = draw(st.sampled_from([None] * 6 + ["hour", "second", "month"]))
    clock = (f"{24 if broken == 'hour' else hour:02d}:{minute:02d}:"
             f"{60 if broken == 'second' else second:02d}")
    date = f"{year:04d}-{13 if broken == 'month' else month:02d}-{day:02d}"
    if not broken and draw(st.integers(0, 7)) == 0:  # a date alone: its midnight
        hour = minute = second = 0
        fraction, offset, minutes, text = "", "", 0, date
    else:
        text = (date + draw(st.sampled_from(["T", "T", " "])) + clock
                + ("." + fraction if fraction else "") + offset)
    if broken:
        return Instant(text, None)
    try:
        local = dt.datetime(year, month, day, hour, minute, second,
                            int((fraction + "000000")[:6]))
        utc = local - dt.timedelta(minutes=minutes)
    except (ValueError, OverflowError):  # no such day, or the offset left the calendar
        return Instant(text, None)
    return Instant(text, utc)


@st.composite
def epoch_instants(draw: st.DrawFn) -> Instant:
    """A number in a date-time column: Unix epoch seconds."""
    seconds = draw(st.integers(-62135596800, 253402300799))
    return Instant(str(seconds), dt.datetime(1970, 1, 1) + dt.timedelta(seconds=seconds))


@st.composite
def days(draw: st.DrawFn) -> tuple[str, dt.date | None]:
    """Date text (a date-time's first ten characters are its date), a day that does
    not exist, a number (no date)."""
    year = draw(st.sampled_from([1, 9999, 2024, 2023, 1970]) | st.integers(1, 9999))
    month, day = draw(st.integers(1, 12)), draw(st.integers(1, 31))
    text = f"{year:04d}-{month:02d}-{day:02d}"
    if draw(st.booleans()):
        text += draw(st.sampled_from(["T00:00:00Z", "T23:59:59+05:00", " 12:00"]))
    try:
        return f'"{text}"', dt.date(year, month, day)
    except ValueError:
        return f'"{text}"', None


@dataclass
class Record:
    """One generated record: its JSON text and, per column, what lands and what is noted
    (``notes``: the fields and texts of its notes)."""

    text: str
    lands: dict[str, Any]
    notes: set[tuple[str, str]]


def _quoted(text: str) -> str:
    return f'"{text}"'


@st.composite
def records(draw: st.DrawFn, columns: Mapping[str, Any], number: int,
            float_written: bool = True) -> Record:
    """A record for ``columns`` (:data:`WITH_DECIMALS` or :data:`WITHOUT_DECIMALS`);
    ``float_written``: integers may be written ``9007199254740993.0``."""
    parts: list[str] = [f'"id":{number}']
    lands: dict[str, Any] = {"id": number}
    notes: set[tuple[str, str]] = set()

    def put(name: str, value: Value) -> None:
        parts.append(f'"{name}":{value.text}')
        lands[name] = value.lands
        if value.note is not None:
            notes.add((name, value.note))

    for name in columns:
        if name == "id":
            continue
        if draw(st.integers(0, 9)) == 0:
            lands[name] = None  # missing (or null)
            if draw(st.booleans()):
                parts.append(f'"{name}":null')
            continue
        if name == "d":
            put(name, decimal_value(draw(decimal_texts(20, 18)), 38, 18))
        elif name == "i":
            put(name, integer_value(draw(integer_texts(float_written))))
        elif name in ("t", "l"):
            instant = draw(instants() | epoch_instants())
            epoch = instant.text.lstrip("-").isdigit()
            text = instant.text if epoch else _quoted(instant.text)
            if instant.utc is None:
                put(name, Value(text, None, instant.text))
            else:
                lands_as = instant.utc.replace(tzinfo=dt.UTC) if name == "t" else instant.utc
                put(name, Value(text, lands_as))
        elif name == "day":
            text, date = draw(days())
            put(name, Value(text, date) if date is not None else Value(text, None, text[1:-1]))
        elif name == "o":
            inner: dict[str, Any] = {}
            inner_parts = []
            for key in columns["o"]["properties"]:
                if draw(st.integers(0, 4)) == 0:
                    inner[key] = None
                    continue
                # An object without a decimal leaf is typed from Arrow's inference,
                # where 9007199254740993.0 is a double already (left alone, issue 35).
                value = (decimal_value(draw(decimal_texts(8, 2)), 10, 2) if key == "d"
                         else integer_value(draw(integer_texts(
                             float_written, past_floats="d" in columns))))
                inner_parts.append(f'"{key}":{value.text}')
                inner[key] = value.lands
                if value.note is not None:
                    notes.add((f"o.{key}", value.note))
            parts.append('"o":{' + ",".join(inner_parts) + "}")
            lands["o"] = inner
        elif name == "ds":
            items = [decimal_value(draw(decimal_texts(8, 2)), 10, 2)
                     for _ in range(draw(st.integers(0, 3)))]
            text = "[" + ",".join(item.text for item in items) + "]"
            if any(item.note is not None for item in items):
                # A list of leaves is one value: null, noted whole (as JSON writes it).
                put(name, Value(text, None, "[" + ", ".join(i.text for i in items) + "]"))
            else:
                put(name, Value(text, [item.lands for item in items]))
    return Record("{" + ",".join(parts) + "}", lands, notes)


@dataclass(frozen=True)
class Rejected:
    """A line no reader makes a record of: a row of nulls noting the line."""

    text: str


Expected = Record | Rejected


@st.composite
def unfit(draw: st.DrawFn, number: int) -> Record:
    """A record whose integer is text: no bulk reader takes its block."""
    text = draw(st.sampled_from(["x", "1 000", "", "0x10", "²"]))
    return Record(f'{{"id":{number},"i":"{text}"}}', {"id": number}, {("i", text)})


#: Lines that are no JSON object (each becomes a rejected row).
MALFORMED = st.sampled_from(['{"id":', "not json", "[1, 2]", "{'id': 1}", '{"id": 1}}',
                             '{"d": 1.5,}', "null"])


def assert_lands(columns: Mapping[str, Any], landed: list[tuple[dict[str, Any], Any]],
                 wanted: list[Expected]) -> None:
    """``landed``: each row's values and notes (dicts with field, reason, value), in
    record order; each must be what ``wanted`` says, notes by field and text."""
    assert len(landed) == len(wanted), (len(landed), len(wanted))
    for number, ((row, notes), want) in enumerate(zip(landed, wanted, strict=True)):
        noted = {(note["field"], note["value"]) for note in notes or []}
        values = {name: row.get(name) for name in columns}
        if isinstance(want, Rejected):
            assert noted == {("", want.text)}, (number, want, notes)
            assert all(value is None for value in values.values()), (number, values)
            continue
        assert values == {name: want.lands.get(name) for name in columns}, \
            (number, want.text, values)
        assert noted == want.notes, (number, want.text, notes)
        assert all(note["reason"] for note in notes or []), notes
