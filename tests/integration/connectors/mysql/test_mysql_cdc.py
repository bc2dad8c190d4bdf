"""The mysql source's change data capture end to end: a real MariaDB's binary log, real Spark,
real Delta tables (``append_dedup`` on ``_mysql_pos``, deletes as flagged tombstones).

After every sync the table's current rows (``_hw_deleted`` false) must equal the source's
rows, every key once.  The cases: inserts, updates, key changes and deletes between syncs
(and every type, zero dates included, through the binary log); a writer thread changing
the table while the first sync snapshots it (the handover); a first load killed between a
checkpoint's commit and its state, and a change sync killed there too (in-process faults,
as ``test_mysql_crash.py``), each resumed.
"""

from __future__ import annotations

import random
import threading
import time
import uuid
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from headwater.config import load_connection
from headwater.connectors.mysql import MySQLSource
from headwater.engine import SyncEngine, SyncResult
from headwater.errors import ConfigError, ExitCode
from headwater.metadata_store import MetadataStore
from tests._mariadb import MariaDBServer
from tests.integration._cli import FAULT, assert_each_checkpoint_committed_once, store
from tests.integration._connections import connection_file
from tests.integration._in_process import sync_in_process
from tests.integration.connectors.mysql.test_mysql_source import (
    EXPECTED_TYPES,
    TYPES_DDL,
    TYPES_ROWS,
    execute,
)

pytestmark = pytest.mark.spark


@pytest.fixture
def database(mariadb_server: MariaDBServer) -> Iterator[str]:
    with mariadb_server.database() as name:
        yield name


def cdc_connection(tmp_path: Path, server: MariaDBServer, database: str, tables: list[str],
                   rows_per_partition: int = 10, **extra: Any) -> Path:
    streams = [{"name": t, "sync_mode": "incremental", "destination_sync_mode": "append_dedup",
                "cursor_field": "_mysql_pos", "primary_key": ["id"]} for t in tables]
    return connection_file(tmp_path, name="my_cdc", source_type="mysql",
                           source=server.source_config(database, replication_method="cdc",
                                                       rows_per_partition=rows_per_partition,
                                                       tables=tables),
                           streams=streams, **extra)


def sync(path: Path, status: str = "succeeded") -> SyncResult:
    connection = load_connection(path)
    result = SyncEngine(connection, MetadataStore(connection.metadata_store or "")).run()
    assert result.status == status, result.to_dict()
    return result


def table_rows(spark: Any, tmp_path: Path, stream: str, lake: str = "lake"
               ) -> list[dict[str, Any]]:
    return list(spark.read.format("delta").load(str(tmp_path / lake / stream)).toArrow()
                .to_pylist())


def assert_equals_source(rows: list[dict[str, Any]], server: MariaDBServer, database: str,
                         table: str, columns: list[str]) -> None:
    """Current rows == the source's rows, and every key in the table once."""
    keys = Counter(r["id"] for r in rows)
    assert max(keys.values(), default=1) == 1, "a key landed twice"
    current = Counter(tuple(r[c] for c in columns) for r in rows if not r["_hw_deleted"])
    source = Counter(execute(server, database,
                             f"SELECT {', '.join(columns)} FROM `{table}` ORDER BY id"))
    assert current == source


# --------------------------------------------------------------------------- check


def test_check_names_what_change_data_capture_lacks(mariadb_server: MariaDBServer,
                                                     database: str) -> None:
    execute(mariadb_server, database, "CREATE TABLE t (id INT PRIMARY KEY)")
    user = f"cdc_{uuid.uuid4().hex[:8]}"
    execute(mariadb_server, database, f"CREATE USER '{user}'@'127.0.0.1' IDENTIFIED BY 'pw'",
            f"GRANT SELECT ON `{database}`.* TO '{user}'@'127.0.0.1'")
    config = mariadb_server.source_config(database, username=user, password="pw",
                                          replication_method="cdc")
    try:
        # Global settings, for new sessions only; this module's tests run one at a time.
        execute(mariadb_server, database, "SET GLOBAL binlog_format = 'MIXED'",
                "SET GLOBAL binlog_row_image = 'MINIMAL'")
        try:
            with pytest.raises(ConfigError) as lacking:
                MySQLSource(config).check()
        finally:
            execute(mariadb_server, database, "SET GLOBAL binlog_format = 'ROW'",
                    "SET GLOBAL binlog_row_image = 'FULL'")
        message = str(lacking.value)
        assert lacking.value.exit_code == ExitCode.CONFIG
        assert "binlog_format is 'MIXED'; change data capture needs 'ROW'" in message
        assert "binlog_row_image is 'MINIMAL'; change data capture needs 'FULL'" in message
        assert "lacks REPLICATION SLAVE and REPLICATION CLIENT" in message
        execute(mariadb_server, database, f"GRANT REPLICATION SLAVE, REPLICATION CLIENT ON *.* "
                                          f"TO '{user}'@'127.0.0.1'")
        MySQLSource(config).check()
    finally:
        execute(mariadb_server, database, f"DROP USER '{user}'@'127.0.0.1'")


# --------------------------------------------------------------------------- changes


def test_inserts_updates_key_changes_and_deletes_land_as_the_source(
        spark: Any, tmp_path: Path, mariadb_server: MariaDBServer, database: str) -> None:
    execute(mariadb_server, database,
            "CREATE TABLE orders (id INT PRIMARY KEY, label VARCHAR(20), amount DECIMAL(12, 2))",
            "INSERT INTO orders SELECT seq, 'first', seq / 4 FROM seq_1_to_40", TYPES_DDL,
            "CREATE TABLE dated (id INT PRIMARY KEY, d DATE, dt DATETIME(6), ts TIMESTAMP NULL)")
    path = cdc_connection(tmp_path, mariadb_server, database,
                          ["orders", "every_type", "dated"])
    first = sync(path)
    assert {s.name: s.records_written for s in first.streams} == {
        "orders": 40, "every_type": 0, "dated": 0}
    columns = ["id", "label", "amount"]
    assert_equals_source(table_rows(spark, tmp_path, "orders"), mariadb_server, database,
                         "orders", columns)

    execute(mariadb_server, database,
            "INSERT INTO orders VALUES (41, 'new', 1.5), (42, 'new', 2.5)",
            "UPDATE orders SET label = 'updated' WHERE id IN (3, 4, 41)",
            "UPDATE orders SET id = id + 1000 WHERE id IN (1, 2)",  # key changes
            "DELETE FROM orders WHERE id IN (5, 42)",
            "SET SESSION sql_mode = ''", TYPES_ROWS,
            "INSERT INTO dated VALUES (1, '0000-00-00', '2024-02-00 01:00:00', "
            "'0000-00-00 00:00:00'), (2, '2024-00-15', '0001-01-01 00:00:00', NULL)")
    # warned: every row of dated has a note (rejected), as a snapshot's would
    second = sync(path, "warned")
    # 2 inserts, 3 updates, 2 key changes (tombstone + row each), 2 deletes, 3 typed rows
    assert {s.name: s.records_written for s in second.streams} == {
        "orders": 11, "every_type": 3, "dated": 2}
    rows = table_rows(spark, tmp_path, "orders")
    assert_equals_source(rows, mariadb_server, database, "orders", columns)
    tombstones = {r["id"] for r in rows if r["_hw_deleted"]}
    assert tombstones == {1, 2, 5, 42}
    typed = {r["id"]: r for r in table_rows(spark, tmp_path, "every_type")}
    for key, expected in EXPECTED_TYPES.items():
        for column, value in expected.items():
            assert typed[key][column] == value, (key, column, typed[key][column])
    assert all(typed[2][c] is None for c in EXPECTED_TYPES[1])
    # Zero and partial dates: the snapshot reader's notes (test_mysql_source.py), value
    # for value.
    dated = {r["id"]: r for r in table_rows(spark, tmp_path, "dated")}
    assert (dated[1]["d"], dated[1]["dt"], dated[1]["ts"]) == (None, None, None)
    assert sorted((n["field"], n["value"]) for n in dated[1]["_hw_notes"]) == [
        ("d", "0000-00-00"), ("dt", "2024-02-00 01:00:00.000000"),
        ("ts", "0000-00-00 00:00:00")]
    assert [(n["field"], n["value"]) for n in dated[2]["_hw_notes"]] == [("d", "2024-00-15")]

    # The state moved: a sync reads only what changed since, a key may come back.
    execute(mariadb_server, database, "INSERT INTO orders VALUES (5, 'back', 0)",
            "DELETE FROM orders WHERE id = 1001")
    third = sync(path)
    assert {s.name: s.records_written for s in third.streams} == {
        "orders": 2, "every_type": 0, "dated": 0}
    assert_equals_source(table_rows(spark, tmp_path, "orders"), mariadb_server, database,
                         "orders", columns)


def test_an_unfinished_snapshot_is_planned_again_from_its_own_position(
        mariadb_server: MariaDBServer, database: str) -> None:
    """A new run from a snapshot's progress reads the ranges again from the snapshot's
    ``P0``, not a new position: the rows already landed carry ``P0 - 1``, and a delete
    made since must still be read as a change."""
    execute(mariadb_server, database, "CREATE TABLE t (id INT PRIMARY KEY)",
            "INSERT INTO t SELECT seq FROM seq_1_to_30")
    config = mariadb_server.source_config(database, replication_method="cdc",
                                          rows_per_partition=10)
    (stream,) = MySQLSource(config).streams()
    first = stream.partitions(None)
    position = first[0].params["snapshot_binlog"]
    execute(mariadb_server, database, "DELETE FROM t WHERE id = 1")
    progress = {"snapshot": {"binlog": position, "plan": first[0].params["snapshot_plan"],
                             "done": [first[0].id]}}
    again = stream.partitions(progress)
    assert {p.params["snapshot_binlog"] for p in again} == {position}
    assert stream.partitions(None)[0].params["snapshot_binlog"] != position
    # ... and the delete is a change from that position on.
    (changes,) = stream.partitions({"binlog": position})
    assert [(r["id"], r["_hw_deleted"]) for r in stream.read(changes)] == [(1, True)]  # type: ignore[index]


# --------------------------------------------------------------------------- handover


class Writer(threading.Thread):
    """Inserts, updates (the key's too) and deletes random rows until told to stop."""

    def __init__(self, server: MariaDBServer, database: str, first_new: int) -> None:
        super().__init__(daemon=True)
        self.server, self.database = server, database
        self.stop = threading.Event()
        self.writes = 0
        self.next_id = first_new
        self.error: BaseException | None = None

    def run(self) -> None:
        chance = random.Random(7)
        connection = self.server.connect(self.database)
        try:
            with connection.cursor() as cursor:
                while not self.stop.is_set():
                    key = chance.randrange(1, self.next_id)
                    action = chance.choice(["insert", "update", "delete", "key"])
                    if action == "insert":
                        cursor.execute("INSERT INTO items VALUES (%s, 'inserted', %s)",
                                       [self.next_id, self.writes])
                        self.next_id += 1
                    elif action == "update":
                        cursor.execute("UPDATE items SET label = 'updated', n = %s "
                                       "WHERE id = %s", [self.writes, key])
                    elif action == "delete":
                        cursor.execute("DELETE FROM items WHERE id = %s", [key])
                    else:
                        cursor.execute("UPDATE items SET id = %s WHERE id = %s",
                                       [self.next_id, key])
                        self.next_id += 1
                    self.writes += 1
                    time.sleep(0.01)
        except BaseException as exc:
            self.error = exc
        finally:
            connection.close()


def test_the_snapshot_hands_over_to_the_binary_log_under_concurrent_writes(
        spark: Any, tmp_path: Path, mariadb_server: MariaDBServer, database: str) -> None:
    execute(mariadb_server, database,
            "CREATE TABLE items (id INT PRIMARY KEY, label VARCHAR(20), n INT)",
            "INSERT INTO items SELECT seq, 'first', 0 FROM seq_1_to_300")
    path = cdc_connection(tmp_path, mariadb_server, database, ["items"], rows_per_partition=25,
                          checkpoint={"partitions_per_checkpoint": 4,
                                      "concurrent_checkpoints": 2})
    writer = Writer(mariadb_server, database, first_new=301)
    writer.start()
    try:
        sync(path)  # 12 key ranges read while the writer runs
    finally:
        writer.stop.set()
        writer.join()
    assert writer.error is None, writer.error
    assert writer.writes >= 20, writer.writes
    sync(path)  # every change since the snapshot's position, the writer's included
    assert_equals_source(table_rows(spark, tmp_path, "items"), mariadb_server, database,
                         "items", ["id", "label", "n"])


# --------------------------------------------------------------------------- crashes


def test_killed_first_load_and_killed_change_sync_resume_with_every_row_once(
        spark: Any, tmp_path: Path, mariadb_server: MariaDBServer, database: str) -> None:
    execute(mariadb_server, database,
            "CREATE TABLE orders (id BIGINT PRIMARY KEY, label VARCHAR(20))",
            "INSERT INTO orders SELECT seq * seq, 'before' FROM seq_1_to_80")
    path = cdc_connection(tmp_path, mariadb_server, database, ["orders"], lake="lakehouse",
                          store_file=None,
                          checkpoint={"partitions_per_checkpoint": 2, "concurrent_checkpoints": 1})
    # Mid-snapshot: after checkpoint 2's commit, before its state (4 checkpoints of 2 ranges).
    killed = sync_in_process(tmp_path, path, env={FAULT: "after-commit:2"})
    assert killed.exit_code == -9, killed.describe()
    run = store(tmp_path).find_unfinished_run("my_cdc")
    assert run is not None
    execute(mariadb_server, database, "UPDATE orders SET label = 'during' WHERE id <= 100",
            "DELETE FROM orders WHERE id = 6400", "INSERT INTO orders VALUES (7, 'new')")
    resumed = sync_in_process(tmp_path, path, "--one-run")
    assert resumed.exit_code == 0, resumed.describe()
    assert resumed.document is not None and resumed.document["run_id"] == run.run_id
    assert_each_checkpoint_committed_once(spark, str(tmp_path / "lakehouse" / "orders"),
                                          tmp_path, run.run_id, "orders")

    # A change sync killed between its one checkpoint's commit and its state.
    execute(mariadb_server, database, "UPDATE orders SET id = 8 WHERE id = 7",
            "DELETE FROM orders WHERE id = 1")
    killed = sync_in_process(tmp_path, path, env={FAULT: "after-commit:1"})
    assert killed.exit_code == -9, killed.describe()
    execute(mariadb_server, database, "INSERT INTO orders VALUES (10, 'late')")
    for _ in range(2):  # the killed run resumed, then one more for the late insert
        again = sync_in_process(tmp_path, path, "--one-run")
        assert again.exit_code == 0, again.describe()
    rows = table_rows(spark, tmp_path, "orders", "lakehouse")
    assert_equals_source(rows, mariadb_server, database, "orders", ["id", "label"])
    assert {r["id"] for r in rows if r["_hw_deleted"]} == {1, 6400, 7}
