"""Count one partition's window in PostgreSQL, with the checksum of its keys (``verify``).

One ``SELECT count(*), <checksum>`` over the same half-open window the reader
reads (:func:`._reader.partition_query`'s bounds, through the same
:func:`._partitioning.typed_value` casts), but without the boundary-key filters
of :mod:`._boundary`: those leave out rows an earlier partition read, while
verify asks what the window holds now, whoever read it.

The checksum is :mod:`headwater.key_checksum`'s, in SQL: each key column's
text (``col::text`` under the reading session's settings: ISO dates, UTC)
length-prefixed and concatenated, ``md5`` of it, its first 16 hex digits as a
``bit(64)`` read as a ``bigint`` (the same 64 bits, signed), summed as
``numeric`` (exact) and taken modulo 2^64.  Key columns of other types than
those with a canonical text give no checksum (count only).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import psycopg
from psycopg import sql

from headwater.connectors.postgres._catalog import TableInfo
from headwater.connectors.postgres._reader import window_conditions
from headwater.key_checksum import MODULUS
from headwater.sdk import WindowCount

__all__ = ["CANONICAL_TYPES", "count_window", "key_checksum_sql"]

#: Column types whose ``::text`` is the canonical text of :mod:`headwater.key_checksum`
#: (``bpchar`` is not: its text drops the padding the table keeps).
CANONICAL_TYPES = frozenset({"int2", "int4", "int8", "text", "varchar", "name", "citext",
                             "uuid", "date", "bool"})


def key_checksum_sql(key: tuple[str, ...]) -> sql.Composed:
    """The checksum aggregate of ``key``'s columns (see the module docs)."""
    parts = [sql.SQL("length({c}::text)::text || ':' || {c}::text").format(c=sql.Identifier(c))
             for c in key]
    text = sql.SQL(" || ").join(parts)
    hashed = sql.SQL("('x' || substr(md5({}), 1, 16))::bit(64)::bigint").format(text)
    modulus = sql.Literal(MODULUS)
    # mod(), not %: the query takes bind parameters, where % is psycopg's.
    return sql.SQL("mod(mod(coalesce(sum({h}::numeric), 0), {m}) + {m}, {m})").format(
        h=hashed, m=modulus)


def _checksum_key(table: TableInfo) -> tuple[str, ...] | None:
    """The table's primary key, if each of its columns has a canonical text."""
    columns = [table.column(name) for name in table.primary_key]
    if not columns or any(c is None or c.type.pg_type not in CANONICAL_TYPES for c in columns):
        return None
    return table.primary_key


def count_window(conn: psycopg.Connection[Any], table: TableInfo,
                 bounds: Mapping[str, Any]) -> WindowCount:
    """Rows of ``table`` within ``bounds`` (the reader's: ``column``, ``lo``, ``hi``,
    ``type``, ``null``; ``{}`` the whole table), and their keys' checksum."""
    key = _checksum_key(table)
    encoding = conn.execute("SHOW server_encoding").fetchone()
    if encoding is None or str(encoding[0]).upper() not in ("UTF8", "SQL_ASCII"):
        key = None  # md5 hashes the database's bytes: only UTF-8 ones are the table's
    checksum = key_checksum_sql(key) if key else sql.SQL("NULL")
    conditions, values = window_conditions(bounds, sql.Placeholder)
    where = sql.SQL(" WHERE {}").format(sql.SQL(" AND ").join(conditions)) \
        if conditions else sql.SQL("")
    query = sql.SQL("SELECT count(*), {} FROM {}{}").format(
        checksum, sql.Identifier(table.schema, table.name), where)
    row = conn.execute(query, values).fetchone()
    assert row is not None  # an aggregate always returns a row
    return WindowCount(int(row[0]), None if row[1] is None else int(row[1]))
