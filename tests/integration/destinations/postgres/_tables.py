"""Reading a PostgreSQL destination's tables from outside Headwater: plain psycopg."""

from __future__ import annotations

from typing import Any

import psycopg
import pyarrow as pa

from headwater.destinations.postgres import PostgresDestination


def read_rows(destination: Any, stream: str) -> pa.Table:
    """The stream's table as a psycopg reader sees it (no table: an empty one)."""
    assert isinstance(destination, PostgresDestination)
    settings = destination.settings
    with psycopg.connect(**settings.kwargs(), options="-c TimeZone=UTC") as conn:
        cursor = conn.execute(f'SELECT * FROM "{settings.schema_name}"."{stream}"') \
            if _exists(conn, settings.schema_name, stream) else None
        if cursor is None or cursor.description is None:
            return pa.table({})
        names = [c.name for c in cursor.description]
        return pa.Table.from_pylist([dict(zip(names, row, strict=True))
                                     for row in cursor.fetchall()])


def _exists(conn: psycopg.Connection[Any], schema: str, table: str) -> bool:
    row = conn.execute("SELECT to_regclass(%s)", [f'"{schema}"."{table}"']).fetchone()
    return row is not None and row[0] is not None


def config(server: Any, database: str, schema: str = "public", **extra: Any) -> dict[str, Any]:
    """A destination config for ``database`` on the tests' server (its admin role)."""
    return {"host": server.host, "port": server.port, "database": database,
            "username": "headwater", "password": "headwater", "sslmode": "disable",
            "schema": schema, **extra}
