"""Discover: tables and views with their columns, types, primary keys and cursor candidates.

One query over ``pg_catalog`` (not ``information_schema``, which hides
columns the role cannot select and has no typmod), run on the driver.  The
result is plain data (:class:`TableInfo`) so streams pickle small.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import psycopg

from headwater.connectors._table_columns import TableColumns
from headwater.connectors.postgres._types import ColumnType, as_variant, map_type

__all__ = ["ColumnInfo", "TableInfo", "discover_tables"]


@dataclass(frozen=True)
class ColumnInfo:
    name: str
    type: ColumnType
    nullable: bool


@dataclass(frozen=True)
class TableInfo(TableColumns):
    schema: str
    name: str
    kind: str  # "table", "view", "materialized view", "partitioned table", "foreign table"
    columns: tuple[ColumnInfo, ...]
    primary_key: tuple[str, ...] = ()
    #: rows PostgreSQL estimates (``pg_class.reltuples``; -1 when never analysed).
    estimated_rows: int = -1
    notes: tuple[str, ...] = field(default=())

    @property
    def unmapped(self) -> list[str]:
        return [f"{c.name} ({c.type.pg_type})" for c in self.columns if not c.type.mapped]


_KINDS = {"r": "table", "v": "view", "m": "materialized view", "p": "partitioned table",
          "f": "foreign table"}

_QUERY = """
SELECT n.nspname, c.relname, c.relkind, c.reltuples::bigint,
       a.attname, a.attnotnull, a.atttypmod, a.attndims,
       bt.typname, bt.typtype, et.typname AS element,
       CASE WHEN bt.typtype = 'e' THEN
         (SELECT array_agg(e.enumlabel ORDER BY e.enumsortorder) FROM pg_enum e
          WHERE e.enumtypid = bt.oid) END AS labels,
       (SELECT array_agg(k.attname ORDER BY array_position(i.indkey::int2[], k.attnum))
        FROM pg_index i JOIN pg_attribute k ON k.attrelid = i.indrelid
             AND k.attnum = ANY(i.indkey)
        WHERE i.indrelid = c.oid AND i.indisprimary) AS pk
FROM pg_class c
JOIN pg_namespace n ON n.oid = c.relnamespace
JOIN pg_attribute a ON a.attrelid = c.oid AND a.attnum > 0 AND NOT a.attisdropped
JOIN pg_type t ON t.oid = a.atttypid
-- a domain is read as its base type
JOIN pg_type bt ON bt.oid = CASE WHEN t.typtype = 'd' THEN t.typbasetype ELSE t.oid END
LEFT JOIN pg_type et ON et.oid = bt.typelem AND bt.typcategory = 'A'
WHERE n.nspname = ANY(%(schemas)s) AND c.relkind IN ('r', 'v', 'm', 'p', 'f')
  AND NOT c.relispartition
  AND has_table_privilege(c.oid, 'SELECT')
ORDER BY n.nspname, c.relname, a.attnum
"""


def discover_tables(conn: psycopg.Connection[Any], schemas: list[str],
                    json_as: str = "text") -> list[TableInfo]:
    """Every readable table and view of ``schemas``, columns in table order; json and
    jsonb columns typed as VARIANT when ``json_as`` is ``"variant"``."""
    typed = as_variant if json_as == "variant" else (lambda column: column)
    rows = conn.execute(_QUERY, {"schemas": schemas}).fetchall()
    grouped: dict[tuple[str, str], list[Any]] = {}
    for row in rows:
        grouped.setdefault((row[0], row[1]), []).append(row)
    tables = []
    for (schema, name), cols in grouped.items():
        first = cols[0]
        columns = tuple(
            ColumnInfo(name=r[4], nullable=not r[5],
                       type=typed(map_type(r[8], r[9], r[6], element=r[10],
                                           enum_labels=r[11], ndims=r[7])))
            for r in cols)
        tables.append(TableInfo(schema=schema, name=name, kind=_KINDS[first[2]],
                                columns=columns, primary_key=tuple(first[12] or ()),
                                estimated_rows=int(first[3])))
    return tables
