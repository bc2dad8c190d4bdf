"""Page records into typed Arrow batches on the reading thread's side, in bulk.

Why here and not in the engine: an HTTP stream yields thousands of small,
regular JSON objects, and the engine's general path for dict records
(:func:`headwater.table_schema.batch_from_records`) inspects every record and
every value in Python before Arrow sees them; at 100 records a page that was
the largest CPU cost of a page after the HTTP exchange itself.  The common
page is simpler than the general case: every record is a ``dict`` whose keys
are all columns of the stream.  For those, :func:`records_batch` hands each
column to Arrow in one call and lets the engine take the batch as it is.

The result is the one the engine would have produced from the same dicts: a
column Arrow accepts as a whole is exactly ``pa.array(values, type)`` (the
engine's own first attempt), a column it refuses goes through the engine's
:func:`~headwater.table_schema.coerce_values`, whose notes travel in the
reader-notes column the engine merges.  Records outside the common case
(a key the schema does not have, a record that is not a dict, reader notes of
their own) are not handled here: :func:`records_batch` returns ``None`` and
the caller yields the dicts for the engine's general path.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

import pyarrow as pa

from headwater.table_schema import NOTES_TYPE, READER_NOTES, RowNotes, coerce_values

__all__ = ["records_batch"]

#: What ``pa.array`` raises for values that do not fit a type (as the engine catches).
_MISFIT = (pa.ArrowInvalid, pa.ArrowTypeError, OverflowError, TypeError, ValueError,
           json.JSONDecodeError)


def records_batch(records: Sequence[Any], schema: pa.Schema) -> pa.RecordBatch | None:
    """``records`` as one batch of ``schema``'s columns, or ``None`` outside the common case.

    A key missing from a record is null in its column, as in the engine's
    path.  Values that do not fit their column are null with a note on their
    row, in the ``_hw_notes`` column (present only when some column needed them).
    """
    if not records or not all(type(record) is dict for record in records):
        return None
    if READER_NOTES in schema.names:
        return None
    if not set(schema.names).issuperset(set().union(*records)):
        return None  # keys outside the schema (or reader notes): the engine notes them
    notes: RowNotes | None = None  # made on the first misfit
    columns = []
    for field in schema:
        values = [record.get(field.name) for record in records]
        try:
            columns.append(pa.array(values, type=field.type))
        except _MISFIT:
            if notes is None:
                notes = RowNotes(len(records))
            columns.append(coerce_values(field.name, values, field.type, notes))
    fields = list(schema)
    if notes is not None:
        columns.append(notes.array())
        fields.append(pa.field(READER_NOTES, NOTES_TYPE))
    return pa.RecordBatch.from_arrays(columns, schema=pa.schema(fields))
