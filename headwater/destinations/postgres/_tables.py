"""A stream's table: created from its Arrow columns, evolved by ``ALTER TABLE``, or refused.

A table Headwater created (it has every ``_hw_*`` column) gains the stream's new
columns (``ALTER TABLE ... ADD COLUMN``) and keeps the types of the ones it
has; one someone else created is taken only when each shared column holds
every value of the stream's (``_existing_table.py``), before anything changes.
``append_dedup`` needs a unique index on the primary key for ``ON CONFLICT``:
``NULLS NOT DISTINCT`` (PostgreSQL 15+), since a null key is a key like any
other in Headwater's merge rule.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from typing import Any

import psycopg
import pyarrow as pa

from headwater.destinations._existing_table import is_headwater_table, misfits, refuse
from headwater.destinations.postgres._copy import quoted
from headwater.destinations.postgres._fit import Column
from headwater.destinations.postgres._types import TableColumn, pg_type, written_type
from headwater.errors import DestinationError
from headwater.table_schema import META_FIELDS, VARIANT, json_kind


def qualified(schema: str, table: str) -> str:
    return f"{quoted(schema)}.{quoted(table)}"


def columns_of(conn: psycopg.Connection[Any], schema: str, table: str) -> list[TableColumn]:
    """The table's columns in order (empty: no such table)."""
    rows = conn.execute(
        "SELECT a.attname, format_type(a.atttypid, a.atttypmod), NOT a.attnotnull "
        "FROM pg_attribute a JOIN pg_class c ON c.oid = a.attrelid "
        "JOIN pg_namespace n ON n.oid = c.relnamespace "
        "WHERE n.nspname = %s AND c.relname = %s AND a.attnum > 0 AND NOT a.attisdropped "
        "ORDER BY a.attnum", [schema, table]).fetchall()
    return [TableColumn(str(n), str(t), bool(nullable)) for n, t, nullable in rows]


def refuse_foreign(columns: list[TableColumn], data_schema: pa.Schema, where: str,
                   stream: str) -> None:
    """Raise a ConfigError when an existing table is not Headwater's and cannot take the
    stream's values (``data_schema``, its data columns)."""
    table = pa.schema([c.arrow_field() for c in columns])
    if not columns or is_headwater_table(table.names):
        return
    refuse(misfits(table, pa.schema(META_FIELDS + list(data_schema)), adds_nested_fields=False),
           table=f"PostgreSQL table {where}", stream=stream)


def prepare_table(conn: psycopg.Connection[Any], schema: str, table: str,
                  data_schema: pa.Schema, stream: str, *, extra: Sequence[pa.Field] = (),
                  ) -> tuple[pa.Schema, list[Column], list[str]]:
    """Create or evolve the table; the data schema to write with, the COPY's columns, and
    the table's columns this stream does not write.  ``extra`` columns (a history
    table's validity) are the table's, filled by the commit's SQL, never COPYed."""
    if conn.execute("SELECT to_regnamespace(%s)", [schema]).fetchone() == (None,):
        conn.execute(f"CREATE SCHEMA IF NOT EXISTS {quoted(schema)}")
    existing = columns_of(conn, schema, table)
    target = qualified(schema, table)
    wanted = list(META_FIELDS) + list(data_schema) + list(extra)
    if not existing:
        definitions = ", ".join(
            f"{quoted(f.name)} {pg_type(f)}{'' if f.nullable else ' NOT NULL'}" for f in wanted)
        conn.execute(f"CREATE TABLE {target} ({definitions})")
        existing = columns_of(conn, schema, table)
    else:
        refuse_foreign(existing, data_schema, f"{schema}.{table}", stream)
        have = {c.name for c in existing}
        for field in wanted:
            if field.name not in have:
                conn.execute(f"ALTER TABLE {target} ADD COLUMN {quoted(field.name)} "
                             f"{pg_type(field)}")
        existing = columns_of(conn, schema, table)
    by_name = {c.name: c for c in existing}
    prepared = pa.schema([written_type(f, by_name[f.name]) for f in data_schema])
    written = list(META_FIELDS) + list(prepared)
    copy_columns = [Column(f.name, by_name[f.name].type, json_text=json_kind(f) == VARIANT,
                           max_length=by_name[f.name].max_length) for f in written]
    names = {f.name for f in written} | {f.name for f in extra}
    unwritten = [c.name for c in existing if c.name not in names]
    return prepared, copy_columns, unwritten


def ensure_key(conn: psycopg.Connection[Any], schema: str, table: str,
               keys: Sequence[str], stream: str) -> None:
    """A unique index on the primary key (nulls equal), for ``INSERT ... ON CONFLICT``."""
    if not keys:
        raise DestinationError("append_dedup needs a primary key", stream=stream)
    digest = hashlib.sha256("\0".join([table, *keys]).encode()).hexdigest()[:16]
    name = f"hw_key_{digest}"
    if conn.execute("SELECT to_regclass(%s)", [f"{quoted(schema)}.{quoted(name)}"]).fetchone() \
            != (None,):
        return
    try:
        with conn.transaction():
            conn.execute(f"CREATE UNIQUE INDEX {quoted(name)} ON {qualified(schema, table)} "
                         f"({', '.join(quoted(k) for k in keys)}) NULLS NOT DISTINCT")
    except psycopg.errors.UniqueViolation as exc:
        raise DestinationError(
            f"table {schema}.{table} holds more than one row of some primary key "
            f"({', '.join(keys)}), so append_dedup cannot keep one row per key in it: remove "
            "the duplicates (or write the stream to another table) and sync again",
            stream=stream) from exc


__all__ = ["columns_of", "ensure_key", "prepare_table", "qualified", "refuse_foreign"]
