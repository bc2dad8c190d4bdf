"""The jdbc source against a real MariaDB (``mariadb_server``), its driver
(``org.mariadb.jdbc:mariadb-java-client``) from Maven Central, on the shared Spark session:
a full refresh cut at quantiles and two incremental syncs under the tie rule, in one test
(each sync costs seconds; one table serves both)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from headwater.connectors.jdbc import JdbcSource
from tests._mariadb import MariaDBServer
from tests.integration._connections import connection_file
from tests.integration.connectors.jdbc._jdbc import landed, partition_sizes, sync

pytestmark = pytest.mark.spark

DRIVER = "org.mariadb.jdbc:mariadb-java-client:3.5.1"


@pytest.fixture
def database(mariadb_server: MariaDBServer) -> Iterator[str]:
    with mariadb_server.database() as name:
        yield name


def rows(server: MariaDBServer, database: str, statement: str) -> list[tuple[Any, ...]]:
    connection = server.connect(database)
    try:
        with connection.cursor() as cursor:
            cursor.execute(statement)
            return list(cursor.fetchall())
    finally:
        connection.close()


def test_full_refresh_and_incremental_against_mariadb(
        spark: Any, tmp_path: Path, mariadb_server: MariaDBServer, database: str) -> None:
    connection = mariadb_server.connect(database)
    with connection.cursor() as cursor:
        cursor.execute("CREATE TABLE events (id BIGINT PRIMARY KEY, at DATETIME(6), "
                       "v VARCHAR(20))")
        # A skewed key: 600 dense ids, 300 far apart.
        values = [(i, f"2026-01-01 00:{i // 60 % 60:02d}:{i % 60:02d}", f"r{i}")
                  for i in range(1, 601)]
        values += [(600 + i * 100_003, f"2026-01-01 01:00:{i % 60:02d}", f"far{i}")
                   for i in range(1, 301)]
        cursor.executemany("INSERT INTO events VALUES (%s, %s, %s)", values)
    source = {"url": mariadb_server.jdbc_url(database), "driver": DRIVER,
              "username": mariadb_server.user, "password": mariadb_server.password,
              "rows_per_partition": 300,
              "tables": [{"name": "events"},
                         {"name": "events_by_time", "table": "events", "cursor_field": "at"}]}
    path = connection_file(tmp_path, name="maria", source_type="jdbc", source=source, streams=[
        {"name": "events", "sync_mode": "full_refresh", "destination_sync_mode": "overwrite"},
        {"name": "events_by_time", "sync_mode": "incremental", "destination_sync_mode": "append",
         "cursor_field": "at", "primary_key": ["id"]}],
        checkpoint={"partitions_per_checkpoint": 4})
    assert sync(path).status == "succeeded"
    expected = Counter(rows(mariadb_server, database, "SELECT id, v FROM events"))
    assert landed(spark, tmp_path, "events", ["id", "v"]) == expected
    sizes = partition_sizes(spark, tmp_path, "events")
    assert len(sizes) == 3 and max(sizes.values()) - min(sizes.values()) <= 2, sizes

    with connection.cursor() as cursor:  # one more at the top time stamp, and a later one
        cursor.execute("INSERT INTO events VALUES (601, '2026-01-01 01:00:59', 'tie'), "
                       "(602, '2026-01-02 00:00:00', 'later')")
    connection.close()
    second = sync(path)
    assert second.status == "succeeded", second.to_dict()
    assert [s.records_written for s in second.streams if s.name == "events_by_time"] == [2]
    assert landed(spark, tmp_path, "events_by_time", ["id", "v"]) == Counter(
        rows(mariadb_server, database, "SELECT id, v FROM events"))


def test_a_table_name_in_two_databases_gets_the_key_of_the_database_read(
        spark: Any, mariadb_server: MariaDBServer, database: str) -> None:
    """MariaDB's driver lists a database as a catalog: ``events`` of the URL's database, not
    also the ``events`` of another database beside it, whose key is another column."""
    with mariadb_server.database() as other:
        for name, table in ((database, "events (id BIGINT PRIMARY KEY, v TEXT)"),
                            (other, "events (other_id BIGINT PRIMARY KEY, id BIGINT)")):
            connection = mariadb_server.connect(name)
            with connection.cursor() as cursor:
                cursor.execute(f"CREATE TABLE {table}")
            connection.close()
        source = {"url": mariadb_server.jdbc_url(database), "driver": DRIVER,
                  "username": mariadb_server.user, "password": mariadb_server.password,
                  "tables": [{"name": "events"},
                             {"name": "theirs", "table": f"{other}.events"}]}
        found = JdbcSource(source)
        assert found.stream("events").primary_key == ("id",)
        assert found.stream("theirs").primary_key == ("other_id",)
