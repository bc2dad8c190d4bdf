"""The mysql source's per-stream settings (``cursor_fields``, ``partition_columns``) name
streams and are used by their reads: a key that names no stream, a split column beside a
cursor and a cursor column under change data capture are refused, naming the field, where
each was ignored (the postgres source's rules: ``connectors/_stream_keys.py``).  A real
MariaDB; no Spark: the refusal comes with the source's streams, before anything is planned.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from headwater.connectors.mysql import MySQLSource
from headwater.errors import ConfigError
from tests._mariadb import MariaDBServer


@pytest.fixture(scope="module")
def database(mariadb_server: MariaDBServer) -> Iterator[str]:
    with mariadb_server.database() as name:
        connection = mariadb_server.connect(name)
        with connection.cursor() as cursor:
            cursor.execute("CREATE TABLE users (id BIGINT PRIMARY KEY, n BIGINT, "
                           "updated_at DATETIME(6))")
        connection.close()
        yield name


@pytest.mark.parametrize(("settings", "field", "problem"), [
    ({"cursor_fields": {"user": "updated_at"}}, "cursor_fields.user",
     "the source has no stream 'user'"),
    ({"partition_columns": {"usres": "n"}}, "partition_columns.usres",
     "the source has no stream 'usres'"),
    ({"cursor_fields": {"users": "updated_at"}, "partition_columns": {"users": "n"}},
     "partition_columns.users", "read in windows of its cursor (cursor_fields.users)"),
    ({"replication_method": "cdc", "cursor_fields": {"users": "updated_at"}},
     "cursor_fields.users", "read by change data capture"),
])
def test_a_setting_no_read_would_use_is_refused(
        mariadb_server: MariaDBServer, database: str, settings: dict[str, Any], field: str,
        problem: str) -> None:
    source = MySQLSource(mariadb_server.source_config(database, **settings))
    with pytest.raises(ConfigError) as info:
        source.streams()
    assert info.value.context["field"] == f"source.config.{field}"
    assert problem in info.value.message


def test_the_settings_a_read_uses_are_taken(mariadb_server: MariaDBServer,
                                             database: str) -> None:
    (stream,) = MySQLSource(mariadb_server.source_config(
        database, cursor_fields={"users": "updated_at"})).streams()
    assert stream.cursor_field == "updated_at"
    # Change data capture with a split column for its snapshot: taken.
    (cdc,) = MySQLSource(mariadb_server.source_config(
        database, replication_method="cdc", partition_columns={"users": "n"})).streams()
    assert cdc.cursor_field == "_mysql_pos"
