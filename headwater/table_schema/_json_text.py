"""Columns of JSON text: open values kept as text, the source's own bytes where a
reader still has them (:class:`JsonText`), anything else serialized compactly.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

import pyarrow as pa

from headwater.table_schema._meta import RowNotes, _clip
from headwater.table_schema._values import python_values


class JsonText(str):
    """A value that already is JSON text (a source's own bytes for it), kept as it is.

    A reader that still has a record's raw bytes puts ``JsonText`` in the
    record for its open columns; any other value is serialized by
    :func:`to_json_text`.  In an Arrow batch a JSON-text column of type string
    is read as JSON text already (the reader's contract), so only dict records
    need the mark: there a plain ``str`` is a JSON string value.
    """

    __slots__ = ()


def to_json_text(value: Any) -> str:
    """``value`` as JSON text: as it is when it is :class:`JsonText`, else serialized
    compactly with its keys in the order the record has them (never re-sorted) and
    non-ASCII characters as they are.  What a dict lost of the source's text (number
    formatting, spacing) it cannot give back: readers that have the bytes pass them.

    Raises ``ValueError`` for what JSON cannot hold (NaN, infinities).
    """
    if isinstance(value, JsonText):
        return str(value)
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"), allow_nan=False,
                      default=str)


def json_text_values(name: str, values: Sequence[Any], notes: RowNotes) -> pa.Array:
    """A JSON-text column from Python values; a value JSON cannot hold is null plus a note."""
    out: list[str | None] = []
    for row, value in enumerate(values):
        if value is None:
            out.append(None)
            continue
        try:
            out.append(to_json_text(value))
        except (ValueError, TypeError, RecursionError) as exc:
            out.append(None)
            notes[row].append({"field": name, "reason": f"not representable as JSON: {exc}",
                               "value": _clip(value)})
    return pa.array(out, type=pa.string())


def json_text_column(name: str, column: pa.Array | pa.ChunkedArray,
                     notes: RowNotes) -> pa.Array:
    """A reader's column for a JSON-text field: a string column is JSON text already
    (kept byte for byte); any other type (a struct Arrow inferred, numbers) is
    serialized value by value."""
    if isinstance(column, pa.ChunkedArray):
        column = column.combine_chunks()
    if pa.types.is_string(column.type) or pa.types.is_large_string(column.type):
        return column.cast(pa.string())
    if pa.types.is_null(column.type):
        return pa.nulls(len(column), pa.string())
    return json_text_values(name, python_values(column), notes)


__all__ = ["JsonText", "json_text_column", "json_text_values", "to_json_text"]
