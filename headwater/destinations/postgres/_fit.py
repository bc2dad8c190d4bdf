"""Each batch made to fit PostgreSQL's columns on the executor, before it is COPYed.

Why: the engine has already typed every value to the column types ``prepare``
returned, but a few values Arrow holds PostgreSQL refuses, and one refused
value fails the whole COPY (and so the checkpoint): text with a NUL character,
JSON text with a ``\\u0000`` escape (jsonb), a date or timestamp before 4713 BC
or a date past 5874897 AD, text longer than a ``varchar(n)`` column.  Each
becomes null and leaves a note ``{field, reason, value}`` in its row's
``_hw_notes``, as the engine does for its own misfits: never dropped silently,
never fatal.  Nested values (structs, lists, maps) and the notes themselves
become JSON text for their jsonb columns, decimals as exact numbers.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import msgspec
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from headwater.destinations.postgres._types import ARROW_TYPES
from headwater.table_schema import MAX_NOTE_VALUE, note_text, python_values

#: PostgreSQL's earliest timestamp (4714-11-24 BC, Julian day 0), in µs since 1970.
MIN_TIMESTAMP_US = -210_866_803_200_000_000
#: PostgreSQL's date range in days since 1970: Julian day 0, and the first day past its end.
MIN_DATE_DAYS = -2_440_588
END_DATE_DAYS = 2_145_042_906
#: JSON text holding the escape jsonb refuses (one not itself escaped by a backslash).
_NUL_ESCAPE = r"(^|[^\\])(\\\\)*\\u0000"
_ENCODER = msgspec.json.Encoder(decimal_format="number")

NOTES = "_hw_notes"


@dataclass(frozen=True)
class Column:
    """How one written column reaches PostgreSQL: its Arrow type for the encoder."""

    name: str
    #: The column's PostgreSQL type (``format_type`` text).
    pg_type: str
    #: jsonb: the values are JSON text already (an open value), else they are serialized.
    json_text: bool = False
    #: varchar(n) / char(n): the longest text it takes.
    max_length: int | None = None

    @property
    def jsonb(self) -> bool:
        return self.pg_type in ("jsonb", "json")

    def arrow_type(self, given: pa.DataType) -> pa.DataType:
        """The Arrow type whose binary encoding is this column's (``given`` where it is)."""
        if self.jsonb:
            return pa.string()
        return ARROW_TYPES.get(self.pg_type, given)


class _Notes:
    """New notes by row, merged into ``_hw_notes`` at the end."""

    def __init__(self) -> None:
        self.rows: dict[int, list[dict[str, str]]] = {}

    def add(self, column: str, reason: str, values: pa.Array, mask: np.ndarray[Any, Any]) -> None:
        for row in np.flatnonzero(mask):
            text = _printable(_shown(values[int(row)]))
            if len(text) > MAX_NOTE_VALUE:
                text = text[:MAX_NOTE_VALUE] + "…"
            self.rows.setdefault(int(row), []).append(
                {"field": column, "reason": reason, "value": text})


def _shown(value: pa.Scalar) -> str:
    """A value as a note shows it; a date or time Python cannot hold as its count since 1970."""
    try:
        return note_text(value.as_py())
    except (OverflowError, ValueError):
        unit = "days" if pa.types.is_date(value.type) else f"{value.type.unit} units"
        count = value.cast(pa.int32() if pa.types.is_date32(value.type) else pa.int64())
        return f"{count.as_py()} {unit} since 1970-01-01"


def _printable(text: str) -> str:
    """``text`` with each NUL character written ``\\u0000``: a note is jsonb, which refuses it."""
    return text.replace("\x00", "\\u0000")


def fit_batch(batch: pa.RecordBatch, columns: list[Column]) -> tuple[pa.RecordBatch, int]:
    """``batch`` as the COPY sends it (``columns``' order and types), and its rejected rows."""
    notes = _Notes()
    arrays: list[pa.Array] = []
    for column in columns:
        if column.name == NOTES:
            arrays.append(pa.nulls(batch.num_rows, pa.string()))  # filled in below
            continue
        values = batch.column(column.name)
        arrays.append(_fit_column(column, values, notes))
    position = next((i for i, c in enumerate(columns) if c.name == NOTES), None)
    rejected = 0
    if position is not None:
        merged, rejected = _notes_json(batch.column(NOTES), notes)
        arrays[position] = merged
    fields = [pa.field(c.name, a.type) for c, a in zip(columns, arrays, strict=True)]
    return pa.RecordBatch.from_arrays(arrays, schema=pa.schema(fields)), rejected


def _fit_column(column: Column, values: pa.Array, notes: _Notes) -> pa.Array:
    if column.jsonb:
        text = values.cast(pa.string()) if column.json_text and _is_text(values.type) \
            else _json_texts(values)
        return _nulled(column.name, text, pc.match_substring_regex(text, _NUL_ESCAPE),
                       "jsonb cannot hold the \\u0000 escape (a NUL character)", notes)
    target = column.arrow_type(values.type)
    if pa.types.is_timestamp(target) and pa.types.is_timestamp(values.type):
        values = values.cast(pa.timestamp("us", tz=values.type.tz)).cast(target)
        early = pc.less(values.cast(pa.int64()), MIN_TIMESTAMP_US)
        return _nulled(column.name, values, early,
                       "before 4714-11-24 BC, PostgreSQL's earliest timestamp", notes)
    values = values.cast(target) if not values.type.equals(target) else values
    if pa.types.is_date32(target):
        days = values.cast(pa.int32())
        outside = pc.or_(pc.less(days, MIN_DATE_DAYS), pc.greater_equal(days, END_DATE_DAYS))
        return _nulled(column.name, values, outside, "outside PostgreSQL's dates "
                       "(4714-11-24 BC to 5874897 AD)", notes)
    if _is_text(target):
        refused = pc.match_substring(values, "\x00")
        values = _nulled(column.name, values, refused,
                         "PostgreSQL text cannot hold the NUL character", notes)
        if column.max_length is not None:
            longer = pc.greater(pc.utf8_length(values), column.max_length)
            values = _nulled(column.name, values, longer,
                             f"longer than the column's {column.max_length} characters", notes)
    return values


def _is_text(kind: pa.DataType) -> bool:
    return pa.types.is_string(kind) or pa.types.is_large_string(kind)


def _nulled(name: str, values: pa.Array, mask: pa.Array, reason: str,
            notes: _Notes) -> pa.Array:
    """``values`` with the rows ``mask`` holds null, each with a note."""
    flags = mask.fill_null(False).to_numpy(zero_copy_only=False)
    if not flags.any():
        return values
    notes.add(name, reason, values, flags)
    return pc.if_else(mask.fill_null(False), pa.nulls(len(values), values.type), values)


def _json_texts(values: pa.Array) -> pa.Array:
    """Each value as JSON text (null stays null): structs as objects, decimals exact."""
    if values.null_count == len(values):
        return pa.nulls(len(values), pa.string())
    return pa.array([None if v is None else _ENCODER.encode(v).decode()
                     for v in python_values(values)], pa.string())


def _notes_json(given: pa.Array, notes: _Notes) -> tuple[pa.Array, int]:
    """The rows' notes (the engine's and ours) as JSON text, and how many rows have any."""
    if not notes.rows and given.null_count == len(given):
        return pa.nulls(len(given), pa.string()), 0
    rows: list[Any] = [None if r is None else [{k: _printable(v) if isinstance(v, str) else v
                                                for k, v in note.items()} for note in r]
                       for r in given.to_pylist()]
    for row, found in notes.rows.items():
        rows[row] = [*(rows[row] or []), *found]
    texts = [_ENCODER.encode(r).decode() if r else None for r in rows]
    return pa.array(texts, pa.string()), sum(1 for t in texts if t is not None)


__all__ = ["END_DATE_DAYS", "MIN_DATE_DAYS", "MIN_TIMESTAMP_US", "Column", "fit_batch"]
