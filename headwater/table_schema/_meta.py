"""The metadata columns every table has, and the notes a row carries in ``_hw_notes``.

A value that does not fit its column becomes null and leaves a note
``{field, reason, value}`` in its row: never dropped silently, never fatal to the
sync.  :class:`RowNotes` keeps a batch's notes sparse (almost no row has one), and
:func:`_clip` bounds what a note keeps of a value.
"""

from __future__ import annotations

import decimal
import uuid
from collections.abc import Iterable
from typing import Any, Protocol

import numpy as np
import pyarrow as pa

from headwater import json_numbers
from headwater.json_numbers import JsonFloat

UTC_TIMESTAMP = pa.timestamp("us", tz="UTC")


LOCAL_TIMESTAMP = pa.timestamp("us")


NOTE_TYPE = pa.struct([("field", pa.string()), ("reason", pa.string()), ("value", pa.string())])


NOTES_TYPE = pa.list_(NOTE_TYPE)


#: Metadata columns, first in every table so Delta always keeps statistics on them.
META_FIELDS: list[pa.Field] = [
    pa.field("_hw_raw_id", pa.string(), nullable=False),
    pa.field("_hw_extracted_at", UTC_TIMESTAMP, nullable=False),
    pa.field("_hw_run_id", pa.string(), nullable=False),
    pa.field("_hw_partition_id", pa.string(), nullable=False),
    pa.field("_hw_checkpoint", pa.int64(), nullable=False),
    pa.field("_hw_notes", NOTES_TYPE),
]


META_NAMES = [f.name for f in META_FIELDS]


def unwritten_columns(existing: Iterable[str], data_schema: pa.Schema) -> list[str]:
    """The columns of a table (``existing``, in its order) that neither the metadata
    columns nor ``data_schema`` write: what a destination's ``unwritten_columns`` says."""
    written = {*META_NAMES, *data_schema.names}
    return [name for name in existing if name not in written]


#: Notes keep at most this much of a misfit value: enough to debug, bounded per row.
MAX_NOTE_VALUE = 1000


#: A reader may attach notes to its own rows (a line it could not parse, a ragged
#: CSV row) in a column or dict key of this name, of :data:`NOTES_TYPE` shape; they are
#: merged with the notes the engine writes, so such rows count as rejected too.
READER_NOTES = "_hw_notes"


Note = dict[str, str]


class RowNotes:
    """The notes of a batch's rows, kept sparse: ``notes[row]`` is that row's list.

    Almost no row has a note, and one Python list per row cost about 0.6 µs a
    row, more than the rest of the engine's per-batch work together
    (bench/RESULTS.md); here a row's list exists only once something is noted.
    """

    def __init__(self, length: int = 0) -> None:
        self._length = length
        self._rows: dict[int, list[Note]] = {}

    def __len__(self) -> int:
        return self._length

    def __getitem__(self, row: int) -> list[Note]:
        if not 0 <= row < self._length:
            raise IndexError(row)
        return self._rows.setdefault(row, [])

    def any(self) -> bool:
        """Whether some row has a note."""
        return any(self._rows.values())

    def to_lists(self) -> list[list[Note]]:
        """Every row's notes (empty lists included): for tests and small batches."""
        return [self._rows.get(row, []) for row in range(self._length)]

    def array(self) -> pa.Array:
        """Per-row notes, null for rows without any (so ``count(_hw_notes)`` counts misfits)."""
        noted = {row: found for row, found in self._rows.items() if found}
        if not noted:
            return pa.nulls(self._length, NOTES_TYPE)
        return pa.array([noted.get(row) for row in range(self._length)], type=NOTES_TYPE)


class NoteRows(Protocol):
    """Where notes go: a batch's :class:`RowNotes`, or a view of it for nested values."""

    def __getitem__(self, row: int) -> list[Note]: ...


class _NestedRows:
    """The notes of a nested column's values (a list's items): value ``i`` is on row ``rows[i]``."""

    def __init__(self, notes: NoteRows, rows: np.ndarray[Any, Any]) -> None:
        self._notes, self._rows = notes, rows

    def __getitem__(self, row: int) -> list[Note]:
        return self._notes[int(self._rows[row])]


def note_text(value: Any) -> str:
    """A value as a string column holds it, and as a note shows it: a string as it
    is (a UUID, which fastavro gives for Avro's ``uuid``, as its text), any other
    value as JSON with sorted keys."""
    if isinstance(value, str):
        return value
    if isinstance(value, JsonFloat):
        return value.text  # as the source wrote it, not the float's repr
    if isinstance(value, decimal.Decimal):  # its digits, as Arrow's cast writes them
        plain = value.is_finite() and abs(value.adjusted()) <= MAX_NOTE_VALUE
        return format(value, "f") if plain else str(value)
    if isinstance(value, uuid.UUID):
        return str(value)
    return json_numbers.dumps(value, default=str, sort_keys=True)


def _clip(value: Any) -> str:
    text = note_text(value)
    return text if len(text) <= MAX_NOTE_VALUE else text[:MAX_NOTE_VALUE] + "…"


__all__ = ["LOCAL_TIMESTAMP", "MAX_NOTE_VALUE", "META_FIELDS", "META_NAMES", "NOTES_TYPE",
           "NOTE_TYPE", "READER_NOTES", "UTC_TIMESTAMP", "Note", "NoteRows", "RowNotes",
           "note_text", "unwritten_columns"]
