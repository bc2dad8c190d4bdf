"""Planning: split a table into key ranges (full refresh) or cursor windows (incremental).

Runs on the driver with one short psycopg connection.  Every partition is a
half-open range ``[lo, hi)`` of one column, so two partitions never share a
row and together they cover the whole range: a row whose value equals a cut
belongs to the upper partition only.

Full refresh splits on the single integer primary key (or a configured
column) into equal-width ranges between its bounds; the first and last ranges
are open-ended, so rows outside the bounds seen at plan time are still read.
A table with no usable column is one partition.

Incremental reads cut the cursor's gaps at quantiles of the cursor column
(``percentile_disc``), so partitions hold about the same number of rows even
when the values are skewed.  The **tie rule** (README, "PostgreSQL source"):

* the plan reads up to ``until = M + 1 unit``, where ``M`` is the largest cursor
  value visible when planning (1 unit: 1 for integers, 1 microsecond for
  timestamps, PostgreSQL's resolution), so every row visible with cursor
  ``<= M`` is read;
* a sync also reads ``[M_prev, M_prev + 1 unit)`` again, the last value the
  previous sync covered: rows with that value committed after the previous
  sync planned are not lost, and the rows it already read come again and are
  removed by ``append_dedup`` (same primary key, same cursor: one row).

Within one sync windows never overlap, so a row is read once; across syncs
only the rows equal to the previous high value are read twice.  A row is lost
only if it commits later with a cursor value *below* the previous high value,
which breaks the contract of a cursor column (it must only grow).
"""

from __future__ import annotations

import itertools
import math
from typing import Any

import psycopg
from psycopg import sql

from headwater.connectors.postgres._catalog import TableInfo
from headwater.sdk import ConcurrentCursor, StateConverter

__all__ = ["cursor_windows", "key_ranges", "typed_value"]


def _relation(table: TableInfo) -> sql.Composable:
    return sql.Identifier(table.schema, table.name)


def _count(conn: psycopg.Connection[Any], table: TableInfo) -> int:
    if table.estimated_rows >= 0:
        return table.estimated_rows
    row = conn.execute(sql.SQL("SELECT count(*) FROM {}").format(_relation(table))).fetchone()
    return int(row[0]) if row else 0


def partition_count(rows: int, rows_per_partition: int, max_partitions: int) -> int:
    return max(1, min(max_partitions, math.ceil(rows / rows_per_partition)))


def key_ranges(conn: psycopg.Connection[Any], table: TableInfo, column: str | None,
               rows_per_partition: int, max_partitions: int) -> list[dict[str, Any]]:
    """Params of full-refresh partitions: ``{}`` (whole table) or ``{column, lo, hi}``."""
    if column is None:
        return [{}]
    ident = sql.Identifier(column)
    row = conn.execute(sql.SQL("SELECT min({}), max({}) FROM {}").format(
        ident, ident, _relation(table))).fetchone()
    if row is None or row[0] is None:
        return [{}]
    low, high = int(row[0]), int(row[1])
    count = min(partition_count(_count(conn, table), rows_per_partition, max_partitions),
                high - low + 1)
    width = (high - low + 1) / count
    cuts = sorted({low + round(width * i) for i in range(1, count)})
    bounds: list[int | None] = [None, *cuts, None]
    return [{"column": column, "lo": a, "hi": b} for a, b in itertools.pairwise(bounds)]


def cursor_windows(conn: psycopg.Connection[Any], table: TableInfo, column: str,
                   cursor_type: str, cursor: ConcurrentCursor,
                   rows_per_partition: int, max_partitions: int) -> list[tuple[Any, Any]]:
    """Half-open cursor windows (stored form) covering the gaps and the tie re-read.

    ``cursor_type`` is the column's type name (``int8``, ``timestamptz``, ...).
    """
    converter = cursor.converter
    ident = sql.Identifier(column)
    row = conn.execute(sql.SQL("SELECT max({}) FROM {}").format(ident, _relation(table)))\
        .fetchone()
    if row is None or row[0] is None:
        return []
    top = converter.parse_record_value(row[0])
    until = converter.serialize(top + _unit(top, converter))
    gaps = [list(g) for g in cursor.gaps(until)]
    completed = cursor.completed_ranges()
    if completed:
        previous_end = converter.parse(completed[-1][1])
        if previous_end <= converter.parse(until):
            reread_start = converter.serialize(previous_end - _unit(previous_end, converter))
            if gaps and converter.parse(gaps[-1][0]) == previous_end:
                gaps[-1][0] = reread_start
            else:
                gaps.append([reread_start, completed[-1][1]])
    windows: list[tuple[Any, Any]] = []
    for low, high in gaps:
        windows += _cut(conn, table, ident, cursor_type, converter, low, high, rows_per_partition,
                        max_partitions)
    return windows


def _unit(value: Any, converter: StateConverter) -> Any:
    """The smallest step of a cursor value: 1, or PostgreSQL's 1 microsecond."""
    return 1 if isinstance(value, int) else converter.step(1e-6)


def _cut(conn: psycopg.Connection[Any], table: TableInfo, ident: sql.Identifier,
         cursor_type: str, converter: StateConverter, low: Any, high: Any,
         rows_per_partition: int, max_partitions: int) -> list[tuple[Any, Any]]:
    where = sql.SQL("{} >= {} AND {} < {}").format(
        ident, typed_value(cursor_type, sql.Placeholder("lo")),
        ident, typed_value(cursor_type, sql.Placeholder("hi")))
    params = {"lo": str(low), "hi": str(high)}
    row = conn.execute(sql.SQL("SELECT count(*) FROM {} WHERE {}").format(
        _relation(table), where), params).fetchone()
    rows = int(row[0]) if row else 0
    count = partition_count(rows, rows_per_partition, max_partitions)
    if count <= 1:
        return [(low, high)]
    fractions = [i / count for i in range(1, count)]
    row = conn.execute(sql.SQL(
        "SELECT percentile_disc(%(fractions)s::float8[]) WITHIN GROUP (ORDER BY {}) "
        "FROM {} WHERE {}").format(ident, _relation(table), where),
        {**params, "fractions": fractions}).fetchone()
    values = row[0] if row and row[0] else []
    lo_value, hi_value = converter.parse(low), converter.parse(high)
    cuts = sorted({v for v in (converter.parse_record_value(x) for x in values)
                   if lo_value < v < hi_value})
    bounds = [low, *(converter.serialize(c) for c in cuts), high]
    return list(itertools.pairwise(bounds))


def typed_value(cursor_type: str, value: sql.Composable) -> sql.Composable:
    """``value`` (a text parameter or setting) cast to the cursor or key column's type.

    Values always travel as text parameters and are cast on the server, so no
    value is ever spliced into SQL.  A ``timestamp`` (no time zone) column
    compares with the UTC wall-clock time of the stored ISO value.
    """
    if cursor_type == "timestamptz":
        return sql.SQL("({})::timestamptz").format(value)
    if cursor_type == "timestamp":
        return sql.SQL("(({})::timestamptz AT TIME ZONE 'UTC')").format(value)
    return sql.SQL("({})::bigint").format(value)
