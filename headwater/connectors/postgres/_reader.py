"""Read one partition on an executor: ``COPY (SELECT ...) TO STDOUT (FORMAT binary)`` into Arrow.

ADBC's PostgreSQL driver runs a query without bind parameters as a binary
COPY and decodes it straight into Arrow record batches, streaming (one batch
of about 16 MB at a time, never the whole partition).  It was chosen over
Spark's JDBC reader and over psycopg by measurement (bench/RESULTS.md,
"PostgreSQL source").

COPY cannot take bind parameters, so the partition's bounds are first stored
in transaction-local settings with ``set_config($1, $2, true)`` (bound as
parameters) and the query reads them back with ``current_setting(...)``: no
value is ever spliced into SQL, and identifiers are quoted by psycopg.

Each partition reads in its own ``REPEATABLE READ, READ ONLY`` transaction: one
consistent snapshot per partition, and a read can never write.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator, Mapping
from typing import Any

import pyarrow as pa
from psycopg import sql

from headwater.connectors.postgres._boundary import (
    SEEN_AT,
    SEEN_KEYS,
    TOP_AT,
    TOP_KEYS,
    key_expression,
)
from headwater.connectors.postgres._catalog import TableInfo
from headwater.connectors.postgres._misfits import select_columns
from headwater.connectors.postgres._partitioning import typed_value
from headwater.connectors.postgres._types import SESSION_SETTINGS

__all__ = ["partition_query", "read_arrow", "window_conditions"]

#: ADBC's batch size hint: the reader holds about this much of a partition at a time.
BATCH_BYTES = 16 * 1024 * 1024


def _setting(name: str) -> sql.Composable:
    return sql.SQL("current_setting({})").format(sql.Literal(f"headwater.{name}"))


def partition_query(table: TableInfo, bounds: Mapping[str, Any],
                    extra: sql.Composable | None = None) -> tuple[str, dict[str, str]]:
    """The SELECT of one partition and the settings it reads its bounds from.

    ``bounds`` holds ``column``, ``lo``, ``hi`` (either may be ``None``:
    open-ended) and the column's ``type``; ``{}`` reads the whole table, and
    ``null: true`` the rows whose column is NULL.  A cursor window may add the
    boundary params of :mod:`._boundary` with the table's ``key`` columns:
    rows at ``top_at`` only with a key in ``top_keys``, rows at ``seen_at``
    only with a key not in ``seen_keys`` (each list one JSON text setting).
    ``extra`` adds constant columns (change data capture's LSN and flag).  Columns that
    may hold values the table cannot hold come with a misfit column each
    (:func:`._misfits.notes_from_misfits` turns them into notes).
    """
    columns = select_columns(table.columns)  # with the misfit columns of :mod:`._misfits`
    if extra is not None:
        columns.append(extra)
    query = sql.SQL("SELECT {} FROM {}").format(sql.SQL(", ").join(columns),
                                                sql.Identifier(table.schema, table.name))
    conditions, settings = window_conditions(bounds, _setting)
    column = bounds.get("column")
    if column and not bounds.get("null"):
        conditions += _key_conditions(bounds, sql.Identifier(column),
                                      str(bounds.get("type") or "int8"), settings)
    if conditions:
        query = sql.SQL("{} WHERE {}").format(query, sql.SQL(" AND ").join(conditions))
    return query.as_string(None), settings


def window_conditions(bounds: Mapping[str, Any], value: Callable[[str], sql.Composable]
                      ) -> tuple[list[sql.Composable], dict[str, str]]:
    """The conditions of a partition's ``column`` bounds (``lo``, ``hi``, ``null``; see
    :func:`partition_query`), and the text values they read through ``value(name)``
    (a setting for the reader's COPY, a bind parameter for a plain query)."""
    settings: dict[str, str] = {}
    conditions: list[sql.Composable] = []
    column = bounds.get("column")
    if not column:
        return conditions, settings
    ident = sql.Identifier(column)
    kind = str(bounds.get("type") or "int8")
    if bounds.get("null"):
        return [sql.SQL("{} IS NULL").format(ident)], settings
    for key, op in (("lo", ">="), ("hi", "<")):
        if bounds.get(key) is not None:
            settings[key] = str(bounds[key])
            conditions.append(sql.SQL("{} {} {}").format(
                ident, sql.SQL(op), typed_value(kind, value(key))))
    return conditions, settings


def _key_conditions(bounds: Mapping[str, Any], ident: sql.Identifier, kind: str,
                    settings: dict[str, str]) -> list[sql.Composable]:
    """The boundary-key filters of a cursor window (see :func:`partition_query`)."""
    conditions: list[sql.Composable] = []
    for at, keys, test in ((TOP_AT, TOP_KEYS, "IN"), (SEEN_AT, SEEN_KEYS, "NOT IN")):
        if bounds.get(keys) is None or at not in bounds:
            continue
        settings[at] = str(bounds[at])
        settings[keys] = json.dumps(list(bounds[keys]))
        # A hashed subplan: the list is read once, each row at the value probes it.
        conditions.append(sql.SQL(
            "({} <> {} OR {} {} (SELECT jsonb_array_elements_text({}::jsonb)))").format(
            ident, typed_value(kind, _setting(at)), key_expression(bounds["key"]),
            sql.SQL(test), _setting(keys)))
    return conditions


def read_arrow(conninfo: str, query: str, settings: Mapping[str, str]) -> Iterator[pa.RecordBatch]:
    """Stream the query's rows as record batches, in a read-only repeatable-read transaction."""
    import adbc_driver_postgresql.dbapi as adbc

    conn = adbc.connect(conninfo)
    try:
        cur = conn.cursor()
        # ADBC opened the transaction (autocommit off); this must be its first statement.
        cur.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY")
        for name, value in SESSION_SETTINGS.items():
            cur.execute(f"SET LOCAL {name} = '{value}'")  # constants of this module
        if settings:
            names = list(settings)
            calls = ", ".join(f"set_config('headwater.{n}', ${i + 1}, true)"
                              for i, n in enumerate(names))
            cur.execute(f"SELECT {calls}", [settings[n] for n in names])
            cur.fetchall()
        cur.adbc_statement.set_options(
            **{"adbc.postgresql.batch_size_hint_bytes": str(BATCH_BYTES)})
        cur.execute(query)
        reader = cur.fetch_record_batch()
        yield from reader
        cur.close()
    finally:
        conn.rollback()
        conn.close()
