"""Column coercion: a reader's Arrow column into its declared type, vectorised.

The common case (the reader already produced the right type) costs nothing; a
column of the wrong type is cast with Arrow's kernels (ISO date-times, decimal
text, timestamps of another unit, structs and lists field by field), and only a
column whose cast fails falls back to value-by-value conversion (``_values.py``).
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from headwater.table_schema._base64 import all_canonical, decode_canonical
from headwater.table_schema._meta import (
    LOCAL_TIMESTAMP,
    UTC_TIMESTAMP,
    NoteRows,
    _clip,
    _NestedRows,
)
from headwater.table_schema._types import has_binary, is_nested
from headwater.table_schema._values import _is_temporal, coerce_values, python_values


def coerce_column(
    name: str, column: pa.Array | pa.ChunkedArray, target: pa.DataType,
    notes: NoteRows,
) -> pa.Array:
    """One column of a reader's batch, cast to its table type."""
    if isinstance(column, pa.ChunkedArray):
        column = column.combine_chunks()
    if column.type == target:
        return column
    if pa.types.is_null(column.type):
        return pa.nulls(len(column), target)
    if pa.types.is_struct(target) and pa.types.is_struct(column.type):
        return _conform_struct(name, column, target, notes)
    # A list where a struct belongs is a misfit, noted value by value below.
    if is_nested(target) and pa.types.is_list(target) and (
            pa.types.is_list(column.type) or pa.types.is_large_list(column.type)):
        return _conform_list(name, column, target, notes)
    if pa.types.is_timestamp(column.type) and pa.types.is_timestamp(target):
        return _cast_timestamps(name, column, target, notes)
    if has_binary(target) and not is_nested(target):
        return _binary_column(name, column, target, notes)
    if _is_temporal(target) and (pa.types.is_integer(column.type)
                                 or pa.types.is_floating(column.type)
                                 or pa.types.is_decimal(column.type)):
        # Arrow's cast reads a number as days or microseconds (_is_temporal).
        return coerce_values(name, column.to_pylist(), target, notes)
    if pa.types.is_string(column.type) and (target in (UTC_TIMESTAMP, LOCAL_TIMESTAMP)
                                            or pa.types.is_date32(target)):
        # Arrow's cast reads text Python's fromisoformat refuses (year 0, say), so
        # only the shapes both read alike are cast; the rest go value by value.
        typed = (_iso_dates(column) if pa.types.is_date32(target)
                 else _iso_date_times(column, target))
        return typed if typed is not None else coerce_values(name, column.to_pylist(),
                                                             target, notes)
    if pa.types.is_decimal(target) and pa.types.is_string(column.type) \
            and not _decimal_text_fits(column, target):
        return coerce_values(name, column.to_pylist(), target, notes)
    if _cast_differs(column.type, target):
        return coerce_values(name, python_values(column), target, notes)
    # Text of another type is note_text's (a decimal's digits: Arrow writes 0 as 0E-10).
    if not (pa.types.is_string(target) and not pa.types.is_string(column.type)):
        try:
            cast = pc.cast(column, target, safe=True)
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError):
            pass
        else:
            if not (pa.types.is_floating(target) and pa.types.is_string(column.type)
                    and pc.any(pc.is_nan(cast)).as_py()):
                return cast
            # Arrow reads "-nan" and "+nan" as NaN, the value-by-value path notes them.
    if pa.types.is_string(column.type) and pa.types.is_timestamp(target) and target.tz:
        # Date-time text without an offset ("2024-01-01 10:00:00", common in CSV) is
        # UTC, as the value-by-value path reads it, but Arrow's cast wants an offset.
        try:
            naive = pc.cast(column, pa.timestamp(target.unit), safe=True)
            return pc.assume_timezone(naive, "UTC").cast(target)
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError):
            pass
    return coerce_values(name, python_values(column), target, notes)


def _cast_differs(source: pa.DataType, target: pa.DataType) -> bool:
    """Whether Arrow's cast reads ``source`` values otherwise than the value-by-value
    path (``_values.py``), which then types the column: a number as a boolean (2
    is true there, a misfit here), a boolean or a date-time as a number (1, its
    microseconds), a double as a decimal (1.1 as 1.100000000000000089, not the
    double's shortest text), a decimal as a double (not correctly rounded:
    0.3333333333 as 0.33333333330000003)."""
    numeric = (pa.types.is_integer(target) or pa.types.is_floating(target)
               or pa.types.is_decimal(target))
    if pa.types.is_boolean(target):
        return (pa.types.is_integer(source) or pa.types.is_floating(source)
                or pa.types.is_decimal(source))
    if numeric and (pa.types.is_boolean(source) or pa.types.is_temporal(source)):
        return True
    return (pa.types.is_decimal(target) and pa.types.is_floating(source)) or (
        pa.types.is_floating(target) and pa.types.is_decimal(source))


def _binary_column(name: str, column: pa.Array, target: pa.DataType,
                   notes: NoteRows) -> pa.Array:
    """Bytes, or a list of them, from a reader's column: text is base64 (Arrow's cast
    would keep the text's own bytes), decoded in bulk where all of it is canonical
    (:mod:`._base64`); any other column goes value by value (``_to_binary``), where
    a misfit is noted, so both give the same bytes."""
    if pa.types.is_binary(target) and (pa.types.is_string(column.type)
                                       or pa.types.is_large_string(column.type)) \
            and all_canonical(column):
        return decode_canonical(column)
    if pa.types.is_binary(target) and (pa.types.is_large_binary(column.type)
                                       or pa.types.is_fixed_size_binary(column.type)):
        return pc.cast(column, target)  # bytes already: the same values
    return coerce_values(name, python_values(column), target, notes)


_UNIT_TICKS = {"s": 1, "ms": 10**3, "us": 10**6, "ns": 10**9}


_INT64_MAX = 2**63 - 1


def _decimal_text_fits(column: pa.Array, target: pa.Decimal128Type) -> bool:
    """Whether every value is plain decimal text with no more digits than ``target``
    holds: Arrow's cast of text with more integer digits than the precision wraps
    around (40 ones cast to decimal(38, 0) gave 902640...), so only such text is
    cast in bulk; the rest goes value by value, where a misfit is noted."""
    whole = target.precision - target.scale
    pattern = rf"^[+-]?\d{{0,{whole}}}(\.\d{{0,{target.scale}}})?$"
    return bool(pc.all(pc.match_substring_regex(column.drop_null(), pattern)).as_py()
                is not False)


def _cast_timestamps(name: str, column: pa.Array, target: pa.TimestampType,
                     notes: NoteRows) -> pa.Array:
    """A timestamp column in another unit (or zone) as ``target``.

    A naive column is UTC.  A value the target's unit cannot hold exactly
    (nanoseconds that do not divide into microseconds, seconds or milliseconds
    past the microseconds an int64 holds) is null with a note keeping the
    source's value: Arrow's safe cast refuses the whole column for one such value
    (which failed the read), and an unsafe cast would land a truncated or
    wrapped instant.
    """
    if column.type.tz is None and target.tz is not None:
        column = pc.assume_timezone(column, "UTC")
    try:
        return pc.cast(column, target)
    except pa.ArrowInvalid:
        pass
    source, wanted = _UNIT_TICKS[column.type.unit], _UNIT_TICKS[target.unit]
    ticks = column.cast(pa.int64()).fill_null(0).to_numpy(zero_copy_only=False)
    if source > wanted:
        fits = ticks % (source // wanted) == 0
        reason = f"expected date-time: a {column.type.unit} value past the {target.unit} " \
            "a date-time holds"
    else:
        limit = _INT64_MAX // (wanted // source)
        fits = (ticks >= -limit) & (ticks <= limit)
        reason = f"out of range: a date-time past what {target.unit} since 1970 hold"
    bad = ~fits & column.is_valid().to_numpy(zero_copy_only=False)
    texts = pc.cast(column.filter(pa.array(bad)), pa.string()).to_pylist()
    for row, tick, text in zip(np.flatnonzero(bad).tolist(), ticks[bad].tolist(), texts,
                               strict=True):
        # Arrow's text of an instant past its calendar is not a date: the count is.
        shown = text if source > wanted else f"{tick} {column.type.unit} since 1970-01-01"
        notes[row].append({"field": name, "reason": reason, "value": shown})
    kept = pc.if_else(pa.array(bad), pa.scalar(None, column.type), column)
    return pc.cast(kept, target)


def _conform_struct(name: str, column: pa.StructArray, target: pa.StructType,
                    notes: NoteRows) -> pa.Array:
    """A struct column in ``target``'s fields, each child cast as a column of its own.

    Fields are matched by name: a missing one is null, one ``target`` lacks is
    noted (``name.child``) on the rows that have a value for it.
    """
    children = dict(zip([f.name for f in column.type], column.flatten(), strict=True))
    arrays = []
    for field in target:
        child = children.pop(field.name, None)
        path = f"{name}.{field.name}"
        arrays.append(pa.nulls(len(column), field.type) if child is None
                      else coerce_column(path, child, field.type, notes))
    for key, child in children.items():
        if child.null_count == len(child):
            continue
        for row in pc.indices_nonzero(child.is_valid()).to_pylist():
            notes[row].append({"field": f"{name}.{key}", "reason": "not in the stream schema",
                               "value": _clip(child[row].as_py())})
    mask = pc.invert(column.is_valid()) if column.null_count else None
    return pa.StructArray.from_arrays(arrays, fields=list(target), mask=mask)


def _conform_list(name: str, column: pa.ListArray, target: pa.ListType,
                  notes: NoteRows) -> pa.Array:
    """A list column whose items are structs or lists: the items cast as one column."""
    offsets = column.offsets.to_numpy(zero_copy_only=False).astype(np.int64)
    first = int(offsets[0])
    items = column.values.slice(first, int(offsets[-1]) - first)
    rows = np.repeat(np.arange(len(column)), np.diff(offsets))
    typed = coerce_column(name, items, target.value_type, _NestedRows(notes, rows))
    mask = column.is_null() if column.null_count else None
    return pa.ListArray.from_arrays(pa.array(offsets - first, pa.int32()), typed,
                                    type=target, mask=mask)


# Date-times both Arrow's cast and Python's ``datetime.fromisoformat`` read alike:
# years 1000-8999 (no overflow when an offset moves the instant), hours 0-23, no
# leap second, 1-6 fractional digits, an offset ``Z`` or ``+HH:MM`` (hours 0-23).
_ISO_DATE_TIME = (r"^[1-8][0-9]{3}-[0-9]{2}-[0-9]{2}[T ](?:[01][0-9]|2[0-3]):[0-5][0-9]"
                  r":[0-5][0-9](?:\.[0-9]{1,6})?")


_ISO_OFFSET = r"(?:Z|[+-](?:[01][0-9]|2[0-3]):[0-5][0-9])$"


def _iso_date_times(column: pa.Array, target: pa.DataType) -> pa.Array | None:
    """ISO 8601 text as ``target`` (UTC or local microseconds), as :func:`_to_datetime`
    reads it: text with an offset is that instant, text without one is UTC (or the
    local time as written).  None unless every value has one of those shapes and
    Arrow parses it (a day 31 in a 30-day month goes value by value, to its note)."""
    with_offset = pc.match_substring_regex(column, _ISO_DATE_TIME + _ISO_OFFSET)
    without = pc.match_substring_regex(column, _ISO_DATE_TIME + "$")
    if not pc.all(pc.or_(with_offset, without), min_count=0).as_py():  # nulls fit
        return None
    try:
        aware = pc.cast(pc.if_else(with_offset, column, None), UTC_TIMESTAMP)
        naive = pc.cast(pc.if_else(without, column, None), LOCAL_TIMESTAMP)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
        return None
    if target == UTC_TIMESTAMP:
        return pc.if_else(with_offset, aware, pc.assume_timezone(naive, "UTC"))
    return pc.if_else(with_offset, aware.view(LOCAL_TIMESTAMP), naive)


_ISO_DATE_PREFIX = r"^[1-8][0-9]{3}-[0-9]{2}-[0-9]{2}"


def _iso_dates(column: pa.Array) -> pa.Array | None:
    """Text that starts with an ISO date as dates, as :func:`_to_date` reads it (the
    first ten characters); None unless every value does and Arrow parses it."""
    if not pc.all(pc.match_substring_regex(column, _ISO_DATE_PREFIX), min_count=0).as_py():
        return None
    try:
        return pc.cast(pc.utf8_slice_codeunits(column, 0, 10), pa.date32())
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
        return None


__all__ = ["coerce_column"]
