"""The jdbc source against a real PostgreSQL, its driver from Maven Central (Ivy), on the
shared Spark session: the driver jar is added to that running session, as it would be to a
notebook's (``headwater/connectors/jdbc/_driver.py``)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psycopg
import pytest

from headwater import _events
from headwater.config import load_connection
from headwater.connectors.jdbc import JdbcSource
from headwater.errors import AuthenticationError, ConfigError
from headwater.metadata_store import MetadataStore
from tests import _faults
from tests._postgres import PostgresServer
from tests.integration._connections import connection_file
from tests.integration._in_process import run_in_process
from tests.integration.connectors.jdbc._jdbc import landed, partition_sizes, sync

pytestmark = pytest.mark.spark

DRIVER = "org.postgresql:postgresql:42.7.4"


@pytest.fixture
def database(postgres_server: PostgresServer) -> Iterator[str]:
    with postgres_server.database() as name:
        yield name


def execute(server: PostgresServer, database: str, statement: str) -> list[tuple[Any, ...]]:
    with psycopg.connect(server.database_url(database), autocommit=True) as conn:
        cur = conn.execute(statement)  # type: ignore[arg-type]
        return cur.fetchall() if cur.description else []


def config(server: PostgresServer, database: str, tables: list[dict[str, Any]],
           **extra: Any) -> dict[str, Any]:
    return {"url": f"jdbc:postgresql://{server.host}:{server.port}/{database}",
            "driver": DRIVER, "username": "headwater", "password": "headwater",
            "tables": tables, **extra}


def write_connection(tmp_path: Path, source: dict[str, Any], streams: list[dict[str, Any]],
                     per_checkpoint: int = 4) -> Path:
    return connection_file(tmp_path, name="jdbc", source_type="jdbc", source=source,
                           streams=streams,
                           checkpoint={"partitions_per_checkpoint": per_checkpoint,
                                       "concurrent_checkpoints": 1})


def test_incremental_reads_each_row_once_under_append_with_the_tie_rule(
        spark: Any, tmp_path: Path, postgres_server: PostgresServer, database: str) -> None:
    execute(postgres_server, database, """
        CREATE TABLE events (id integer PRIMARY KEY, at timestamp, v text);
        INSERT INTO events SELECT g, TIMESTAMP '2026-01-01' + g * INTERVAL '1 minute', 'a'
          FROM generate_series(1, 300) g;
        INSERT INTO events VALUES (1000, NULL, 'no cursor');""")
    source = config(postgres_server, database, [{"name": "events", "cursor_field": "at"}],
                    rows_per_partition=100)
    path = write_connection(tmp_path, source, [
        {"name": "events", "sync_mode": "incremental", "destination_sync_mode": "append",
         "cursor_field": "at", "primary_key": ["id"]}])
    first = sync(path)
    assert first.status == "succeeded", first.to_dict()
    # More rows at the top value the first sync read (committed after it planned),
    # and later ones: the second sync reads exactly those, none of the first's again.
    execute(postgres_server, database, """
        INSERT INTO events VALUES (301, TIMESTAMP '2026-01-01' + 300 * INTERVAL '1 minute', 'tie');
        INSERT INTO events SELECT g, TIMESTAMP '2026-01-02' + g * INTERVAL '1 second', 'b'
          FROM generate_series(302, 350) g;""")
    second = sync(path)
    assert second.status == "succeeded", second.to_dict()
    third = sync(path)  # nothing new: nothing read
    assert third.status == "succeeded" and sum(s.records_written for s in third.streams) == 0

    expected = Counter(execute(postgres_server, database, "SELECT id, v FROM events"))
    assert landed(spark, tmp_path, "events", ["id", "v"]) == expected  # each row once
    written = [sum(s.records_written for s in r.streams) for r in (first, second)]
    assert written == [301, 50]


def test_a_skewed_first_load_is_cut_at_quantiles_and_resumes_after_a_kill(
        spark: Any, tmp_path: Path, postgres_server: PostgresServer, database: str) -> None:
    # 4,000 rows: ids 1..2000 dense, then 2,000 spread up to 20,000,000. Equal-width strides
    # (Spark's partitionColumn) would put 2,500 rows in the first of 4 partitions.
    execute(postgres_server, database, """
        CREATE TABLE big (id bigint PRIMARY KEY, v text, price numeric(10, 2));
        INSERT INTO big SELECT g, 'v' || g, g * 1.25 FROM generate_series(1, 2000) g;
        INSERT INTO big SELECT 2000 + g * 9997, 'far' || g, 1 FROM generate_series(1, 2000) g;""")
    source = config(postgres_server, database, [{"name": "big"}], rows_per_partition=1000)
    path = write_connection(tmp_path, source, [
        {"name": "big", "sync_mode": "full_refresh", "destination_sync_mode": "append"}],
        per_checkpoint=1)
    _faults.install_fault("after-commit:2", simulated=True)  # after the 2nd commit, unreleased
    try:
        with pytest.raises(_faults.Killed):
            sync(path)
    finally:
        _events.clear()
    connection = load_connection(path)
    store = MetadataStore(connection.metadata_store or "")
    run = store.find_unfinished_run("jdbc")
    assert run is not None
    planned = [p["id"] for s in run.plan["streams"] for c in s["checkpoints"]
               for p in c["partitions"]]
    assert len(planned) == 4

    resumed = sync(path)
    assert resumed.status == "succeeded" and resumed.resumed and resumed.run_id == run.run_id
    by_attempt = {c.index: (c.stats["attempt"], c.stats["found_committed"])
                  for c in store.list_checkpoints(run.run_id)}
    # The two committed before the kill are found in the table, not read again;
    # the other two are read by the second attempt.
    assert sorted(by_attempt.values()) == [(1, False), (2, False), (2, False), (2, True)]
    expected = Counter(execute(postgres_server, database, "SELECT id, v FROM big"))
    assert landed(spark, tmp_path, "big", ["id", "v"]) == expected
    sizes = partition_sizes(spark, tmp_path, "big")
    assert sorted(sizes) == sorted(planned)
    assert max(sizes.values()) - min(sizes.values()) <= 2, sizes  # 1000 each

    # discover: Spark's types, the key from DatabaseMetaData, the cursor candidates
    big = JdbcSource(source).stream("big")
    assert big.primary_key == ("id",)
    schema = big.json_schema()
    assert schema["properties"]["price"] == {"type": ["number", "null"], "format": "decimal",
                                             "precision": 10, "scale": 2}
    assert schema["x-cursor-candidates"] == ["id"]


def test_refused_credentials_exit_3_and_the_password_is_never_shown(
        spark: Any, tmp_path: Path, postgres_server: PostgresServer, database: str) -> None:
    secret = "Wr0ng-pa55word-xyz"
    source = {**config(postgres_server, database, [{"name": "t"}]), "password": secret}
    with pytest.raises(AuthenticationError) as refused:
        JdbcSource(source).check()
    assert refused.value.exit_code == 3
    assert "refused the credentials" in str(refused.value)
    assert secret not in str(refused.value)

    write_connection(tmp_path, source, [
        {"name": "t", "sync_mode": "full_refresh", "destination_sync_mode": "append"}])
    result = run_in_process(tmp_path, "check", "jdbc.yaml")
    assert result.exit_code == 3, result.describe()
    assert secret not in result.stdout + result.stderr


def test_a_table_name_in_several_schemas_gets_the_key_of_the_table_read(
        spark: Any, postgres_server: PostgresServer, database: str) -> None:
    """``users`` is ``public.users`` (the session's schema), not ``archive.users`` too: its
    key alone, and none where the table read has none, whatever another schema's has."""
    execute(postgres_server, database, """
        CREATE SCHEMA archive; CREATE SCHEMA other;
        CREATE TABLE users (id bigint PRIMARY KEY, v text);
        CREATE TABLE archive.users (archived_id bigint PRIMARY KEY, id bigint);
        CREATE TABLE keyless (id bigint, v text);
        CREATE TABLE archive.keyless (archived_id bigint PRIMARY KEY, id bigint);
        CREATE TABLE archive.far (a bigint PRIMARY KEY); CREATE TABLE other.far (b bigint);""")
    tables = [{"name": "users"}, {"name": "old_users", "table": "archive.users"},
              {"name": "keyless"}]
    source = config(postgres_server, database, tables)
    found = JdbcSource(source)
    assert found.stream("users").primary_key == ("id",)
    assert found.stream("old_users").primary_key == ("archived_id",)
    assert found.stream("keyless").primary_key == ()
    # Read through the search path (public has no `far`): which one is read is not ours to
    # guess, so the name is refused.
    on_path = {**source, "url": source["url"] + "?currentSchema=public,archive,other",
               "tables": [{"name": "far"}]}
    with pytest.raises(ConfigError, match=r"several schemas \(archive, other\)"):
        JdbcSource(on_path).stream("far")
