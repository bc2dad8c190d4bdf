"""Value-by-value coercion: one Python value into its column's Arrow type, or a note.

The slow path, taken only for the values a vectorised cast (``_columns.py``) or the
bulk read of dict records (``_batches.py``) declines; it decides what fits and why
a value does not, so both fast paths are checked against it.
"""

from __future__ import annotations

import base64
import datetime as dt
import decimal
import json
import math
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np
import pyarrow as pa

from headwater import json_numbers
from headwater.json_numbers import JsonFloat, exact_decimal
from headwater.table_schema._meta import Note, NoteRows, _clip, note_text
from headwater.table_schema._types import is_nested


def python_values(column: pa.Array) -> list[Any]:
    """A column's values in Python, maps (a Parquet or Avro map, at any depth) as
    dicts: their JSON is an object, not a list of pairs.  A map with a key twice
    stays its pairs, all of them."""
    try:
        return column.to_pylist(maps_as_pydicts="strict")
    except KeyError:
        return column.to_pylist()


def _to_int(value: Any) -> int:
    if isinstance(value, bool):
        raise ValueError("boolean is not an integer")
    if isinstance(value, int):
        return value
    if isinstance(value, JsonFloat):
        return _integral(exact_decimal(value))  # 9007199254740993.0 is not ...992
    if isinstance(value, decimal.Decimal):  # a Parquet or Avro decimal: its digits
        return _integral(value)
    if isinstance(value, float):
        if not value.is_integer():
            raise ValueError("has a fractional part")
        return int(value)
    if isinstance(value, str):
        return int(value.strip())
    raise ValueError(f"{type(value).__name__} is not an integer")


#: Digits past which an integral decimal is refused before it becomes a Python int
#: (``1e999999999`` would take minutes): far past any Arrow integer.
_INT_DIGITS = 40


def _integral(number: decimal.Decimal) -> int:
    if not number.is_finite() or number.adjusted() > _INT_DIGITS:
        raise ValueError("out of range")
    if number != number.to_integral_value():
        raise ValueError("has a fractional part")
    return int(number)


def _to_float(value: Any) -> float:
    if isinstance(value, bool):
        raise ValueError("boolean is not a number")
    if isinstance(value, int | float | decimal.Decimal):
        return float(value)  # a Decimal correctly rounded (Arrow's cast is not)
    if isinstance(value, str):
        result = float(value.strip())
        if math.isnan(result) and value.strip().lower() != "nan":
            raise ValueError("not a number")
        return result
    raise ValueError(f"{type(value).__name__} is not a number")


def _to_bool(value: Any) -> bool:
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and value.strip().lower() in {"true", "false", "1", "0"}:
        return value.strip().lower() in {"true", "1"}
    if isinstance(value, int) and value in (0, 1):
        return bool(value)
    raise ValueError(f"{value!r} is not a boolean")


def _to_datetime(value: Any, aware: bool) -> dt.datetime:
    if isinstance(value, dt.datetime):
        parsed = value
    elif isinstance(value, dt.date):
        parsed = dt.datetime(value.year, value.month, value.day)
    elif isinstance(value, str):
        text = value.strip()
        if text.endswith("Z"):
            text = text[:-1] + "+00:00"
        parsed = dt.datetime.fromisoformat(text)
    elif isinstance(value, int | float) and not isinstance(value, bool):
        parsed = dt.datetime.fromtimestamp(value, tz=dt.UTC)
    else:
        raise ValueError(f"{type(value).__name__} is not a date-time")
    if aware:
        if parsed.tzinfo is None:
            return parsed.replace(tzinfo=dt.UTC)
        return parsed.astimezone(dt.UTC)
    if parsed.tzinfo is not None:
        return parsed.astimezone(dt.UTC).replace(tzinfo=None)
    return parsed


def _to_date(value: Any) -> dt.date:
    if isinstance(value, dt.datetime):
        return value.date()
    if isinstance(value, dt.date):
        return value
    if isinstance(value, str):
        return dt.date.fromisoformat(value.strip()[:10])
    raise ValueError(f"{type(value).__name__} is not a date")


def _to_decimal(value: Any) -> decimal.Decimal:
    if isinstance(value, bool):
        raise ValueError("boolean is not a number")
    if isinstance(value, decimal.Decimal):
        return value
    if isinstance(value, JsonFloat):
        return exact_decimal(value)  # the literal's digits, not the float's
    if isinstance(value, int | float | str):
        try:
            return decimal.Decimal(str(value).strip())
        except decimal.InvalidOperation as exc:
            raise ValueError(f"{value!r} is not a decimal number") from exc
    raise ValueError(f"{type(value).__name__} is not a decimal number")


def _to_binary(value: Any) -> bytes:
    if isinstance(value, bytes | bytearray | memoryview):
        return bytes(value)
    if isinstance(value, str):
        try:
            return base64.b64decode(value, validate=True)
        except ValueError as exc:  # binascii.Error, or text that is not ASCII
            raise ValueError("not base64") from exc
    raise ValueError(f"{type(value).__name__} is not binary")


#: Room for any decimal a column can hold while one is checked against it.
_WIDE_DECIMALS = decimal.Context(prec=100)


def _fitting_decimal(number: decimal.Decimal, target: pa.DataType) -> decimal.Decimal:
    """``number`` when ``target`` (a decimal type) holds it exactly; a misfit is noted
    at its own path (inside a struct too), not found by Arrow for the whole value."""
    whole = target.precision - target.scale
    if not number.is_finite() or (number and number.adjusted() >= whole):
        raise ValueError(f"out of range: more than {whole} integer digits")
    exact = number.quantize(decimal.Decimal(1).scaleb(-target.scale), context=_WIDE_DECIMALS)
    if exact != number:
        raise ValueError(f"out of range: more than {target.scale} fractional digits")
    return exact


def _fitting_int(number: int, target: pa.DataType) -> int:
    """``number`` when the integer type ``target`` holds it (see :func:`_fitting_decimal`)."""
    bounds = np.iinfo(target.to_pandas_dtype())
    if not int(bounds.min) <= number <= int(bounds.max):
        raise ValueError(f"out of range: past {target}")
    return number


def _converter(target: pa.DataType) -> Callable[[Any], Any]:
    if pa.types.is_decimal(target):
        return lambda v: _fitting_decimal(_to_decimal(v), target)
    if pa.types.is_binary(target) or pa.types.is_large_binary(target):
        return _to_binary
    if pa.types.is_string(target) or pa.types.is_large_string(target):
        return note_text
    if pa.types.is_integer(target):
        return lambda v: _fitting_int(_to_int(v), target)
    if pa.types.is_floating(target):
        return _to_float
    if pa.types.is_boolean(target):
        return _to_bool
    if pa.types.is_timestamp(target):
        aware = target.tz is not None
        return lambda v: _to_datetime(v, aware)
    if pa.types.is_date(target):
        return _to_date
    if pa.types.is_list(target):
        item = _converter(target.value_type)

        def to_list(value: Any) -> list[Any]:
            if isinstance(value, str):
                value = json_numbers.loads(value)
            if not isinstance(value, list | tuple):
                raise ValueError(f"{type(value).__name__} is not an array")
            return [None if v is None else item(v) for v in value]

        return to_list
    return lambda v: v


def _describe(target: pa.DataType) -> str:
    if pa.types.is_timestamp(target):
        return "date-time"
    if pa.types.is_date(target):
        return "date"
    if pa.types.is_list(target):
        return f"array of {_describe(target.value_type)}"
    if pa.types.is_struct(target):
        return "object"
    return str(target)


#: What a value that does not fit raises; OSError is how ``datetime.fromtimestamp``
#: refuses a number past its platform's range (it must not fail the sync).
_MISFITS = (ValueError, TypeError, OverflowError, OSError, json.JSONDecodeError)


def _nested_value(value: Any, target: pa.DataType, path: str, found: list[Note]) -> Any:
    """``value`` as a value of a struct or list ``target``; a misfit inside becomes null.

    Each misfit leaves a note at its dotted path (``parent.child``, a list's items
    share the list's path), so one bad field costs that field, not the record.
    Raises only when ``value`` itself does not fit ``target`` (the caller notes it).
    """
    if isinstance(value, str) and (pa.types.is_struct(target) or pa.types.is_list(target)):
        value = json_numbers.loads(value)  # JSON text (a CSV column, an API's field)
    if pa.types.is_struct(target):
        if not isinstance(value, Mapping):
            raise ValueError(f"{type(value).__name__} is not an object")
        out: dict[str, Any] = {}
        for field in target:
            out[field.name] = _nested_field(value.get(field.name), field.type,
                                            f"{path}.{field.name}", found)
        for key in value.keys() - out.keys():
            if value[key] is not None:
                found.append({"field": f"{path}.{key}", "reason": "not in the stream schema",
                              "value": _clip(value[key])})
        return out
    if pa.types.is_list(target) and is_nested(target):
        if not isinstance(value, list | tuple):
            raise ValueError(f"{type(value).__name__} is not an array")
        return [_nested_field(item, target.value_type, path, found) for item in value]
    return _converter(target)(value)


def _nested_field(value: Any, target: pa.DataType, path: str, found: list[Note]) -> Any:
    if value is None:
        return None
    try:
        return _nested_value(value, target, path, found)
    except _MISFITS as exc:
        found.append({"field": path, "reason": f"expected {_describe(target)}: {exc}",
                      "value": _clip(value)})
        return None


def coerce_values(
    name: str, values: Sequence[Any], target: pa.DataType, notes: NoteRows
) -> pa.Array:
    """Convert values one by one; each misfit becomes null plus a note on its row.

    Inside a struct or a list of structs only the misfit field is null (its note
    names it ``name.child``); the rest of the value is kept.
    """
    out: list[Any] = []
    if is_nested(target):
        for row, value in enumerate(values):
            found: list[Note] = []
            out.append(_nested_field(value, target, name, found))
            if found:
                notes[row].extend(found)
    else:
        convert = _converter(target)
        for row, value in enumerate(values):
            if value is None:
                out.append(None)
                continue
            try:
                out.append(convert(value))
            except _MISFITS as exc:
                out.append(None)
                notes[row].append(
                    {"field": name, "reason": f"expected {_describe(target)}: {exc}",
                     "value": _clip(value)}
                )
    try:
        return pa.array(out, type=target)
    except (pa.ArrowInvalid, pa.ArrowTypeError, OverflowError) as exc:
        # Values that converted in Python but still overflow the Arrow type.
        fixed: list[Any] = []
        for row, value in enumerate(out):
            try:
                pa.array([value], type=target)
                fixed.append(value)
            except (pa.ArrowInvalid, pa.ArrowTypeError, OverflowError):
                fixed.append(None)
                notes[row].append({"field": name, "reason": f"out of range: {exc}",
                                   "value": _clip(values[row])})
        return pa.array(fixed, type=target)


def _is_temporal(target: pa.DataType) -> bool:
    """Whether ``target`` is a date or a date-time, whose numbers Arrow and the
    value-by-value path read differently.

    A number in a date-time column is Unix epoch seconds (:func:`_to_datetime`,
    as Spark's JSON reader reads one) and a number in a date column is a misfit
    (:func:`_to_date`).  Arrow's ``pa.array(..., type=...)`` and its casts read
    the same number as days or microseconds, and truncate a fraction, so a
    value's meaning would depend on its neighbours: alone in its batch it was
    microseconds, beside one ISO text it was seconds.  Numbers there always
    go value by value.
    """
    return pa.types.is_timestamp(target) or pa.types.is_date(target)


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


__all__ = ["coerce_values", "python_values"]
