"""The postgres source end to end: a real PostgreSQL server, real Spark, real Delta tables."""

from __future__ import annotations

import datetime as dt
import decimal
import uuid
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psycopg
import pytest

from headwater.config import load_connection
from headwater.connectors.postgres import PostgresSource
from headwater.engine import SyncEngine, SyncResult
from headwater.errors import AuthenticationError, ConnectorError
from headwater.metadata_store import MetadataStore
from tests._postgres import PostgresServer
from tests.integration._connections import connection_file

pytestmark = pytest.mark.spark

UTC = dt.UTC


@pytest.fixture
def database(postgres_server: PostgresServer) -> Iterator[str]:
    with postgres_server.database() as name:
        yield name


def execute(server: PostgresServer, database: str, statement: str,
            params: Any = None) -> list[tuple[Any, ...]]:
    with psycopg.connect(server.database_url(database), autocommit=True) as conn:
        cur = conn.execute(statement, params)
        return cur.fetchall() if cur.description else []


def write_connection(tmp_path: Path, server: PostgresServer, database: str,
                     streams: list[dict[str, Any]], **source: Any) -> Path:
    return connection_file(tmp_path, name="pg", source_type="postgres",
                           source=server.source_config(database, **source), streams=streams,
                           checkpoint={"partitions_per_checkpoint": 4, "concurrent_checkpoints": 2})


def sync(path: Path) -> SyncResult:
    connection = load_connection(path)
    result = SyncEngine(connection, MetadataStore(connection.metadata_store or "")).run()
    assert result.status == "succeeded", result.to_dict()
    return result


def _hashable(value: Any) -> Any:
    return tuple(value) if isinstance(value, list) else value


def landed(spark: Any, tmp_path: Path, stream: str, columns: list[str],
           where: str = "true") -> Counter[tuple[Any, ...]]:
    """The table's rows (Arrow keeps UTC time stamps aware, as psycopg returns them)."""
    frame = spark.read.format("delta").load(str(tmp_path / "lake" / stream))
    rows = frame.where(where).select(*columns).toArrow().to_pylist()
    return Counter(tuple(_hashable(r[c]) for c in columns) for r in rows)


def source_rows(server: PostgresServer, database: str, query: str) -> Counter[tuple[Any, ...]]:
    return Counter(tuple(_hashable(v) for v in row) for row in execute(server, database, query))


# --------------------------------------------------------------------------- full refresh


def test_full_refresh_reads_key_ranges_and_keyless_tables(
        spark: Any, tmp_path: Path, postgres_server: PostgresServer, database: str) -> None:
    execute(postgres_server, database, """
        CREATE TABLE items (id bigint PRIMARY KEY, label text, price numeric(10, 2));
        INSERT INTO items SELECT g, 'item ' || g, g * 1.25 FROM generate_series(1, 2000) g;
        CREATE TABLE log_lines (line text, at timestamptz);
        INSERT INTO log_lines SELECT 'line ' || g, '2024-01-01'::timestamptz + g * interval '1 s'
        FROM generate_series(1, 300) g;
        ANALYZE;
    """)
    streams = [{"name": n, "sync_mode": "full_refresh", "destination_sync_mode": "overwrite"}
               for n in ("items", "log_lines")]
    path = write_connection(tmp_path, postgres_server, database, streams,
                            rows_per_partition=300)
    result = sync(path)
    by_name = {s.name: s for s in result.streams}
    assert by_name["items"].partitions == 7  # 2000 rows / 300 per partition
    assert by_name["log_lines"].partitions == 1  # no key: one partition
    assert landed(spark, tmp_path, "items", ["id", "label", "price"]) == \
        source_rows(postgres_server, database, "SELECT id, label, price FROM items")
    assert landed(spark, tmp_path, "log_lines", ["line", "at"]) == \
        source_rows(postgres_server, database, "SELECT line, at FROM log_lines")


# --------------------------------------------------------------------------- types

TYPES_DDL = """
CREATE TYPE mood AS ENUM ('sad', 'ok', 'happy');
CREATE TABLE every_type (
  id integer PRIMARY KEY, i2 smallint, i8 bigint, n numeric(12, 3), n_free numeric,
  r real, d double precision, b boolean, t text, vc varchar(10), ch char(3),
  day date, tod time, ts timestamp, tstz timestamptz, span interval, u uuid,
  j json, jb jsonb, bin bytea, ints integer[], texts text[], m mood, p point);
INSERT INTO every_type VALUES
 (1, -32768, 9223372036854775807, 123456789.125, 1e40, 1.5, 2.25, true, 'tëxt', 'var', 'abc',
  '2024-02-29', '23:59:59.999999', '2024-01-02 03:04:05.678901',
  '2024-01-02 03:04:05.5+02', '1 year 2 mons 3 days 04:05:06.5',
  'a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11', '{"a": [1, 2]}', '{"b": {"c": null}}',
  '\\xdeadbeef00', '{1,NULL,3}', '{"a","b c",NULL}', 'happy', '(1.5,2)'),
 (2, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL,
  NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL),
 (3, 0, -1, -0.001, 0.5, 'NaN', '-Infinity', false, '', '', 'x', '0001-01-01', '00:00',
  '1999-12-31 23:59:59', '1970-01-01 00:00:00+00', '-3 days',
  '00000000-0000-0000-0000-000000000000', '[]', '[]',
  '\\x', '{}', '{}', 'sad', '(0,0)');
"""

EXPECTED_TYPES = {
    1: {"i2": -32768, "i8": 9223372036854775807, "n": decimal.Decimal("123456789.125"),
        "n_free": "1" + "0" * 40, "r": 1.5, "d": 2.25, "b": True, "t": "tëxt", "vc": "var",
        "ch": "abc", "day": dt.date(2024, 2, 29), "tod": "23:59:59.999999",
        "ts": dt.datetime(2024, 1, 2, 3, 4, 5, 678901),
        "tstz": dt.datetime(2024, 1, 2, 1, 4, 5, 500000, tzinfo=UTC),
        "span": "P1Y2M3DT4H5M6.5S", "u": "a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11",
        "j": '{"a": [1, 2]}', "jb": '{"b": {"c": null}}', "bin": b"\xde\xad\xbe\xef\x00",
        "ints": [1, None, 3], "texts": ["a", "b c", None], "m": "happy", "p": "(1.5,2)"},
    3: {"i2": 0, "i8": -1, "n": decimal.Decimal("-0.001"), "n_free": "0.5", "b": False,
        "d": float("-inf"), "t": "", "vc": "", "ch": "x  ", "day": dt.date(1, 1, 1),
        "tod": "00:00:00", "ts": dt.datetime(1999, 12, 31, 23, 59, 59),
        "tstz": dt.datetime(1970, 1, 1, tzinfo=UTC), "span": "P-3D",
        "u": "00000000-0000-0000-0000-000000000000", "j": "[]", "jb": "[]", "bin": b"",
        "ints": [], "texts": [], "m": "sad", "p": "(0,0)"},
}


def test_every_type_round_trips_value_by_value(
        spark: Any, tmp_path: Path, postgres_server: PostgresServer, database: str) -> None:
    execute(postgres_server, database, TYPES_DDL)
    source = PostgresSource(postgres_server.source_config(database))
    (stream,) = source.streams()
    assert stream.json_schema()["description"] == \
        "carried as text, no type mapping: p (point)"
    path = write_connection(tmp_path, postgres_server, database,
                            [{"name": "every_type", "sync_mode": "full_refresh",
                              "destination_sync_mode": "overwrite"}])
    sync(path)
    frame = spark.read.format("delta").load(str(tmp_path / "lake" / "every_type"))
    types = dict(frame.dtypes)
    assert types["n"] == "decimal(12,3)" and types["bin"] == "binary"
    assert types["ts"] == "timestamp_ntz" and types["tstz"] == "timestamp"
    assert types["ints"] == "array<bigint>" and types["texts"] == "array<string>"
    rows = {r["id"]: r for r in frame.toArrow().to_pylist()}
    assert set(rows) == {1, 2, 3}
    for key, expected in EXPECTED_TYPES.items():
        for column, value in expected.items():
            assert rows[key][column] == value, (key, column, rows[key][column])
    assert rows[3]["r"] != rows[3]["r"]  # real NaN stays NaN
    assert all(v is None for k, v in rows[2].items() if k in EXPECTED_TYPES[1])
    assert frame.where("_hw_notes IS NOT NULL").count() == 0


# --------------------------------------------------------------------------- incremental


def test_incremental_ties_across_boundaries_and_dedup_after_updates(
        spark: Any, tmp_path: Path, postgres_server: PostgresServer, database: str) -> None:
    # 1200 rows on 12 cursor values: every value is shared by 100 rows, so the
    # quantile cuts (about 300 rows a partition) fall on shared values.
    execute(postgres_server, database, """
        CREATE TABLE events (id bigint PRIMARY KEY, register_time timestamptz NOT NULL,
                             payload jsonb);
        INSERT INTO events SELECT g, '2024-01-01'::timestamptz + (g % 12) * interval '1 min',
                                  jsonb_build_object('v', g)
        FROM generate_series(1, 1200) g;
    """)
    streams = [{"name": "events", "sync_mode": "incremental",
                "destination_sync_mode": "append_dedup", "cursor_field": "register_time",
                "primary_key": ["id"]}]
    path = write_connection(tmp_path, postgres_server, database, streams,
                            rows_per_partition=300, cursor_fields={"events": "register_time"})
    columns = ["id", "register_time", "payload"]
    query = "SELECT id, register_time, payload::text FROM events"
    first = sync(path)
    assert first.streams[0].partitions >= 3
    assert first.streams[0].records_read == 1200  # windows never overlap within a sync
    assert landed(spark, tmp_path, "events", columns) == source_rows(postgres_server, database,
                                                                     query)

    # Between runs: rows that tie with the last value read, later rows, and updates.
    execute(postgres_server, database, """
        INSERT INTO events SELECT g, '2024-01-01'::timestamptz + 11 * interval '1 min', '{}'
        FROM generate_series(5001, 5030) g;
        INSERT INTO events SELECT g, '2024-01-01 01:00'::timestamptz + g * interval '1 ms', '{}'
        FROM generate_series(6001, 6400) g;
        UPDATE events SET register_time = '2024-01-01 02:00', payload = '{"updated": true}'
        WHERE id % 100 = 7;
    """)
    second = sync(path)
    # Read: the 30 rows that tie with the previous top value (not the ones read there
    # before: their keys are in the state), the 400 new rows and the 12 updated ones.
    (reread,) = execute(postgres_server, database, "SELECT count(*) FROM events "
                        "WHERE register_time >= '2024-01-01 00:11'")[0]
    assert reread == 100 - 4 + 30 + 400 + 12  # ids 107, 407, 707, 1007 moved up from 00:11
    assert second.streams[0].records_read == reread - (100 - 4)
    assert landed(spark, tmp_path, "events", columns) == source_rows(postgres_server, database,
                                                                     query)
    third = sync(path)  # nothing new: nothing is read, not even the top value's 17 rows
    (top,) = execute(postgres_server, database, "SELECT count(*) FROM events "
                     "WHERE register_time = (SELECT max(register_time) FROM events)")[0]
    assert top == 17  # every id ending in 07 was moved to 02:00
    assert third.streams[0].records_read == 0
    assert landed(spark, tmp_path, "events", columns) == source_rows(postgres_server, database,
                                                                     query)


def test_incremental_append_lands_every_row_once_across_the_tie(
        spark: Any, tmp_path: Path, postgres_server: PostgresServer, database: str) -> None:
    # Plain append has no MERGE to collapse rows read twice: the rows at the previous
    # top value must not be read again, only the ones that tie with them later.
    execute(postgres_server, database, """
        CREATE TABLE events (id bigint PRIMARY KEY, register_time timestamptz NOT NULL);
        INSERT INTO events SELECT g, '2024-01-01'::timestamptz + (g % 12) * interval '1 min'
        FROM generate_series(1, 1200) g;
    """)
    streams = [{"name": "events", "sync_mode": "incremental", "destination_sync_mode": "append",
                "cursor_field": "register_time"}]
    path = write_connection(tmp_path, postgres_server, database, streams,
                            rows_per_partition=300, cursor_fields={"events": "register_time"})
    query = "SELECT id FROM events"
    first = sync(path)
    assert first.streams[0].partitions >= 3
    assert landed(spark, tmp_path, "events", ["id"]) == source_rows(postgres_server, database,
                                                                    query)
    # 30 rows tie with the top value read, 400 come after it.
    execute(postgres_server, database, """
        INSERT INTO events SELECT g, '2024-01-01'::timestamptz + 11 * interval '1 min'
        FROM generate_series(5001, 5030) g;
        INSERT INTO events SELECT g, '2024-01-01 01:00'::timestamptz + (g % 7) * interval '1 ms'
        FROM generate_series(6001, 6400) g;
    """)
    second = sync(path)
    assert landed(spark, tmp_path, "events", ["id"]) == source_rows(postgres_server, database,
                                                                    query)
    assert second.streams[0].records_read == 30 + 400
    # More ties with the new top value, and nothing else: only they are read.
    execute(postgres_server, database, """
        INSERT INTO events SELECT g, '2024-01-01 01:00'::timestamptz + 6 * interval '1 ms'
        FROM generate_series(7001, 7005) g;
    """)
    assert sync(path).streams[0].records_read == 5
    assert sync(path).streams[0].records_read == 0  # nothing new: nothing read
    ids = landed(spark, tmp_path, "events", ["id"])
    assert ids == source_rows(postgres_server, database, query)
    assert set(ids.values()) == {1}


def test_incremental_append_without_usable_keys_holds_back_the_top_value(
        spark: Any, tmp_path: Path, postgres_server: PostgresServer, database: str) -> None:
    # No primary key (log_lines), or more rows at the top value than boundary_keys_limit
    # (bursts): the keys that make the tie exact cannot be kept, so an append reads
    # below the top value only and the next sync reads the top value once, whole.
    execute(postgres_server, database, """
        CREATE TABLE log_lines (line text, n bigint NOT NULL);
        INSERT INTO log_lines SELECT 'line ' || g, g / 10 FROM generate_series(1, 99) g;
        CREATE TABLE bursts (id bigint PRIMARY KEY, n bigint NOT NULL);
        INSERT INTO bursts SELECT g, g / 10 FROM generate_series(1, 99) g;
    """)
    streams = [{"name": name, "sync_mode": "incremental", "destination_sync_mode": "append",
                "cursor_field": "n"} for name in ("log_lines", "bursts")]
    path = write_connection(tmp_path, postgres_server, database, streams,
                            cursor_fields={"log_lines": "n", "bursts": "n"},
                            boundary_keys_limit=5)
    lines = "SELECT line FROM log_lines WHERE n < (SELECT max(n) FROM log_lines)"
    bursts = "SELECT id FROM bursts WHERE n < (SELECT max(n) FROM bursts)"
    sync(path)
    assert landed(spark, tmp_path, "log_lines", ["line"]) == \
        source_rows(postgres_server, database, lines)
    assert landed(spark, tmp_path, "bursts", ["id"]) == source_rows(postgres_server, database,
                                                                    bursts)
    execute(postgres_server, database, """
        INSERT INTO log_lines SELECT 'late ' || g, 9 FROM generate_series(1, 3) g;
        INSERT INTO log_lines SELECT 'next ' || g, 10 + g % 2 FROM generate_series(1, 4) g;
        INSERT INTO bursts SELECT g, 9 FROM generate_series(1001, 1003) g;
        INSERT INTO bursts SELECT g, 10 + g % 2 FROM generate_series(2001, 2004) g;
    """)
    sync(path)
    sync(path)  # nothing new: the top value stays held back
    lines_landed = landed(spark, tmp_path, "log_lines", ["line"])
    assert lines_landed == source_rows(postgres_server, database, lines)
    assert set(lines_landed.values()) == {1}
    # The new top value (11) has 2 rows, within the limit: bursts is read whole, once.
    bursts_landed = landed(spark, tmp_path, "bursts", ["id"])
    assert bursts_landed == source_rows(postgres_server, database, "SELECT id FROM bursts")
    assert sum(bursts_landed.values()) == 99 + 3 + 4


def test_incremental_state_without_boundary_keys_still_syncs(
        spark: Any, tmp_path: Path, postgres_server: PostgresServer, database: str) -> None:
    # State written before the keys were kept: append_dedup re-reads the top value as it
    # always did; append does not read it again, so nothing lands twice.
    execute(postgres_server, database, """
        CREATE TABLE plain (id bigint PRIMARY KEY, n bigint NOT NULL);
        CREATE TABLE deduped (id bigint PRIMARY KEY, n bigint NOT NULL);
        INSERT INTO plain SELECT g, g / 10 FROM generate_series(1, 99) g;
        INSERT INTO deduped SELECT g, g / 10 FROM generate_series(1, 99) g;
    """)
    streams = [{"name": "plain", "sync_mode": "incremental", "destination_sync_mode": "append",
                "cursor_field": "n"},
               {"name": "deduped", "sync_mode": "incremental",
                "destination_sync_mode": "append_dedup", "cursor_field": "n",
                "primary_key": ["id"]}]
    path = write_connection(tmp_path, postgres_server, database, streams,
                            cursor_fields={"plain": "n", "deduped": "n"})
    sync(path)
    connection = load_connection(path)
    store = MetadataStore(connection.metadata_store or "")
    for name in ("plain", "deduped"):
        state = store.get_state("pg", name)
        assert state is not None and state["boundary"] == [
            {"end": 10, "keys": [f"[{i}]" for i in sorted(range(90, 100), key=str)]}]
        del state["boundary"]
        store.save_state("pg", name, state, run_id=None, checkpoint_index=None)
    execute(postgres_server, database, """
        INSERT INTO plain SELECT g, 10 + g % 3 FROM generate_series(100, 120) g;
        INSERT INTO deduped SELECT g, 10 + g % 3 FROM generate_series(100, 120) g;
    """)
    read = {s.name: s.records_read for s in sync(path).streams}
    assert read == {"plain": 21, "deduped": 21 + 10}  # dedup: the 10 rows at n = 9 again
    for name in ("plain", "deduped"):
        ids = landed(spark, tmp_path, name, ["id"])
        assert ids == source_rows(postgres_server, database, f"SELECT id FROM {name}")
        assert set(ids.values()) == {1}


# --------------------------------------------------------------------------- CDC


def test_change_data_capture_inserts_updates_deletes(
        spark: Any, tmp_path: Path, postgres_server: PostgresServer, database: str) -> None:
    execute(postgres_server, database, """
        CREATE TABLE accounts (id integer PRIMARY KEY, owner text, balance numeric(12, 2),
                               tags text[]);
        INSERT INTO accounts SELECT g, 'owner ' || g, g, ARRAY['t' || g]
        FROM generate_series(1, 500) g;
    """)
    streams = [{"name": "accounts", "sync_mode": "incremental",
                "destination_sync_mode": "append_dedup", "cursor_field": "_pg_lsn",
                "primary_key": ["id"]}]
    path = write_connection(tmp_path, postgres_server, database, streams,
                            replication_method="cdc", rows_per_partition=200)
    columns = ["id", "owner", "balance", "tags"]
    live = "SELECT id, owner, balance, tags FROM accounts"

    def current() -> Counter[tuple[Any, ...]]:
        return landed(spark, tmp_path, "accounts", columns, where="NOT _pg_deleted")

    snapshot = sync(path)
    assert snapshot.streams[0].partitions == 3
    # Written after the slot exists but before the next sync: the stream must carry it.
    # (The test server runs synchronous_commit=off; these commits are flushed at once, so
    # the next sync's plan, which reads up to the flushed WAL position, includes them.)
    execute(postgres_server, database, """
        SET synchronous_commit = on;
        INSERT INTO accounts VALUES (501, 'new', 1.5, '{a,b}');
        UPDATE accounts SET balance = balance + 100 WHERE id <= 10;
        DELETE FROM accounts WHERE id BETWEEN 20 AND 24;
        UPDATE accounts SET owner = 'twice' WHERE id = 1;
    """)
    changes = sync(path)
    assert changes.streams[0].records_read == 1 + 10 + 5 + 1
    assert current() == source_rows(postgres_server, database, live)
    deleted = spark.read.format("delta").load(str(tmp_path / "lake" / "accounts")) \
        .where("_pg_deleted").select("id").collect()
    assert sorted(r[0] for r in deleted) == [20, 21, 22, 23, 24]

    # The slot moved to the committed state, so a sync with no changes reads nothing.
    state = MetadataStore(f"sqlite:///{tmp_path / 'meta.db'}").get_state("pg", "accounts")
    assert state is not None
    slot_lsn = execute(postgres_server, database,
                       "SELECT confirmed_flush_lsn::text FROM pg_replication_slots "
                       "WHERE database = current_database()")
    assert slot_lsn == [(state["lsn"],)]
    execute(postgres_server, database,
            "SET synchronous_commit = on; DELETE FROM accounts WHERE id = 501")
    again = sync(path)
    assert again.streams[0].records_read == 1
    assert current() == source_rows(postgres_server, database, live)


# --------------------------------------------------------------------------- check


def test_check_explains_credentials_and_replication_rights(
        postgres_server: PostgresServer, database: str) -> None:
    bad = PostgresSource(postgres_server.source_config(database, password="wrong-secret"))
    with pytest.raises(AuthenticationError) as refused:
        bad.check()
    assert "wrong-secret" not in str(refused.value)
    assert "refused the credentials" in str(refused.value)

    role = f"reader_{uuid.uuid4().hex[:8]}"
    execute(postgres_server, database,
            f"CREATE ROLE {role} LOGIN PASSWORD 'pw'; GRANT USAGE ON SCHEMA public TO {role}")
    try:
        config = postgres_server.source_config(database, username=role, password="pw",
                                               replication_method="cdc")
        with pytest.raises(ConnectorError) as missing:
            PostgresSource(config).check()
        assert "has no replication rights" in str(missing.value)
        assert f"ALTER ROLE {role} REPLICATION" in str(missing.value)
        unreachable = PostgresSource({**config, "port": 1})
        with pytest.raises(ConnectorError, match=r"cannot reach PostgreSQL at 127\.0\.0\.1:1 "):
            unreachable.check()
    finally:
        execute(postgres_server, database, f"DROP OWNED BY {role}; DROP ROLE {role}")


def test_a_cursor_past_the_years_a_table_holds_fails_the_plan_and_names_the_value(
        spark: Any, tmp_path: Path, postgres_server: PostgresServer, database: str) -> None:
    # Values below the years a table holds are read by the first window (which has no
    # lower bound) and land as notes; a top value past them would leave its rows unread
    # by every window, so the plan refuses it, naming the column and the value.
    execute(postgres_server, database, """
        CREATE TABLE ev (id int PRIMARY KEY, at timestamptz);
        INSERT INTO ev SELECT g, '2024-01-01'::timestamptz + g * interval '1 h'
        FROM generate_series(1, 20) g;
        INSERT INTO ev VALUES (100, '-infinity'), (101, '0044-03-15 BC');
    """)
    streams = [{"name": "ev", "sync_mode": "incremental", "destination_sync_mode": "append",
                "cursor_field": "at"}]
    path = write_connection(tmp_path, postgres_server, database, streams,
                            cursor_fields={"ev": "at"}, rows_per_partition=5)
    first = sync(path)
    assert first.streams[0].records_read == 22
    frame = spark.read.format("delta").load(str(tmp_path / "lake" / "ev"))
    noted = {r["id"]: (r["at"], [n["value"] for n in r["_hw_notes"]])
             for r in frame.where("_hw_notes IS NOT NULL").collect()}
    assert noted == {100: (None, ["-infinity"]), 101: (None, ["0044-03-15 00:00:00+00 BC"])}

    execute(postgres_server, database, "INSERT INTO ev VALUES (102, 'infinity')")
    connection = load_connection(path)
    with pytest.raises(ConnectorError, match=r"cursor column at holds infinity.*full_refresh"):
        SyncEngine(connection, MetadataStore(connection.metadata_store or "")).run()
