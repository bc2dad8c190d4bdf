"""Misfit columns: the text of values a column's table type cannot hold, beside the column.

A database source's reader may select, after each column that can hold such values,
a second column (named :data:`PREFIX` + the column's position) with the server's text
of the value where it does not fit, NULL where it does; the column itself gets NULL
there.  :func:`notes_from_misfits` turns those columns into the rows' ``_hw_notes``
("lose nothing": the value is the source's own text, and the row counts as rejected).
Used by the postgres source (infinite and BC dates, multi-dimensional arrays) and the
mysql source (zero and partial dates).
"""

from __future__ import annotations

from collections.abc import Callable

import pyarrow as pa

from headwater.table_schema import NOTES_TYPE, READER_NOTES, Note

__all__ = ["PREFIX", "notes_from_misfits"]

#: The name of the column that carries a column's misfit text (position in the table).
PREFIX = "_hw_misfit_"


def notes_from_misfits(batch: pa.RecordBatch, note: Callable[[int, str], Note]
                       ) -> pa.RecordBatch:
    """``batch`` without its misfit columns; where one holds text, a ``_hw_notes`` column
    of ``note(position, text)`` for each."""
    misfits = [name for name in batch.schema.names if name.startswith(PREFIX)]
    if not misfits:
        return batch
    found: dict[int, list[Note]] = {}
    for name in misfits:
        values = batch.column(name)
        if values.null_count == len(values):
            continue
        position = int(name[len(PREFIX):])
        for row, text in enumerate(values.to_pylist()):
            if text is not None:
                found.setdefault(row, []).append(note(position, text))
    kept = [name for name in batch.schema.names if not name.startswith(PREFIX)]
    batch = batch.select(kept)
    if found:
        notes = pa.array([found.get(row) for row in range(batch.num_rows)], type=NOTES_TYPE)
        batch = batch.append_column(READER_NOTES, notes)
    return batch
