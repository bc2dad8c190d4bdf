"""Values a column's table type cannot hold: found by PostgreSQL, landed as notes.

Why this exists: ADBC's binary COPY decoder is exact for the values the table
holds, but not around them, and silently so (the generated differential test
``tests/integration/connectors/postgres/test_postgres_differential.py`` found it):

* ``date``/``timestamp``/``timestamptz`` ``infinity`` and ``-infinity`` (the
  largest and smallest integers on the wire), and timestamps past about year
  292,000, overflow when the driver shifts PostgreSQL's 2000 epoch to 1970: they
  arrive as arbitrary instants thousands of years BC.  Values before year 1 or
  after 9999 decode exactly but hold nothing a Spark date or timestamp (nor a
  Python one, as change data capture reads them) can represent.
* PostgreSQL does not enforce an array column's declared dimensions: a
  ``{{1,2},{3,4}}`` in an ``integer[]`` column arrives flattened to ``[1,2,3,4]``.

So the reader selects each such column twice: the value where it fits (else
NULL), and PostgreSQL's text where it does not (else NULL, costing four bytes a
row on the wire).  :func:`notes_from_misfits` turns the second into the row's
note ``{field, reason, value}`` (``lose nothing``: the value is the source's own
text, and the row counts as rejected).  Change data capture reads pgoutput's text
and notes the same values with the same reason (:func:`misfit_text`).
"""

from __future__ import annotations

import re
from collections.abc import Iterable

import pyarrow as pa
from psycopg import sql

from headwater.connectors._misfit_columns import PREFIX
from headwater.connectors._misfit_columns import notes_from_misfits as misfit_notes
from headwater.connectors.postgres._catalog import ColumnInfo
from headwater.table_schema import Note

__all__ = ["fits_condition", "misfit_note", "misfit_text", "notes_from_misfits",
           "select_columns"]

#: The instants a table's date and timestamp columns hold: years 1 to 9999 (UTC).
_LOW, _HIGH = "0001-01-01 00:00:00", "10000-01-01 00:00:00"
_DATE_TIMES = {"date": "date", "timestamp": "timestamp", "timestamptz": "timestamptz"}
_TEMPORAL_REASON = "PostgreSQL {kind} outside what the table holds (finite, years 1 to 9999)"
_ARRAY_REASON = "a multi-dimensional array; the column holds one-dimensional arrays"
#: An array's text with explicit bounds: ``[0:1]={7,8}``, ``[1:2][1:2]={{...}}``.
_BOUNDS = re.compile(r"^((?:\[[^\]]*\])+)=")


def _kind(column: ColumnInfo) -> str | None:
    """``"date"``/``"timestamp"``/``"timestamptz"``/``"array"`` for a column that may hold
    misfits (a typed one-dimensional list for arrays), else None."""
    if column.type.pg_type in _DATE_TIMES:
        return column.type.pg_type
    declared = column.type.schema.get("type")
    if not column.type.as_text and isinstance(declared, list) and "array" in declared:
        return "array"
    return None


def fits_condition(kind: str, ident: sql.Identifier) -> sql.Composable:
    """SQL true where the value of ``ident`` (a ``date``/``timestamp``/``timestamptz``,
    or ``array``) is one the table holds."""
    if kind == "array":
        return sql.SQL("coalesce(array_ndims({}), 1) = 1").format(ident)
    zone = "+00" if kind == "timestamptz" else ""
    return sql.SQL("({c} >= {low}::{t} AND {c} < {high}::{t})").format(
        c=ident, t=sql.SQL(kind), low=sql.Literal(_LOW + zone), high=sql.Literal(_HIGH + zone))


def select_columns(columns: Iterable[ColumnInfo]) -> list[sql.Composable]:
    """The reader's select list: each column's expression, a misfit column after each
    column that may hold misfits (see the module docs)."""
    selected: list[sql.Composable] = []
    for index, column in enumerate(columns):
        kind = _kind(column)
        if kind is None:
            selected.append(column.type.select(column.name))
            continue
        ident = sql.Identifier(column.name)
        fits = fits_condition(kind, ident)
        selected.append(sql.SQL("CASE WHEN NOT {} THEN NULL ELSE {} END AS {}").format(
            fits, ident, ident))
        selected.append(sql.SQL("CASE WHEN NOT {} THEN {}::text END AS {}").format(
            fits, ident, sql.Identifier(f"{PREFIX}{index}")))
    return selected


def misfit_note(column: ColumnInfo, text: str) -> Note:
    """The note of a value of ``column`` the table cannot hold (its PostgreSQL text)."""
    kind = _kind(column)
    reason = _ARRAY_REASON if kind == "array" else _TEMPORAL_REASON.format(kind=kind)
    return {"field": column.name, "reason": reason, "value": text}


def misfit_text(column: ColumnInfo, text: str) -> bool:
    """Whether PostgreSQL's text of a value of ``column`` (``DateStyle=ISO``,
    ``TimeZone=UTC``) is one the reader's guard refuses: how change data capture,
    which reads text, tells the same values apart."""
    kind = _kind(column)
    if kind is None:
        return False
    if kind == "array":
        bounds = _BOUNDS.match(text)
        if bounds is not None:
            return bounds.group(1).count("[") > 1
        return text.startswith("{{")
    if text in ("infinity", "-infinity") or text.endswith(" BC"):
        return True
    return len(text.split("-", 1)[0]) > 4  # a year past 9999


def notes_from_misfits(batch: pa.RecordBatch, columns: tuple[ColumnInfo, ...]) -> pa.RecordBatch:
    """``batch`` without its misfit columns; where one holds text, a ``_hw_notes`` column."""
    return misfit_notes(batch, lambda position, text: misfit_note(columns[position], text))
