"""``headwater check`` for the PostgreSQL destination, in plain words and without Spark.

Three things can stop a sync before it writes a row: the server does not
answer (host and port named), it refuses the credentials
(:class:`~headwater.errors.AuthenticationError`, exit 3), or the role may not
create tables in the configured schema (or the schemas Headwater keeps its
markers and staging in).  Each is asked of the server's privilege functions:
the check creates nothing, so it leaves nothing behind.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import psycopg
import pyarrow as pa

from headwater.destinations.postgres._config import PostgresDestinationConfig
from headwater.destinations.postgres._connect import connect, explain
from headwater.destinations.postgres._owned import OWN_SCHEMA, STAGING_SCHEMA
from headwater.destinations.postgres._tables import columns_of, refuse_foreign
from headwater.errors import DestinationError


def check_server(settings: PostgresDestinationConfig) -> None:
    with connect(settings, autocommit=True) as conn:
        try:
            problems = [p for schema in (settings.schema_name, OWN_SCHEMA, STAGING_SCHEMA)
                        if (p := _schema_problem(conn, schema))]
        except psycopg.Error as exc:
            raise explain(exc, settings) from exc
    if problems:
        raise DestinationError(f"{settings.where()}: {'; '.join(problems)}",
                               field="destination.config.schema")


def _schema_problem(conn: psycopg.Connection[Any], schema: str) -> str | None:
    row = conn.execute(
        "SELECT has_schema_privilege(n.oid, 'USAGE'), has_schema_privilege(n.oid, 'CREATE') "
        "FROM pg_namespace n WHERE n.nspname = %s", [schema]).fetchone()
    if row is None:
        creates = conn.execute("SELECT has_database_privilege(current_database(), 'CREATE')"
                               ).fetchone()
        if creates and creates[0]:
            return None
        return (f"schema {schema!r} does not exist and the role may not create it (GRANT "
                "CREATE ON DATABASE, or create the schema for it)")
    if not (row[0] and row[1]):
        return (f"the role may not create tables in schema {schema!r} (GRANT USAGE, CREATE ON "
                f"SCHEMA {schema} TO the role)")
    return None


def check_stream_tables(settings: PostgresDestinationConfig,
                        streams: Mapping[str, pa.Schema]) -> None:
    """Each stream's existing table, if Headwater did not create it, must take its values."""
    with connect(settings, autocommit=True) as conn:
        for stream, schema in streams.items():
            refuse_foreign(columns_of(conn, settings.schema_name, stream), schema,
                           f"{settings.schema_name}.{stream}", stream)


__all__ = ["check_server", "check_stream_tables"]
