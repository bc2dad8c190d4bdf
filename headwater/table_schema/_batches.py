"""Arrow batches of a stream: a reader's batch conformed to the table's schema, or
dict records typed in bulk.

Runs on executors, on every batch a stream yields.  Dict records are read by
Arrow in C++ and cast with its kernels; a column the bulk path declines is typed
value by value, so values, types and notes are the same either way.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from headwater.table_schema._columns import _iso_date_times, _iso_dates, coerce_column
from headwater.table_schema._json_text import json_text_column, json_text_values
from headwater.table_schema._meta import (
    LOCAL_TIMESTAMP,
    READER_NOTES,
    UTC_TIMESTAMP,
    RowNotes,
    _clip,
)
from headwater.table_schema._types import has_binary, has_decimal, is_nested, json_kind
from headwater.table_schema._values import _is_number, _is_temporal, coerce_values


def batch_from_records(records: Iterable[Mapping[str, Any]], schema: pa.Schema, *,
                       by_value: bool = False) -> tuple[list[pa.Array], RowNotes]:
    """Columns for a list of dict records, and their rows' notes.

    Fields outside the schema are kept as notes.  Plain dicts are typed in bulk
    (:func:`_bulk_columns`): Arrow reads the whole list in C++ and the columns are
    cast with its kernels; a column the bulk path declines is typed value by value
    as before, so values, types and notes are the same either way.  ``by_value``:
    every column value by value (``_values.py``, no Arrow inference nor cast), the
    definition every faster path is held to, for checks that must not trust them.
    """
    rows = list(records)
    notes = RowNotes(len(rows))
    known = set(schema.names) | {READER_NOTES}
    dicts = all(type(record) is dict for record in rows)
    # The common case, plain dicts whose keys are all columns, needs no look at each
    # record: that look cost more than the columns themselves (an HTTP page, say).
    plain = dicts and set(schema.names).issuperset(set().union(*rows))
    for row, record in enumerate([] if plain else rows):
        if not isinstance(record, Mapping):
            notes[row].append({"field": "", "reason": "record is not an object",
                               "value": _clip(record)})
            continue
        given = record.get(READER_NOTES)
        if given:
            notes[row].extend(given)
        unknown = record.keys() - known
        for key in unknown:
            if record[key] is not None:  # a null loses nothing: not noted, at any depth
                notes[row].append({"field": key, "reason": "not in the stream schema",
                                   "value": _clip(record[key])})
    if dicts and rows and not by_value:
        return _bulk_columns(rows, schema, notes), notes
    typing = _column_by_value if by_value else _column_from_values
    columns = [typing(field, [r.get(field.name) if isinstance(r, Mapping) else None
                              for r in rows], notes)
               for field in schema]
    return columns, notes


def batch_from_plain_records(records: Sequence[dict[str, Any]],
                             schema: pa.Schema) -> tuple[list[pa.Array], RowNotes]:
    """:func:`batch_from_records` for records the caller knows are plain: at least
    one, each a ``dict`` whose keys are all columns of ``schema`` (no reader notes).

    Saves looking at every record's keys a second time (about a tenth of the
    typing's CPU on an API page) where the caller had to look already.
    """
    notes = RowNotes(len(records))
    return _bulk_columns(records, schema, notes), notes


def _column_by_value(field: pa.Field, values: list[Any], notes: RowNotes) -> pa.Array:
    """One column typed value by value and nothing else (``batch_from_records(by_value=True)``)."""
    if json_kind(field) is not None:
        return json_text_values(field.name, values, notes)
    return coerce_values(field.name, values, field.type, notes)


def _column_from_values(field: pa.Field, values: list[Any], notes: RowNotes) -> pa.Array:
    """One column from its Python values: the value-by-value path, the reference
    the bulk path (:func:`_bulk_columns`) must equal."""
    if json_kind(field) is not None:
        return json_text_values(field.name, values, notes)
    if is_nested(field.type):
        return _nested_from_values(field.name, values, field.type, notes)
    if _is_temporal(field.type) and any(_is_number(v) for v in values):
        return coerce_values(field.name, values, field.type, notes)  # _is_temporal's why
    if has_binary(field.type):
        # pa.array(text, type=binary) keeps the text's own bytes: text is base64, decoded
        # in bulk by coerce_column where it is all text, else value by value.
        texts = _inferred(values) if pa.types.is_binary(field.type) else None
        if texts is not None and (pa.types.is_string(texts.type) or (
                pa.types.is_binary(texts.type) and not any(isinstance(v, str)
                                                           for v in values))):
            return coerce_column(field.name, texts, field.type, notes)
        return coerce_values(field.name, values, field.type, notes)
    try:
        if pa.types.is_integer(field.type):
            return pc.cast(pa.array(values, type=EXACT_INTS), field.type, safe=True)
        return pa.array(values, type=field.type)
    except (pa.ArrowInvalid, pa.ArrowTypeError, OverflowError, TypeError, ValueError):
        return coerce_values(field.name, values, field.type, notes)


#: The type ``pa.array`` is asked for where an integer belongs: Arrow truncates a
#: float into an integer type (``1.5`` landed as 1, ``9007199254740993.0`` as ...992,
#: unnoted) but refuses one for a decimal, and reads integers of up to 38 digits
#: exactly; the cast to the column's type then refuses what does not fit.
EXACT_INTS = pa.decimal128(38, 0)


#: What Arrow's inference of Python values may raise (mixed types, huge ints, odd objects).
_NOT_INFERRED = (pa.ArrowException, OverflowError, TypeError, ValueError, RecursionError)


def _bulk_columns(rows: Sequence[Mapping[str, Any]], schema: pa.Schema,
                  notes: RowNotes) -> list[pa.Array]:
    """The columns of plain dict records, typed by Arrow in C++ where it gives the same.

    Arrow reads the whole list as one struct (:func:`_read_rows`: one C++ pass, no
    per-value Python); each of its columns is then taken as it is, cast in bulk
    (:func:`_bulk_cast`), or, where neither gives exactly what the value-by-value
    path gives (a misfit, a type Arrow could not infer), typed value by value
    (:func:`_column_from_values`), with the same notes.  When the records as a
    whole have no one type (one column mixes strings and numbers, say), each
    column is inferred on its own.
    """
    read = _read_rows(rows, schema)
    names = set(read.type.names) if read is not None else set()
    columns = []
    for field in schema:
        values: list[Any] | None = None
        column: pa.Array | None
        if read is not None:
            column = read.field(field.name) if field.name in names else pa.nulls(len(rows))
        else:
            values = [r.get(field.name) for r in rows]
            column = _inferred(values) if _bulk_cast_worth(field) else None
        typed = (_bulk_cast(field, column, notes)
                 if column is not None and json_kind(field) is None else None)
        if typed is None:
            if values is None:
                values = [r.get(field.name) for r in rows]
            typed = _column_from_values(field, values, notes)
        columns.append(typed)
    return columns


def _read_rows(rows: Sequence[Mapping[str, Any]], schema: pa.Schema) -> pa.StructArray | None:
    """The records as one struct array: in the columns' own types where the schema
    has no nested or JSON-text column (each column read as ``pa.array(values,
    type=...)`` reads it, the value-by-value path's first try; date-times and
    dates as text, integers as :data:`EXACT_INTS`), else, or when that fails, in
    the types Arrow infers (about twice the work).  None when neither reads them
    (or the result is chunked)."""
    requested = _requested_struct(schema)
    for kind in ([requested] if requested is not None else []) + [None]:
        try:
            found = pa.array(rows, type=kind)
        except _NOT_INFERRED:
            continue
        return found if isinstance(found, pa.StructArray) else None
    return None


def _requested_struct(schema: pa.Schema) -> pa.StructType | None:
    fields = []
    for field in schema:
        if json_kind(field) is not None or is_nested(field.type) or has_binary(field.type):
            return None  # only inference gives these as the value-by-value path does
        temporal = pa.types.is_timestamp(field.type) or pa.types.is_date32(field.type)
        fields.append(pa.field(field.name, pa.string() if temporal else EXACT_INTS
                               if pa.types.is_integer(field.type) else field.type))
    return pa.struct(fields)


def _inferred(values: list[Any]) -> pa.Array | None:
    try:
        found = pa.array(values)
    except _NOT_INFERRED:
        return None
    return found if isinstance(found, pa.Array) else None


def _bulk_cast_worth(field: pa.Field) -> bool:
    """Whether a column is worth inferring on its own: one whose values are
    typed in Python otherwise (date-times and dates from text)."""
    return json_kind(field) is None and (pa.types.is_timestamp(field.type)
                                         or pa.types.is_date32(field.type))


def _bulk_cast(field: pa.Field, column: pa.Array, notes: RowNotes) -> pa.Array | None:
    """``column`` (as Arrow read it) in ``field``'s type, or None where only the
    value-by-value path is sure to give the same values and notes."""
    target = field.type
    if has_binary(column.type) and has_binary(target):
        return None  # Arrow infers bytes for text beside bytes: which was base64 text?
    if is_nested(target):
        # The value-by-value path infers these too, then casts (_nested_from_values),
        # but for a decimal leaf (a double's cast is not the literal's digits).
        return None if has_decimal(target) else coerce_column(field.name, column, target,
                                                               notes)
    if column.type == target:
        return column
    if pa.types.is_null(column.type):
        return pa.nulls(len(column), target)
    if column.type == EXACT_INTS and pa.types.is_integer(target):
        try:  # integers read exactly (_requested_struct); one past the column is noted
            return pc.cast(column, target, safe=True)
        except pa.ArrowInvalid:
            return None
    if pa.types.is_int64(column.type) and pa.types.is_float64(target):
        try:  # exact, as pa.array(ints, type=float64) is: beyond 2**53 both refuse
            return pc.cast(column, target, safe=True)
        except pa.ArrowInvalid:
            return None
    if pa.types.is_string(column.type):
        if pa.types.is_binary(target):  # base64 text: decoded, never its own bytes
            return coerce_column(field.name, column, target, notes)
        if target in (UTC_TIMESTAMP, LOCAL_TIMESTAMP):
            return _iso_date_times(column, target)
        if pa.types.is_date32(target):
            return _iso_dates(column)
    return None


def _nested_from_values(name: str, values: list[Any], target: pa.DataType,
                        notes: RowNotes) -> pa.Array:
    """Nested dicts and lists as a struct or list column.

    Arrow reads them with the types it infers and :func:`coerce_column` casts
    that in bulk (a typed ``pa.array`` would drop keys the struct lacks, unnoted);
    values Arrow cannot give one type go value by value.
    """
    if has_decimal(target):
        # Arrow's inference reads a number as a double: a decimal leaf is typed from
        # its literal's text (JsonFloat), value by value.
        return coerce_values(name, values, target, notes)
    try:
        inferred = pa.array(values)
    except (pa.ArrowInvalid, pa.ArrowTypeError, OverflowError, TypeError, ValueError):
        return coerce_values(name, values, target, notes)
    if has_binary(inferred.type) and has_binary(target):
        # Arrow infers bytes for base64 text beside bytes (the text's own bytes).
        return coerce_values(name, values, target, notes)
    return coerce_column(name, inferred, target, notes)


def conform_batch(batch: pa.RecordBatch,
                  schema: pa.Schema) -> tuple[list[pa.Array], RowNotes]:
    """Columns of an Arrow batch in ``schema``'s order and types, and their rows' notes.

    Missing columns become nulls; columns outside the schema are kept as notes
    so nothing a reader produced disappears silently.
    """
    notes = RowNotes(batch.num_rows)
    if READER_NOTES in batch.schema.names and READER_NOTES not in schema.names:
        column = batch.column(READER_NOTES)
        if column.null_count < len(column):
            for row, given in enumerate(column.to_pylist()):
                if given:
                    notes[row].extend(given)
    extra = [name for name in batch.schema.names
             if name not in schema.names and name != READER_NOTES]
    for name in extra:
        column = batch.column(name)
        if column.null_count == len(column):
            continue
        for row, value in enumerate(column.to_pylist()):
            if value is not None:
                notes[row].append({"field": name, "reason": "not in the stream schema",
                                   "value": _clip(value)})
    columns = []
    for field in schema:
        index = batch.schema.get_field_index(field.name)
        if index < 0:
            columns.append(pa.nulls(batch.num_rows, field.type))
        elif json_kind(field) is not None:
            columns.append(json_text_column(field.name, batch.column(index), notes))
        else:
            columns.append(coerce_column(field.name, batch.column(index), field.type, notes))
    return columns, notes


__all__ = ["EXACT_INTS", "batch_from_plain_records", "batch_from_records", "conform_batch"]
