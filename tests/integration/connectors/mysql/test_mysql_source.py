"""The mysql source end to end: a real MariaDB (scripts/mariadb), real Spark, real Delta tables."""

from __future__ import annotations

import datetime as dt
import decimal
import uuid
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from headwater.config import load_connection
from headwater.connectors.mysql import MySQLSource
from headwater.engine import SyncEngine, SyncResult
from headwater.errors import AuthenticationError, ConfigError, ConnectorError
from headwater.metadata_store import MetadataStore
from tests._mariadb import MariaDBServer
from tests.integration._connections import connection_file
from tests.integration.connectors.mysql._text_keys import create_keyed_table, text_keys

pytestmark = pytest.mark.spark

D = decimal.Decimal
UTC = dt.UTC


@pytest.fixture
def database(mariadb_server: MariaDBServer) -> Iterator[str]:
    with mariadb_server.database() as name:
        yield name


def execute(server: MariaDBServer, database: str, *statements: str) -> list[tuple[Any, ...]]:
    connection = server.connect(database)
    try:
        rows: list[tuple[Any, ...]] = []
        with connection.cursor() as cursor:
            for statement in statements:
                cursor.execute(statement)
                rows = list(cursor.fetchall())
        return rows
    finally:
        connection.close()


def write_connection(tmp_path: Path, server: MariaDBServer, database: str,
                     streams: list[dict[str, Any]], **source: Any) -> Path:
    return connection_file(tmp_path, name="my", source_type="mysql",
                           source=server.source_config(database, **source), streams=streams,
                           checkpoint={"partitions_per_checkpoint": 4, "concurrent_checkpoints": 2})


def sync(path: Path) -> SyncResult:
    connection = load_connection(path)
    result = SyncEngine(connection, MetadataStore(connection.metadata_store or "")).run()
    assert result.status == "succeeded", result.to_dict()
    return result


def landed(spark: Any, tmp_path: Path, stream: str, columns: list[str]) -> Counter[tuple[Any, ...]]:
    frame = spark.read.format("delta").load(str(tmp_path / "lake" / stream))
    return Counter(tuple(r[c] for c in columns) for r in frame.select(*columns).toArrow()
                   .to_pylist())


# --------------------------------------------------------------------------- full refresh


def test_full_refresh_cuts_skewed_keys_at_quantiles(
        spark: Any, tmp_path: Path, mariadb_server: MariaDBServer, database: str) -> None:
    # 900 dense keys, then 100 keys spread up to 2^64 - 1: min/max cuts would put 900
    # rows in one partition; quantile cuts give ten partitions of 100.
    execute(mariadb_server, database,
            "CREATE TABLE items (id BIGINT UNSIGNED PRIMARY KEY, label VARCHAR(20))",
            "INSERT INTO items SELECT seq, CONCAT('item ', seq) FROM seq_1_to_900",
            "INSERT INTO items SELECT 184467440737095516 * seq + 15, 'far' FROM seq_1_to_99",
            "INSERT INTO items VALUES (18446744073709551615, 'top')",
            "CREATE TABLE log_lines (line TEXT)",
            "INSERT INTO log_lines SELECT CONCAT('line ', seq) FROM seq_1_to_30")
    # A text key in a case- and accent-insensitive collation (``_text_keys.py``): cut and
    # compared by the server, about 700 keys in seven partitions of about 100.
    keys = text_keys()
    create_keyed_table(mariadb_server, database, "words", "utf8mb4_unicode_ci", keys)
    config = mariadb_server.source_config(database, rows_per_partition=100)
    items = next(s for s in MySQLSource(config).streams() if s.stream_name == "items")
    plan = items.partitions(None)
    assert len(plan) == 10
    sizes = []
    for partition in plan:
        rows = sum(batch.num_rows for batch in items.read(partition))  # type: ignore[union-attr]
        sizes.append(rows)
    assert sizes == [100] * 10, sizes
    assert plan[0].params["lo"] is None and plan[-1].params["hi"] is None

    path = write_connection(tmp_path, mariadb_server, database,
                            [{"name": "items", "sync_mode": "full_refresh",
                              "destination_sync_mode": "overwrite"},
                             {"name": "log_lines", "sync_mode": "full_refresh",
                              "destination_sync_mode": "append"},
                             {"name": "words", "sync_mode": "full_refresh",
                              "destination_sync_mode": "overwrite"}],
                            rows_per_partition=100)
    result = sync(path)
    assert {s.name: s.records_written for s in result.streams} == {
        "items": 1000, "log_lines": 30, "words": len(keys)}
    expected = Counter((D(k), label) for k, label in
                       execute(mariadb_server, database, "SELECT id, label FROM items"))
    assert landed(spark, tmp_path, "items", ["id", "label"]) == expected
    assert landed(spark, tmp_path, "words", ["id", "n"]) == Counter(
        (k, i) for i, k in enumerate(keys))  # every row once
    sizes = Counter(p for (p,) in landed(spark, tmp_path, "words", ["_hw_partition_id"])
                    .elements())
    assert len(sizes) == -(-len(keys) // 100), sizes
    assert max(sizes.values()) - min(sizes.values()) <= 1, sizes


# --------------------------------------------------------------------------- types

TYPES_DDL = """
CREATE TABLE every_type (
  id INT PRIMARY KEY,
  d65 DECIMAL(65, 30), d38 DECIMAL(38, 20), d10 DECIMAL(10, 2),
  ub BIGINT UNSIGNED, sb BIGINT, ti TINYINT(1), tu TINYINT UNSIGNED, iu INT UNSIGNED,
  dtm DATETIME(6), ts TIMESTAMP(6) NULL, dte DATE, tm TIME(6), yr YEAR,
  js JSON, bin BINARY(4), vb VARBINARY(10), bl BLOB,
  en ENUM('a', 'b c', 'ü'), st SET('x', 'y', 'z'), bt BIT(10), b64 BIT(64),
  txt TEXT, vc VARCHAR(20), fl FLOAT, db DOUBLE)
"""
TYPES_ROWS = """
INSERT INTO every_type VALUES
 (1, '12345678901234567890123456789012345.123456789012345678901234567890',
  '-123456789012345678.12345678901234567890', 1.25,
  18446744073709551615, -9223372036854775808, 1, 255, 4294967295,
  '2024-01-02 03:04:05.123456', '2024-01-02 03:04:05.654321', '1000-01-01',
  '-838:59:59.000000', 2155,
  '{"a": 1.000000000000000000001, "b": [1, 2]}', 0x00010203, X'', 0xFF00,
  'ü', 'x,z', b'1010101010', b'1111111111111111111111111111111111111111111111111111111111111111',
  'héllo 😀', 'emoji 😀', 1.1, 0.1),
 (2, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL,
  NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL),
 (3, '-0.000000000000000000000000000001', '0', -0.01, 0, 9223372036854775807, -128, 0, 0,
  '9999-12-31 23:59:59.999999', '2038-01-19 03:14:07.999999', '9999-12-31',
  '838:59:59.999999', 1901, '[]', 0xFFFFFFFF, 0x00, X'', '', '', b'0', b'0',
  '', '', -3.4028235e38, 2.2250738585072014e-308)
"""
EXPECTED_TYPES: dict[int, dict[str, Any]] = {
    1: {"d65": "12345678901234567890123456789012345.123456789012345678901234567890",
        "d38": D("-123456789012345678.12345678901234567890"), "d10": D("1.25"),
        "ub": D(18446744073709551615), "sb": -9223372036854775808, "ti": 1, "tu": 255,
        "iu": 4294967295,
        "dtm": dt.datetime(2024, 1, 2, 3, 4, 5, 123456),
        "ts": dt.datetime(2024, 1, 2, 3, 4, 5, 654321, tzinfo=UTC),
        "dte": dt.date(1000, 1, 1), "tm": "-838:59:59.000000", "yr": 2155,
        "js": '{"a": 1.000000000000000000001, "b": [1, 2]}',
        "bin": b"\x00\x01\x02\x03", "vb": b"", "bl": b"\xff\x00", "en": "ü", "st": "x,z",
        "bt": 682, "b64": D(18446744073709551615), "txt": "héllo 😀", "vc": "emoji 😀",
        "fl": 1.100000023841858, "db": 0.1},
    3: {"d65": "-0.000000000000000000000000000001", "d38": D("0E-20"), "d10": D("-0.01"),
        "ub": D(0), "sb": 9223372036854775807, "ti": -128, "tu": 0, "iu": 0,
        "dtm": dt.datetime(9999, 12, 31, 23, 59, 59, 999999),
        "ts": dt.datetime(2038, 1, 19, 3, 14, 7, 999999, tzinfo=UTC),
        "dte": dt.date(9999, 12, 31), "tm": "838:59:59.999999", "yr": 1901, "js": "[]",
        "bin": b"\xff\xff\xff\xff", "vb": b"\x00", "bl": b"", "en": "", "st": "",
        "bt": 0, "b64": D(0), "txt": "", "vc": "", "fl": -3.4028234663852886e38,
        "db": 2.2250738585072014e-308},
}


def test_every_type_lands_exactly(spark: Any, tmp_path: Path, mariadb_server: MariaDBServer,
                                  database: str) -> None:
    # sql_mode '' lets ENUM take '' (the server's "invalid" value), as old tables hold.
    execute(mariadb_server, database, TYPES_DDL, "SET SESSION sql_mode = ''", TYPES_ROWS)
    (stream,) = MySQLSource(mariadb_server.source_config(database)).streams()
    schema = stream.json_schema()["properties"]
    assert schema["js"]["contentMediaType"] == "application/json"
    assert schema["en"]["x-mysql-enum"] == ["a", "b c", "ü"]
    assert schema["ub"]["precision"] == 20
    path = write_connection(tmp_path, mariadb_server, database,
                            [{"name": "every_type", "sync_mode": "full_refresh",
                              "destination_sync_mode": "overwrite"}])
    sync(path)
    frame = spark.read.format("delta").load(str(tmp_path / "lake" / "every_type"))
    types = dict(frame.dtypes)
    assert types["d65"] == "string" and types["d38"] == "decimal(38,20)"
    assert types["ub"] == "decimal(20,0)" and types["sb"] == "bigint"
    assert types["dtm"] == "timestamp_ntz" and types["ts"] == "timestamp"
    assert types["bin"] == "binary" and types["bl"] == "binary"
    rows = {r["id"]: r for r in frame.toArrow().to_pylist()}
    assert set(rows) == {1, 2, 3}
    for key, expected in EXPECTED_TYPES.items():
        for column, value in expected.items():
            assert rows[key][column] == value, (key, column, rows[key][column])
    assert all(rows[2][c] is None for c in EXPECTED_TYPES[1])
    assert frame.where("_hw_notes IS NOT NULL").count() == 0


# --------------------------------------------------------------------------- incremental


def test_incremental_append_lands_every_row_once_across_the_tie(
        spark: Any, tmp_path: Path, mariadb_server: MariaDBServer, database: str) -> None:
    execute(mariadb_server, database,
            "CREATE TABLE events (id INT PRIMARY KEY, at DATETIME(6), note VARCHAR(10))",
            "INSERT INTO events SELECT seq, '2024-01-01' + INTERVAL (seq DIV 10) HOUR, 'a' "
            "FROM seq_1_to_95",
            "INSERT INTO events VALUES (96, NULL, 'null')")
    streams = [{"name": "events", "sync_mode": "incremental", "destination_sync_mode": "append",
                "cursor_field": "at", "primary_key": ["id"]}]
    path = write_connection(tmp_path, mariadb_server, database, streams,
                            cursor_fields={"events": "at"}, rows_per_partition=20)
    first = sync(path)
    assert first.streams[0].records_written == 96
    # Rows at the top value (09:00), below it and above it, committed after the plan.
    execute(mariadb_server, database,
            "INSERT INTO events VALUES (97, '2024-01-01 09:00:00', 'tie'), "
            "(98, '2024-01-01 10:00:00', 'new'), (99, '2024-01-01 09:00:00.000001', 'just')")
    second = sync(path)
    assert second.streams[0].records_written == 3
    third = sync(path)
    assert third.streams[0].records_written == 0
    expected = Counter((i,) for (i,) in execute(mariadb_server, database,
                                                "SELECT id FROM events"))
    assert landed(spark, tmp_path, "events", ["id"]) == expected


def test_incremental_dedup_on_an_integer_cursor_after_updates(
        spark: Any, tmp_path: Path, mariadb_server: MariaDBServer, database: str) -> None:
    execute(mariadb_server, database,
            "CREATE TABLE accounts (id INT PRIMARY KEY, version BIGINT, owner VARCHAR(10))",
            "INSERT INTO accounts SELECT seq, seq % 7, 'old' FROM seq_1_to_50")
    streams = [{"name": "accounts", "sync_mode": "incremental",
                "destination_sync_mode": "append_dedup", "cursor_field": "version",
                "primary_key": ["id"]}]
    path = write_connection(tmp_path, mariadb_server, database, streams,
                            cursor_fields={"accounts": "version"})
    sync(path)
    execute(mariadb_server, database,
            "UPDATE accounts SET version = 6, owner = 'tie' WHERE id IN (1, 2)",
            "UPDATE accounts SET version = 9, owner = 'new' WHERE id = 3")
    sync(path)
    expected = Counter(execute(mariadb_server, database, "SELECT id, owner FROM accounts"))
    assert landed(spark, tmp_path, "accounts", ["id", "owner"]) == expected


# --------------------------------------------------------------------------- check, discover


def test_check_explains_credentials_reachability_and_grants(
        mariadb_server: MariaDBServer, database: str) -> None:
    execute(mariadb_server, database, "CREATE TABLE t (id INT PRIMARY KEY, at TIMESTAMP(3))")
    bad = MySQLSource(mariadb_server.source_config(database, password="wrong-secret"))
    with pytest.raises(AuthenticationError) as refused:
        bad.check()
    assert refused.value.exit_code == 3
    assert "wrong-secret" not in str(refused.value)
    assert "refused the credentials" in str(refused.value)
    unreachable = MySQLSource(mariadb_server.source_config(database, port=1))
    with pytest.raises(ConnectorError, match=r"cannot reach MySQL at 127\.0\.0\.1:1 "):
        unreachable.check()
    user = f"reader_{uuid.uuid4().hex[:8]}"
    execute(mariadb_server, database, f"CREATE USER '{user}'@'127.0.0.1' IDENTIFIED BY 'pw'",
            f"GRANT USAGE ON *.* TO '{user}'@'127.0.0.1'")
    try:
        config = mariadb_server.source_config(database, username=user, password="pw")
        with pytest.raises(ConnectorError, match=r"lacks a privilege|may read no table"):
            MySQLSource(config).check()
        execute(mariadb_server, database, f"GRANT SELECT ON `{database}`.* TO "
                                          f"'{user}'@'127.0.0.1'")
        MySQLSource(config).check()
        (stream,) = MySQLSource(config).streams()
        assert stream.primary_key == ("id",)
        assert stream.json_schema()["x-cursor-candidates"] == ["id", "at"]
        # A config mistake stays one (named field), not a connector error.
        (misconfigured,) = MySQLSource({**config, "partition_columns": {"t": "at"}}).streams()
        with pytest.raises(ConfigError, match=r"partition_columns\.t"):
            misconfigured.partitions(None)
    finally:
        execute(mariadb_server, database, f"DROP USER '{user}'@'127.0.0.1'")


def test_zero_and_partial_dates_land_as_null_with_the_servers_text_in_a_note(
        spark: Any, tmp_path: Path, mariadb_server: MariaDBServer, database: str) -> None:
    # MariaDB's default sql_mode accepts them (no NO_ZERO_DATE); connectorx fails on them.
    execute(mariadb_server, database,
            "CREATE TABLE dated (id INT PRIMARY KEY, d DATE, dt DATETIME(6), ts TIMESTAMP NULL)",
            "SET SESSION sql_mode = ''",
            "INSERT INTO dated VALUES (1, '0000-00-00', '2024-02-00 01:00:00', "
            "'0000-00-00 00:00:00'), (2, '2024-00-15', '0001-01-01 00:00:00', NULL), "
            "(3, '2024-01-01', '2024-01-01 10:00:00', '2024-01-01 10:00:00')")
    path = write_connection(tmp_path, mariadb_server, database,
                            [{"name": "dated", "sync_mode": "full_refresh",
                              "destination_sync_mode": "overwrite"}])
    result = sync(path)
    assert result.streams[0].records_written == 3
    frame = spark.read.format("delta").load(str(tmp_path / "lake" / "dated"))
    rows = {r["id"]: r for r in frame.toArrow().to_pylist()}
    assert (rows[1]["d"], rows[1]["dt"], rows[1]["ts"]) == (None, None, None)
    assert sorted((n["field"], n["value"]) for n in rows[1]["_hw_notes"]) == [
        ("d", "0000-00-00"), ("dt", "2024-02-00 01:00:00.000000"),
        ("ts", "0000-00-00 00:00:00")]
    assert [(n["field"], n["value"]) for n in rows[2]["_hw_notes"]] == [("d", "2024-00-15")]
    assert rows[2]["dt"] == dt.datetime(1, 1, 1)
    assert rows[3]["_hw_notes"] is None
    assert (rows[3]["d"], rows[3]["ts"]) == (dt.date(2024, 1, 1),
                                             dt.datetime(2024, 1, 1, 10, tzinfo=UTC))
