"""Discover: tables and views with their columns, types, primary keys and cursor candidates.

Three queries over ``information_schema`` (tables, columns, key columns; MariaDB's
JSON checks when the server has them), run on the driver.  The result is plain
data (:class:`TableInfo`) so streams pickle small.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from headwater.connectors.mysql._types import ColumnType, map_type

__all__ = ["ColumnInfo", "TableInfo", "discover_tables"]


@dataclass(frozen=True)
class ColumnInfo:
    name: str
    type: ColumnType
    nullable: bool


@dataclass(frozen=True)
class TableInfo:
    database: str
    name: str
    kind: str  # "table" or "view"
    columns: tuple[ColumnInfo, ...]
    primary_key: tuple[str, ...] = ()
    #: rows the server estimates (``TABLE_ROWS``; -1 when unknown, as for views).
    estimated_rows: int = -1

    def column(self, name: str) -> ColumnInfo | None:
        return next((c for c in self.columns if c.name == name), None)

    @property
    def cursor_candidates(self) -> list[str]:
        """Columns that could be an incremental cursor (integer or date-time columns)."""
        return [c.name for c in self.columns if c.type.cursor_kind is not None]

    @property
    def unmapped(self) -> list[str]:
        return [f"{c.name} ({c.type.mysql_type})" for c in self.columns if not c.type.mapped]


_TABLES = """
SELECT TABLE_NAME, TABLE_TYPE, TABLE_ROWS FROM information_schema.TABLES
WHERE TABLE_SCHEMA = %s ORDER BY TABLE_NAME
"""
_COLUMNS = """
SELECT TABLE_NAME, COLUMN_NAME, DATA_TYPE, COLUMN_TYPE, IS_NULLABLE,
       COALESCE(NUMERIC_PRECISION, 0), COALESCE(NUMERIC_SCALE, 0)
FROM information_schema.COLUMNS WHERE TABLE_SCHEMA = %s
ORDER BY TABLE_NAME, ORDINAL_POSITION
"""
_KEYS = """
SELECT TABLE_NAME, COLUMN_NAME FROM information_schema.KEY_COLUMN_USAGE
WHERE TABLE_SCHEMA = %s AND CONSTRAINT_NAME = 'PRIMARY'
ORDER BY TABLE_NAME, ORDINAL_POSITION
"""
#: MariaDB's JSON is LONGTEXT with a ``json_valid(col)`` check named after the column.
_JSON_CHECKS = """
SELECT TABLE_NAME, CONSTRAINT_NAME FROM information_schema.CHECK_CONSTRAINTS
WHERE CONSTRAINT_SCHEMA = %s AND LOWER(CHECK_CLAUSE) LIKE 'json_valid(%%'
"""


def discover_tables(conn: Any, database: str, only: list[str] | None = None
                    ) -> list[TableInfo]:
    """Every table and view of ``database`` the user can see (or those in ``only``),
    columns in table order."""
    with conn.cursor() as cursor:
        cursor.execute(_TABLES, [database])
        tables = [(r[0], r[1], r[2]) for r in cursor.fetchall()]
        cursor.execute(_COLUMNS, [database])
        columns = cursor.fetchall()
        cursor.execute(_KEYS, [database])
        keys = cursor.fetchall()
        try:
            cursor.execute(_JSON_CHECKS, [database])
            json_checks = {(r[0], r[1]) for r in cursor.fetchall()}
        except Exception:  # MySQL before 8.0.16 has no CHECK_CONSTRAINTS: no MariaDB JSON
            json_checks = set()
    by_table: dict[str, list[ColumnInfo]] = {}
    for table, name, data_type, column_type, nullable, precision, scale in columns:
        kind = map_type(str(data_type), str(column_type), int(precision), int(scale),
                        is_json=(table, name) in json_checks)
        by_table.setdefault(table, []).append(ColumnInfo(name, kind, nullable == "YES"))
    primary: dict[str, list[str]] = {}
    for table, name in keys:
        primary.setdefault(table, []).append(name)
    wanted = set(only or ())
    return [TableInfo(database=database, name=name,
                      kind="view" if "VIEW" in str(kind) else "table",
                      columns=tuple(by_table.get(name, ())),
                      primary_key=tuple(primary.get(name, ())),
                      estimated_rows=-1 if rows is None else int(rows))
            for name, kind, rows in tables
            if name in by_table and (not wanted or name in wanted)]
