"""Read one partition on an executor: one SELECT through connectorx, decoded into Arrow in Rust.

connectorx speaks MySQL's binary protocol and builds Arrow arrays itself: no
Python object per row or value.  Measured against PyMySQL with Arrow built from
its rows (bench/RESULTS.md, "MySQL source"): 300,000 rows of six columns in 0.45
to 0.8 s against 7.3 to 7.6 s, a tenth of the CPU.  Its stream holds one batch of
:data:`BATCH_ROWS` rows at a time, never the whole partition.

A partition is one statement, so InnoDB reads it from one consistent snapshot.
The reading session sets ``time_zone = '+00:00'`` (TIMESTAMP values arrive in
UTC) and an empty ``sql_mode`` (the query's literals read as written).  The few
Arrow types connectorx gives otherwise than the table's are cast here, column by
column and in bulk (:func:`conform`).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from headwater.connectors.mysql._catalog import ColumnInfo, TableInfo
from headwater.connectors.mysql._errors import SESSION_SETTINGS
from headwater.connectors.mysql._misfits import notes_from_misfits, select_columns
from headwater.connectors.mysql._sql import relation, window_conditions
from headwater.table_schema import READER_NOTES

__all__ = ["BATCH_ROWS", "conform", "partition_query", "read_arrow"]

#: Rows per record batch of connectorx's stream.
BATCH_ROWS = 65_536

_ARROW = {"decimal(20,0)": pa.decimal128(20, 0), "binary": pa.binary(),
          "utc": pa.timestamp("us", tz="UTC")}


def partition_query(table: TableInfo, bounds: Mapping[str, Any]) -> str:
    """The SELECT of one partition (see :func:`._sql.window_conditions` for ``bounds``);
    date and time columns with their misfit columns (:mod:`._misfits`)."""
    columns = ", ".join(select_columns(table.columns))
    query = f"SELECT {columns} FROM {relation(table)}"
    conditions = window_conditions(bounds)
    if conditions:
        query += " WHERE " + " AND ".join(conditions)
    return query


def conform(batch: pa.RecordBatch, columns: tuple[ColumnInfo, ...]) -> pa.RecordBatch:
    """``batch`` with each column in the Arrow type its mapping names (:mod:`._types`)."""
    arrays = []
    for index, column in enumerate(columns):
        array = batch.column(index)
        target = _ARROW.get(column.type.arrow or "")
        if target is not None and array.type != target:
            if pa.types.is_timestamp(array.type):
                # The session's time zone is UTC: the naive values are UTC wall clock.
                array = array.cast(pa.timestamp("us")).cast(target)
            else:
                array = pc.cast(array, target, safe=True)
        arrays.append(array)
    names = [c.name for c in columns]
    if READER_NOTES in batch.schema.names:
        arrays.append(batch.column(READER_NOTES))
        names.append(READER_NOTES)
    return pa.RecordBatch.from_arrays(arrays, names=names)


def read_arrow(url: str, query: str, columns: tuple[ColumnInfo, ...]
               ) -> Iterator[pa.RecordBatch]:
    """Stream the query's rows as record batches typed as the table's columns."""
    import connectorx as cx

    try:
        reader = cx.read_sql(url, query, return_type="arrow_stream", batch_size=BATCH_ROWS,
                             pre_execution_query=[s for s in SESSION_SETTINGS
                                                  if not s.startswith("SET NAMES")])
        for batch in reader:
            if batch.num_rows:
                yield conform(notes_from_misfits(batch, columns), columns)
    except BaseException as exc:
        # A value connectorx cannot decode is a Rust panic, raised as pyo3's
        # PanicException (a BaseException): an error of the read, not of the process.
        if type(exc).__name__ != "PanicException":
            raise
        raise RuntimeError(" ".join(str(exc).split())[:500]) from exc
