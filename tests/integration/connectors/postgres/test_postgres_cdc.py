"""Change data capture against a real logical replication slot, read back with plain Spark.

Issue 35: the handover from the first snapshot to the changes (a transaction
straddling the slot's creation), a primary-key update, a first snapshot resumed
after an interruption, and a generated differential test of all of them: after
every sync the Delta table's current rows (``spark.read.format("delta")``) must
be the source table's rows (psycopg).
"""

from __future__ import annotations

import random
import time
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import psycopg
import pytest

from headwater import _events
from headwater.config import load_connection
from headwater.engine import SyncEngine, SyncResult
from headwater.metadata_store import MetadataStore
from tests._postgres import PostgresServer
from tests.integration._connections import connection_file
from tests.integration.connectors.postgres.test_postgres_source import execute, sync

pytestmark = pytest.mark.spark

STREAMS = [{"name": "t", "sync_mode": "incremental", "destination_sync_mode": "append_dedup",
            "cursor_field": "_pg_lsn", "primary_key": ["id"]}]
SOURCE_ROWS = "SELECT id, v, n FROM t"
#: How long a test waits for the slot's creation to reach a step (it takes well under 1 s).
PATIENCE_S = 120.0


@pytest.fixture
def database(postgres_server: PostgresServer) -> Iterator[str]:
    with postgres_server.database() as name:
        execute(postgres_server, name, "CREATE TABLE t (id integer PRIMARY KEY, v text, n integer)")
        yield name


def cdc_connection(tmp_path: Path, server: PostgresServer, database: str,
                   **checkpoint: int) -> Path:
    """A CDC connection of table ``t``, its snapshot in key ranges of about 10 rows (in one
    checkpoint unless ``checkpoint`` says otherwise: each costs a Delta commit)."""
    return connection_file(
        tmp_path, name="pg", source_type="postgres", streams=STREAMS,
        source=server.source_config(database, replication_method="cdc", rows_per_partition=10),
        checkpoint=checkpoint or {"partitions_per_checkpoint": 16})


def table_rows(spark: Any, tmp_path: Path) -> Counter[tuple[Any, ...]]:
    """The table's current rows (tombstones left out), read by plain Spark."""
    frame = spark.read.format("delta").load(str(tmp_path / "lake" / "t"))
    return Counter(tuple(r) for r in frame.where("NOT _pg_deleted").select("id", "v", "n")
                   .collect())


def source_rows(server: PostgresServer, database: str) -> Counter[tuple[Any, ...]]:
    return Counter(execute(server, database, SOURCE_ROWS))


def committed(server: PostgresServer, database: str, statements: str) -> None:
    """Run ``statements`` and wait for their commit to be flushed (the test server runs
    ``synchronous_commit = off``; the next sync reads up to the flushed position)."""
    execute(server, database, "SET synchronous_commit = on; " + statements)


def open_transaction(server: PostgresServer, database: str) -> psycopg.Connection[Any]:
    """A connection whose transaction the caller commits (its commit is flushed at once)."""
    conn = psycopg.connect(server.database_url(database))
    conn.execute("SET synchronous_commit = on")
    return conn


# --------------------------------------------------------------------------- the slot race


def _xid(conn: psycopg.Connection[Any]) -> str:
    row = conn.execute("SELECT pg_current_xact_id()::text").fetchone()
    assert row is not None
    return str(row[0])


def _await_slot_waiting_for(server: PostgresServer, database: str, xid: str,
                            ended: Callable[[], bool]) -> None:
    """Until the slot's creation waits for transaction ``xid`` (a lock it was not granted)."""
    deadline = time.monotonic() + PATIENCE_S
    while time.monotonic() < deadline:
        assert not ended(), "the sync ended before its slot waited for the transaction"
        if execute(server, database, "SELECT 1 FROM pg_locks WHERE locktype = 'transactionid' "
                   "AND NOT granted AND transactionid::text = %s", [xid]):
            return
        time.sleep(0.02)
    raise AssertionError(f"the slot's creation never waited for transaction {xid}")


def first_sync_across_slot_creation(
        server: PostgresServer, database: str, run: Callable[[], SyncResult],
        work: Sequence[Callable[[psycopg.Connection[Any]], None]]) -> SyncResult:
    """Run the first CDC sync (``run``) while three transactions hold the slot's creation;
    the third commits only after the sync, so after its snapshot read the rows it changed.

    Why three: a new logical slot first waits for the transactions running when it
    starts (``work[0]``'s), then for those running once it can decode whole
    transactions (``work[1]``'s); one that takes its id between those two waits
    (``work[2]``'s) is decoded whole although its changes precede the slot's
    consistent point: its rows have WAL positions below the snapshot's, its commit
    comes after it.  Each ``work`` gets its own connection and must touch keys the
    others do not (or they would wait for each other's row locks).
    """
    first, second, straddler = (open_transaction(server, database) for _ in range(3))
    with ThreadPoolExecutor(max_workers=1) as pool:
        try:
            work[0](first)
            sync_run = pool.submit(run)
            _await_slot_waiting_for(server, database, _xid(first), sync_run.done)
            work[1](second)
            xid = _xid(second)
            first.commit()
            _await_slot_waiting_for(server, database, xid, sync_run.done)
            work[2](straddler)
            _xid(straddler)
            second.commit()
            result = sync_run.result(timeout=PATIENCE_S * 2)
            straddler.commit()
        finally:
            # Before the pool waits for the sync: a transaction left open would hold it.
            for conn in (first, second, straddler):
                conn.close()
    return result


def statements(*sql: str) -> Callable[[psycopg.Connection[Any]], None]:
    def run(conn: psycopg.Connection[Any]) -> None:
        for statement in sql:
            conn.execute(statement)

    return run


# --------------------------------------------------------------------------- cases 7, 8, 9


def test_a_transaction_straddling_the_slots_creation_wins_over_the_snapshot(
        spark: Any, tmp_path: Path, postgres_server: PostgresServer, database: str) -> None:
    """Issue 35 case 7: the straddler's update and delete, committed after the snapshot
    read the rows, must replace the snapshot's rows."""
    committed(postgres_server, database,
              "INSERT INTO t SELECT g, 'old' || g, g FROM generate_series(1, 30) g")
    path = cdc_connection(tmp_path, postgres_server, database)
    first = first_sync_across_slot_creation(
        postgres_server, database, lambda: sync(path),
        [statements("UPDATE t SET v = 'before the slot' WHERE id = 30"),
         statements("DELETE FROM t WHERE id = 29"),
         statements("UPDATE t SET v = 'straddle-update' WHERE id = 1",
                    "DELETE FROM t WHERE id = 2")])
    assert first.status == "succeeded"
    landed = table_rows(spark, tmp_path)
    assert landed[(1, "old1", 1)] == 1 and landed[(2, "old2", 2)] == 1, \
        "the snapshot was meant to read the rows before the straddler committed"

    sync(path)
    assert table_rows(spark, tmp_path) == source_rows(postgres_server, database)
    assert Counter({(1, "straddle-update", 1): 1}) <= table_rows(spark, tmp_path)


def test_a_primary_key_update_closes_the_old_key(
        spark: Any, tmp_path: Path, postgres_server: PostgresServer, database: str) -> None:
    """Issue 35 case 8: ``UPDATE t SET id = 100 WHERE id = 1`` leaves no row of key 1; a key
    moved away and taken again in the same transaction keeps its new row."""
    committed(postgres_server, database,
              "INSERT INTO t SELECT g, 'v' || g, g FROM generate_series(1, 10) g")
    path = cdc_connection(tmp_path, postgres_server, database)
    sync(path)
    committed(postgres_server, database, "UPDATE t SET id = 100 WHERE id = 1")
    changes = sync(path)
    assert table_rows(spark, tmp_path) == source_rows(postgres_server, database)
    assert sum(table_rows(spark, tmp_path).values()) == 10
    assert changes.streams[0].records_read == 2  # the old key's tombstone, the new row

    committed(postgres_server, database, "BEGIN; UPDATE t SET id = 200 WHERE id = 2; "
              "INSERT INTO t VALUES (2, 'taken again', 0); UPDATE t SET id = 3000 WHERE id = 3; "
              "UPDATE t SET id = 3 WHERE id = 3000; COMMIT")
    sync(path)
    assert table_rows(spark, tmp_path) == source_rows(postgres_server, database)


def test_a_resumed_first_snapshot_saves_its_position(
        spark: Any, tmp_path: Path, postgres_server: PostgresServer, database: str) -> None:
    """Issue 35 case 9: the first snapshot stops after its first checkpoint released its
    state; the resumed run must end with the slot's position as the state, so the next
    sync reads changes, not the whole table again."""
    committed(postgres_server, database,
              "INSERT INTO t SELECT g, 'v' || g, g FROM generate_series(1, 30) g")
    path = cdc_connection(tmp_path, postgres_server, database,
                          partitions_per_checkpoint=1, concurrent_checkpoints=1)
    connection = load_connection(path)
    store = MetadataStore(connection.metadata_store or "")
    engine = SyncEngine(connection, store)

    def stop_after_the_first_release(moment: str) -> None:
        if moment == "after-release":
            engine.stopping.set()

    _events.listen(stop_after_the_first_release)
    try:
        stopped = engine.run()
    finally:
        _events.clear()
    assert stopped.status == "stopped", stopped.to_dict()
    assert 1 <= stopped.streams[0].checkpoints_done < stopped.streams[0].checkpoints
    progress = store.get_state("pg", "t")
    assert progress is not None and len(progress["snapshot"]["done"]) == 1, progress

    resumed = sync(path)
    assert resumed.resumed and resumed.run_id == stopped.run_id
    slot = execute(postgres_server, database, "SELECT confirmed_flush_lsn::text FROM "
                   "pg_replication_slots WHERE database = current_database()")
    assert store.get_state("pg", "t") == {"lsn": slot[0][0]}
    assert table_rows(spark, tmp_path) == source_rows(postgres_server, database)

    committed(postgres_server, database, "UPDATE t SET v = 'changed' WHERE id = 7")
    changes = sync(path)
    assert (changes.streams[0].partitions, changes.streams[0].records_read) == (1, 1)
    assert table_rows(spark, tmp_path) == source_rows(postgres_server, database)


# --------------------------------------------------------------------------- generated


class _Changes:
    """Random changes of table ``t`` in key spaces of their own (``space * 1000 + 0..99``),
    so transactions open at once never wait for each other's row locks."""

    def __init__(self, seed: int) -> None:
        self.rng = random.Random(seed)

    def _key(self, space: int) -> int:
        return space * 1000 + self.rng.randrange(100)

    def _value(self) -> tuple[str, int]:
        return "".join(self.rng.choices("abc", k=self.rng.randrange(1, 4))), self.rng.randrange(99)

    def apply(self, conn: psycopg.Connection[Any], space: int, count: int) -> None:
        """``count`` inserts, updates, key changes and deletes in ``conn``'s transaction."""
        for _ in range(count):
            kind, key, other = self.rng.random(), self._key(space), self._key(space)
            v, n = self._value()
            if kind < 0.3:
                conn.execute("INSERT INTO t VALUES (%s, %s, %s) ON CONFLICT (id) DO UPDATE "
                             "SET v = excluded.v, n = excluded.n", [key, v, n])
            elif kind < 0.55:
                conn.execute("UPDATE t SET v = %s, n = n + 1 WHERE id = %s", [v, key])
            elif kind < 0.8:
                # A key change (to a free key), sometimes changing the other columns too.
                conn.execute("UPDATE t SET id = %s, v = CASE WHEN %s THEN %s ELSE v END "
                             "WHERE id = %s AND NOT EXISTS (SELECT 1 FROM t WHERE id = %s)",
                             [other, self.rng.random() < 0.5, v, key, other])
            else:
                conn.execute("DELETE FROM t WHERE id = %s", [key])

    def transactions(self, server: PostgresServer, database: str, spaces: Sequence[int],
                     count: int) -> None:
        """``count`` committed transactions of 1 to 6 changes, each in a random space."""
        for _ in range(count):
            with open_transaction(server, database) as conn:
                self.apply(conn, self.rng.choice(spaces), self.rng.randrange(1, 7))


def test_generated_changes_land_as_the_source_holds_them(
        spark: Any, tmp_path: Path, postgres_server: PostgresServer, database: str) -> None:
    """Inserts, updates, key changes and deletes, in transactions committed between syncs,
    held open across a sync, and held open across the slot's creation (one straddling
    it); after every sync the table's current rows are the source's."""
    changes = _Changes(seed=35)
    committed(postgres_server, database,
              "INSERT INTO t SELECT s * 1000 + g, 'init', g FROM generate_series(0, 2) s, "
              "generate_series(0, 99, 3) g")
    path = cdc_connection(tmp_path, postgres_server, database)

    def work(space: int) -> Callable[[psycopg.Connection[Any]], None]:
        return lambda conn: changes.apply(conn, space, changes.rng.randrange(1, 8))

    first_sync_across_slot_creation(postgres_server, database, lambda: sync(path),
                                    [work(0), work(1), work(2)])
    for _ in range(2):  # each round a sync: four in all (each costs a Delta MERGE)
        changes.transactions(postgres_server, database, [0, 1], changes.rng.randrange(1, 6))
        # Changed before the sync plans, committed after it: the next sync reads it.
        with open_transaction(postgres_server, database) as held:
            changes.apply(held, 2, changes.rng.randrange(1, 5))
            sync(path)
            assert table_rows(spark, tmp_path) == source_rows(postgres_server, database)
    sync(path)
    assert table_rows(spark, tmp_path) == source_rows(postgres_server, database)
