"""Zero and partial dates: values no date type holds, found by the server, landed as notes.

MySQL and MariaDB accept ``0000-00-00``, ``2024-00-15`` and ``2024-02-00`` in DATE,
DATETIME and TIMESTAMP columns unless ``sql_mode`` has ``NO_ZERO_DATE`` and
``NO_ZERO_IN_DATE`` (MariaDB's default has neither), and old tables hold them.  No
Spark, Arrow or Python date can, and connectorx fails the whole read on one.  So the
reader selects each such column twice (:func:`select_columns`): the value where its
year, month and day are all at least 1 (else NULL), and the server's text where they
are not (else NULL); :func:`headwater.connectors._misfit_columns.notes_from_misfits`
turns the second into the row's note ``{field, reason, value}``.
"""

from __future__ import annotations

from collections.abc import Iterable

import pyarrow as pa

from headwater.connectors._misfit_columns import PREFIX
from headwater.connectors._misfit_columns import notes_from_misfits as misfit_notes
from headwater.connectors.mysql._catalog import ColumnInfo
from headwater.connectors.mysql._types import quote_ident

__all__ = ["REASON", "notes_from_misfits", "select_columns"]

REASON = "a MySQL zero or partial date (year, month or day 0), which no date type holds"
_DATED = ("date", "datetime", "timestamp")


def _dated(column: ColumnInfo) -> bool:
    return column.type.mysql_type.startswith(_DATED)


def select_columns(columns: Iterable[ColumnInfo]) -> list[str]:
    """The reader's select list: each column's expression, and a misfit column after each
    date or time column."""
    selected: list[str] = []
    for index, column in enumerate(columns):
        if not _dated(column):
            selected.append(column.type.select(column.name))
            continue
        ident = quote_ident(column.name)
        fits = f"(YEAR({ident}) >= 1 AND MONTH({ident}) >= 1 AND DAYOFMONTH({ident}) >= 1)"
        selected.append(f"CASE WHEN NOT {fits} THEN NULL ELSE {ident} END AS {ident}")
        selected.append(f"CASE WHEN NOT {fits} THEN CAST({ident} AS CHAR) END "
                        f"AS {quote_ident(f'{PREFIX}{index}')}")
    return selected


def notes_from_misfits(batch: pa.RecordBatch, columns: tuple[ColumnInfo, ...]
                       ) -> pa.RecordBatch:
    """``batch`` without its misfit columns, their text as the rows' notes."""
    return misfit_notes(batch, lambda position, text: {
        "field": columns[position].name, "reason": REASON, "value": text})
