"""``headwater verify`` against a real PostgreSQL source: rows inserted behind the cursor
after a sync are found in the right window and ``--repair`` lands them exactly once; and
the key checksum is the same number in PostgreSQL, Spark and Python."""

from __future__ import annotations

import datetime as dt
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psycopg
import pytest
from psycopg import sql

from headwater.config import load_connection
from headwater.connectors.postgres._window_count import key_checksum_sql
from headwater.engine import SyncEngine
from headwater.key_checksum import key_checksum
from headwater.metadata_store import MetadataStore
from headwater.operations._verify_table import checksum_supported, table_counts
from headwater.sdk import RowWindow
from tests._postgres import PostgresServer
from tests.integration._cli import CliResult
from tests.integration._connections import connection_file
from tests.integration._in_process import run_in_process

pytestmark = pytest.mark.spark


def _doc(result: CliResult) -> dict[str, Any]:
    """The command's ``--json`` document (there must be one)."""
    assert result.document is not None, result.stdout + result.stderr
    return result.document


@pytest.fixture
def database(postgres_server: PostgresServer) -> Iterator[str]:
    with postgres_server.database() as name:
        yield name


def execute(server: PostgresServer, database: str, statement: str | sql.Composed,
            params: Any = None) -> list[tuple[Any, ...]]:
    with psycopg.connect(server.database_url(database), autocommit=True) as conn:
        cur = conn.execute(statement, params)
        return cur.fetchall() if cur.description else []


KEYS = [(1, "plain", dt.date(2024, 1, 1), True, uuid.UUID(int=1)),
        (2, "tëxt", dt.date(1999, 12, 31), False, uuid.UUID(int=2)),
        (3, "日本語 and 🙂 (astral)", dt.date(1, 1, 1), True, uuid.UUID(int=3)),
        (4, "a:b", dt.date(2024, 2, 29), False, uuid.UUID(int=4)),  # length prefixes keep
        (4, "", dt.date(2024, 2, 29), False, uuid.UUID(int=5)),     # these two apart
        (-9223372036854775808, ":", dt.date(9999, 12, 31), True, uuid.UUID(int=2**128 - 1))]


def test_the_key_checksum_is_the_same_in_postgres_spark_and_python(
        spark: Any, postgres_server: PostgresServer, database: str) -> None:
    from pyspark.sql.types import (
        BooleanType,
        DateType,
        LongType,
        StringType,
        StructField,
        StructType,
    )

    execute(postgres_server, database, "CREATE TABLE k (id bigint, name text, day date, "
                                       "flag boolean, u uuid)")
    with psycopg.connect(postgres_server.database_url(database), autocommit=True) as conn:
        conn.cursor().executemany("INSERT INTO k VALUES (%s, %s, %s, %s, %s)", KEYS)
    schema = StructType([StructField("id", LongType()), StructField("name", StringType()),
                         StructField("day", DateType()), StructField("flag", BooleanType()),
                         StructField("u", StringType())])
    frame = spark.createDataFrame([(*k[:4], str(k[4])) for k in KEYS], schema)
    for key in [("id",), ("name",), ("id", "name"), ("day", "flag", "u"),
                ("id", "name", "day", "flag", "u")]:
        [(in_postgres,)] = execute(postgres_server, database, sql.SQL("SELECT {} FROM k").format(
            key_checksum_sql(key)))
        assert checksum_supported(frame, key)
        [in_spark] = table_counts(frame, [RowWindow(None)], key)
        columns = [("id", "name", "day", "flag", "u").index(c) for c in key]
        in_python = key_checksum(tuple(k[i] for i in columns) for k in KEYS)
        assert int(in_postgres) == in_spark.key_checksum == in_python, key
        assert in_spark.count == len(KEYS)


def _connection(tmp_path: Path, server: PostgresServer, database: str) -> Path:
    return connection_file(
        tmp_path, name="pgv", source_type="postgres",
        source=server.source_config(database, rows_per_partition=200,
                                    cursor_fields={"events": "updated_at"}),
        streams=[{"name": "events", "sync_mode": "incremental",
                  "destination_sync_mode": "append_dedup", "cursor_field": "updated_at",
                  "primary_key": ["id"]}],
        checkpoint={"partitions_per_checkpoint": 4})


def test_rows_added_behind_the_cursor_are_found_and_repaired(
        spark: Any, tmp_path: Path, postgres_server: PostgresServer, database: str) -> None:
    execute(postgres_server, database, """
        CREATE TABLE events (id bigint PRIMARY KEY, updated_at timestamptz NOT NULL, v text);
        INSERT INTO events SELECT g, '2024-01-01'::timestamptz + g * interval '1 min', 'v' || g
        FROM generate_series(1, 600) g;
        ANALYZE events;
    """)
    path = _connection(tmp_path, postgres_server, database)
    config = load_connection(path)
    result = SyncEngine(config, MetadataStore(config.metadata_store or "")).run()
    assert result.status == "succeeded" and result.streams[0].partitions >= 3

    # Behind the cursor: rows with an old updated_at, committed after the sync read past it.
    execute(postgres_server, database, """
        INSERT INTO events SELECT 10000 + g, '2024-01-01 05:00:30+00', 'late' || g
        FROM generate_series(1, 7) g;
    """)
    found = run_in_process(tmp_path, "verify", str(path), "--json")
    assert "streams" in _doc(found), found.stdout + found.stderr
    assert found.exit_code == 1, found.stdout + found.stderr
    [stream] = _doc(found)["streams"]
    differing = [w for w in stream["windows"] if w["differs"]]
    assert len(differing) == 1 and len(stream["windows"]) >= 3
    [window] = differing
    assert (window["source_count"], window["table_count"]) == (
        window["table_count"] + 7, window["table_count"])
    assert window["compared"] == "count and keys"
    low, high = window["window"].removeprefix("updated_at in [").rstrip(")").split(", ")
    late = dt.datetime(2024, 1, 1, 5, 0, 30, tzinfo=dt.UTC)
    assert (low == "-inf" or dt.datetime.fromisoformat(low) <= late) \
        and late < dt.datetime.fromisoformat(high)

    repaired = run_in_process(tmp_path, "verify", str(path), "--repair", "--json")
    assert repaired.exit_code == 0, repaired.stdout + repaired.stderr
    outcome = _doc(repaired)["repair"]
    assert outcome["equal_after"] and outcome["status"] == "succeeded"

    table = spark.read.format("delta").load(str(tmp_path / "lake" / "events"))
    assert table.count() == table.select("id").distinct().count() == 607
    again = run_in_process(tmp_path, "verify", str(path), "--json")
    assert again.exit_code == 0 and _doc(again)["status"] == "equal"
