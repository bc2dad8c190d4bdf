"""The postgres source's per-stream settings (``cursor_fields``, ``partition_columns``)
name streams: a key that names none is refused, naming the field, where it was ignored.

Ignored, ``cursor_fields: {user: updated_at}`` (for ``users``) left the stream without a
cursor, and a split column named for ``users`` once two schemas are read (the stream is
``public.users`` then) left its full refresh in one partition.  A real PostgreSQL; no
Spark: the refusal comes with the source's streams, before anything is planned.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import psycopg
import pytest

from headwater.connectors.postgres import PostgresSource
from headwater.errors import ConfigError
from tests._postgres import PostgresServer


@pytest.fixture(scope="module")
def database(postgres_server: PostgresServer) -> Iterator[str]:
    with postgres_server.database() as name:
        with psycopg.connect(postgres_server.database_url(name), autocommit=True) as conn:
            conn.execute("CREATE TABLE users (id bigint PRIMARY KEY, n bigint, "
                         "updated_at timestamptz); CREATE SCHEMA sales; "
                         "CREATE TABLE sales.orders (id bigint PRIMARY KEY)")
        yield name


@pytest.mark.parametrize(("settings", "field"), [
    ({"cursor_fields": {"user": "updated_at"}}, "cursor_fields.user"),
    ({"partition_columns": {"usres": "n"}}, "partition_columns.usres"),
    ({"schemas": ["public", "sales"], "partition_columns": {"users": "n"}},
     "partition_columns.users"),
])
def test_a_setting_for_a_stream_the_source_lacks_is_refused(
        postgres_server: PostgresServer, database: str, settings: dict[str, Any],
        field: str) -> None:
    source = PostgresSource(postgres_server.source_config(database, **settings))
    with pytest.raises(ConfigError) as info:
        source.streams()
    assert info.value.context["field"] == f"source.config.{field}"
    stream = field.split(".")[1]
    assert f"the source has no stream {stream!r}" in info.value.message
    assert "it has: " in info.value.message


@pytest.mark.parametrize(("settings", "field", "problem"), [
    ({"cursor_fields": {"users": "updated_at"}, "partition_columns": {"users": "n"}},
     "partition_columns.users", "read in windows of its cursor (cursor_fields.users)"),
    ({"replication_method": "cdc", "cursor_fields": {"users": "updated_at"}},
     "cursor_fields.users", "read by change data capture"),
])
def test_a_setting_the_stream_s_reads_would_not_use_is_refused(
        postgres_server: PostgresServer, database: str, settings: dict[str, Any], field: str,
        problem: str) -> None:
    source = PostgresSource(postgres_server.source_config(database, **settings))
    with pytest.raises(ConfigError) as info:
        source.streams()
    assert info.value.context["field"] == f"source.config.{field}"
    assert problem in info.value.message


def test_a_setting_for_a_stream_of_the_source_is_taken(
        postgres_server: PostgresServer, database: str) -> None:
    source = PostgresSource(postgres_server.source_config(
        database, schemas=["public", "sales"], cursor_fields={"public.users": "updated_at"},
        partition_columns={"sales.orders": "id"}))
    streams = {s.stream_name: s for s in source.streams()}
    assert set(streams) == {"public.users", "sales.orders"}
    assert streams["public.users"].cursor_field == "updated_at"
    # Change data capture with a split column for its snapshot: taken.
    cdc = PostgresSource(postgres_server.source_config(
        database, replication_method="cdc", partition_columns={"users": "n"}))
    assert [s.stream_name for s in cdc.streams()] == ["users"]
