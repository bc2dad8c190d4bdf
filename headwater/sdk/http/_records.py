"""Page records into typed Arrow batches on the reading thread's side, in bulk.

Why a batch per page group rather than dicts: an HTTP stream yields thousands
of small, regular JSON objects, and typing them value by value in Python was,
at 100 records a page, the largest CPU cost of a page after the HTTP exchange
itself.  The common page is simpler than the general case: every record is a
``dict`` whose keys are all columns of the stream.  For those,
:func:`records_batch` builds the batch on the reading thread with the engine's
own function, :func:`headwater.table_schema.batch_from_records`, which types
plain dicts in bulk (Arrow reads the records as one struct in C++ and casts its
columns; only a column it cannot give exactly goes value by value), and the
notes of misfit values travel in the reader-notes column the engine merges.
Records outside the common case (a key the schema does not have, a record that
is not a dict, reader notes of their own) are not handled here:
:func:`records_batch` returns ``None`` and the caller yields the dicts for the
engine's general path.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pyarrow as pa

from headwater.table_schema import NOTES_TYPE, READER_NOTES, batch_from_plain_records

__all__ = ["records_batch"]

def records_batch(records: Sequence[Any], schema: pa.Schema) -> pa.RecordBatch | None:
    """``records`` as one batch of ``schema``'s columns, or ``None`` outside the common case.

    The columns and notes are the engine's own (:func:`batch_from_plain_records`); values
    that do not fit their column are null with a note on their row, in the
    ``_hw_notes`` column (present only when some column needed them).
    """
    if not records or not all(type(record) is dict for record in records):
        return None
    if READER_NOTES in schema.names:
        return None
    if not set(schema.names).issuperset(set().union(*records)):
        return None  # keys outside the schema (or reader notes): the engine notes them
    columns, notes = batch_from_plain_records(records, schema)
    fields = list(schema)
    if notes.any():
        columns.append(notes.array())
        fields.append(pa.field(READER_NOTES, NOTES_TYPE))
    return pa.RecordBatch.from_arrays(columns, schema=pa.schema(fields))
