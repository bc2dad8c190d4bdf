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
when the values are skewed.  Which windows a sync reads (the **tie rule**, its
re-read of the previous top value and the boundary keys) is
:mod:`headwater.connectors._cursor_windows`'s, shared with the mysql source.
"""

from __future__ import annotations

import itertools
from typing import Any

import psycopg
from psycopg import sql

from headwater.connectors._cursor_windows import partition_count, plan_windows
from headwater.connectors.postgres._boundary import BoundaryCursor, key_expression
from headwater.connectors.postgres._catalog import TableInfo
from headwater.connectors.postgres._misfits import fits_condition
from headwater.errors import ConnectorError
from headwater.sdk import StateConverter

__all__ = ["cursor_windows", "key_ranges", "typed_value"]


def _relation(table: TableInfo) -> sql.Composable:
    return sql.Identifier(table.schema, table.name)


def _count(conn: psycopg.Connection[Any], table: TableInfo) -> int:
    if table.estimated_rows >= 0:
        return table.estimated_rows
    row = conn.execute(sql.SQL("SELECT count(*) FROM {}").format(_relation(table))).fetchone()
    return int(row[0]) if row else 0


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


def _top_value(conn: psycopg.Connection[Any], table: TableInfo, column: str,
               cursor_type: str, stream: str) -> Any:
    """The cursor column's largest value, None for an empty table.

    A date or timestamp cursor whose largest value is ``infinity`` or past year
    9999 (or before year 1) fails the plan, naming the value: no window could end
    after it, so its rows would never be read, and no state could hold it.
    """
    ident = sql.Identifier(column)
    if cursor_type not in ("date", "timestamp", "timestamptz"):
        row = conn.execute(sql.SQL("SELECT max({}) FROM {}").format(ident, _relation(table)))\
            .fetchone()
        return None if row is None else row[0]
    top = sql.Identifier("top")
    row = conn.execute(sql.SQL(
        "SELECT CASE WHEN {} THEN top END, top::text FROM (SELECT max({}) AS top FROM {}) m"
    ).format(fits_condition(cursor_type, top), ident, _relation(table))).fetchone()
    if row is None or row[1] is None:
        return None
    if row[0] is None:
        raise ConnectorError(
            f"stream {stream}: the cursor column {column} holds {row[1]}, outside what an "
            "incremental cursor can order (finite values in years 1 to 9999): its rows would "
            "never be read; sync this table with full_refresh, or name another cursor "
            "column in cursor_fields")
    return row[0]


def cursor_windows(conn: psycopg.Connection[Any], table: TableInfo, column: str,
                   cursor_type: str, cursor: BoundaryCursor,
                   rows_per_partition: int, max_partitions: int, *, keys_limit: int,
                   exact_append: bool, stream: str) -> list[dict[str, Any]]:
    """Params of the cursor windows (stored form) covering the gaps and the tie re-read
    (:func:`headwater.connectors._cursor_windows.plan_windows`, asking PostgreSQL).

    ``cursor_type`` is the column's type name (``int8``, ``timestamptz``, ...).
    """
    return plan_windows(_Queries(conn, table, column, cursor_type, cursor.converter,
                                 rows_per_partition, max_partitions, stream),
                        cursor, keys_limit=keys_limit, has_primary_key=bool(table.primary_key),
                        exact_append=exact_append, stream=stream)


class _Queries:
    """:class:`headwater.connectors._cursor_windows.WindowQueries` in PostgreSQL."""

    def __init__(self, conn: psycopg.Connection[Any], table: TableInfo, column: str,
                 cursor_type: str, converter: StateConverter, rows_per_partition: int,
                 max_partitions: int, stream: str) -> None:
        self.conn, self.table, self.column, self.cursor_type = conn, table, column, cursor_type
        self.converter, self.stream = converter, stream
        self.rows_per_partition, self.max_partitions = rows_per_partition, max_partitions

    def top_value(self) -> Any:
        return _top_value(self.conn, self.table, self.column, self.cursor_type, self.stream)

    def keys_at(self, value: Any, limit: int) -> list[str] | None:
        return _keys_at(self.conn, self.table, sql.Identifier(self.column), self.cursor_type,
                        value, limit)

    def cut(self, low: Any, high: Any) -> list[tuple[Any, Any]]:
        return _cut(self.conn, self.table, sql.Identifier(self.column), self.cursor_type,
                    self.converter, low, high, self.rows_per_partition, self.max_partitions)


def _keys_at(conn: psycopg.Connection[Any], table: TableInfo, ident: sql.Identifier,
             cursor_type: str, value: Any, limit: int) -> list[str] | None:
    """The keys of the rows at cursor ``value``, or ``None`` (no primary key, over ``limit``)."""
    if not table.primary_key:
        return None
    key = key_expression(table.primary_key)
    rows = conn.execute(sql.SQL("SELECT {} FROM {} WHERE {} = {} ORDER BY 1 LIMIT %(n)s").format(
        key, _relation(table), ident, typed_value(cursor_type, sql.Placeholder("v"))),
        {"v": str(value), "n": limit + 1}).fetchall()
    if len(rows) > limit:
        return None
    return [str(r[0]) for r in rows]


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
