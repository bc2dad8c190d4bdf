"""History (SCD type 2) and hard/soft deletes on every destination that keeps them (issue 38).

One scenario, run on Delta, Iceberg and PostgreSQL: a PostgreSQL CDC source (a
real logical replication slot) whose three tables get the same changes between
three syncs: updates (two of one key in one sync, in two transactions), deletes,
a deleted key inserted again, an update and a delete in one transaction.  Table
``scd_history`` is synced as ``history``, ``scd_soft`` as ``append_dedup`` with
``deletes: soft`` and ``scd_hard`` with ``deletes: hard``: three streams of one
connection, so the three concerns share the syncs (each costs a Spark job per
stream, not a JVM).

Each table is read back by a reader of the test's own (Spark's Delta reader,
PyIceberg, psycopg) and checked: the history table holds exactly the versions
expected, at most one current per key, and no two versions of a key overlap
(SQL over the table's rows); a version's ``_hw_valid_from`` is the run's planned
time (``_pg_lsn`` is no time); a checkpoint committed again after its commit,
with its marker and with a new one, changes nothing.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import replace
from datetime import datetime
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pytest

from headwater.destinations import Destination, build_destination
from headwater.destinations._base import CommitMarker
from headwater.destinations._history_rule import HISTORY_NAMES
from headwater.engine._markers import lane_app_id_prefix
from headwater.metadata_store import MetadataStore
from headwater.plan import RunPlan
from headwater.table_schema import META_NAMES
from tests._postgres import PostgresServer
from tests.integration._connections import connection_file, sync
from tests.integration.connectors.postgres.test_postgres_source import execute
from tests.integration.destinations.iceberg._catalogs import iceberg_config, load_table
from tests.integration.destinations.postgres._tables import config as postgres_config
from tests.integration.destinations.postgres._tables import read_rows as postgres_rows

pytestmark = pytest.mark.spark

NAME = "scd"
KEYED = {"sync_mode": "incremental", "cursor_field": "_pg_lsn", "primary_key": ["id"]}
#: Names no other test's tables have: a CDC stream's replication slot is named after its
#: table, and slots are the server's, shared by every test (and xdist worker) on it.
HISTORY, SOFT, HARD = "scd_history", "scd_soft", "scd_hard"
STREAMS = [{"name": HISTORY, "destination_sync_mode": "history", **KEYED},
           {"name": SOFT, "destination_sync_mode": "append_dedup", "deletes": "soft", **KEYED},
           {"name": HARD, "destination_sync_mode": "append_dedup", "deletes": "hard", **KEYED}]
TABLES = (HISTORY, SOFT, HARD)

#: The changes between the syncs, each string one transaction, ``{t}`` each table.
BEFORE_SECOND = ["UPDATE {t} SET v = 'a2' WHERE id = 1", "UPDATE {t} SET v = 'a3' WHERE id = 1",
                 "UPDATE {t} SET v = 'b2' WHERE id = 2", "DELETE FROM {t} WHERE id = 3",
                 "INSERT INTO {t} VALUES (7, 'g1')"]
BEFORE_THIRD = ["INSERT INTO {t} VALUES (3, 'c2')", "DELETE FROM {t} WHERE id = 7",
                "UPDATE {t} SET v = 'a4' WHERE id = 1; DELETE FROM {t} WHERE id = 2"]
#: (id, v, current) of every version the history table must hold after the third sync.
VERSIONS = Counter([(1, "a1", False), (1, "a2", False), (1, "a3", False), (1, "a4", True),
                    (2, "b1", False), (2, "b2", False), (3, "c1", False), (3, "c2", True),
                    (4, "d1", True), (5, "e1", True), (6, "f1", True), (7, "g1", False)])
#: The source's rows after the third sync.
LIVE = {(1, "a4"), (3, "c2"), (4, "d1"), (5, "e1"), (6, "f1")}

Reader = Callable[[Destination, str], pa.Table]


def _delta(folder: Path, request: pytest.FixtureRequest, spark: Any
           ) -> Iterator[tuple[dict[str, Any], Reader]]:
    def read(destination: Destination, stream: str) -> pa.Table:
        return spark.read.format("delta").load(destination.table_location(stream)).toArrow()

    yield {"type": "delta", "config": {"path": str(folder / "lake")}}, read


def _iceberg(folder: Path, request: pytest.FixtureRequest, spark: Any
             ) -> Iterator[tuple[dict[str, Any], Reader]]:
    config = iceberg_config(folder)

    def read(destination: Destination, stream: str) -> pa.Table:
        return load_table(config, stream).scan().to_arrow()

    yield {"type": "iceberg", "config": config}, read


def _postgres(folder: Path, request: pytest.FixtureRequest, spark: Any
              ) -> Iterator[tuple[dict[str, Any], Reader]]:
    server = request.getfixturevalue("postgres_server")
    with server.database() as database:
        yield {"type": "postgres", "config": postgres_config(server, database)}, postgres_rows


DESTINATIONS = {"delta": _delta, "iceberg": _iceberg, "postgres": _postgres}


@pytest.fixture(params=sorted(DESTINATIONS))
def destination(request: pytest.FixtureRequest, tmp_path: Path, spark: Any
                ) -> Iterator[tuple[dict[str, Any], Reader]]:
    """The destination section of the connection, and how the test reads a table."""
    yield from DESTINATIONS[request.param](tmp_path, request, spark)


def change(server: PostgresServer, database: str, transactions: list[str]) -> None:
    """Each transaction on every table, committed and flushed before the next sync."""
    for table in TABLES:
        for statement in transactions:
            execute(server, database, "SET synchronous_commit = on; "
                    + statement.format(t=table))


def test_history_and_deletes_over_three_syncs(
        spark: Any, tmp_path: Path, postgres_server: PostgresServer,
        destination: tuple[dict[str, Any], Reader]) -> None:
    section, read = destination
    with postgres_server.database() as database:
        for table in TABLES:
            execute(postgres_server, database, f"""
                CREATE TABLE {table} (id integer PRIMARY KEY, v text);
                INSERT INTO {table} VALUES (1, 'a1'), (2, 'b1'), (3, 'c1'), (4, 'd1'),
                                           (5, 'e1'), (6, 'f1')""")
        path = connection_file(
            tmp_path, name=NAME, source_type="postgres", streams=STREAMS, destination=section,
            source=postgres_server.source_config(database, replication_method="cdc"))
        runs = [sync(path).run_id]
        change(postgres_server, database, BEFORE_SECOND)
        runs.append(sync(path).run_id)
        change(postgres_server, database, BEFORE_THIRD)
        runs.append(sync(path).run_id)

        made = build_destination(section["type"], section["config"])
        history = read(made, HISTORY)
        assert Counter(zip(history.column("id").to_pylist(), history.column("v").to_pylist(),
                           history.column("_hw_is_current").to_pylist(),
                           strict=True)) == VERSIONS
        assert_valid_in_turn(spark, history)
        assert_dated_by_the_runs(history, tmp_path, runs)

        soft, hard = read(made, SOFT), read(made, HARD)
        assert rows(hard) == {(i, v, False) for i, v in LIVE}
        assert rows(soft) == {(i, v, False) for i, v in LIVE} | {(2, None, True), (7, None, True)}

        assert_replayed_checkpoint_changes_nothing(spark, made, read, tmp_path, runs[1])
        if section["type"] == "delta":
            assert_delta_commits(spark, made.table_location(HISTORY))


def assert_delta_commits(spark: Any, location: str) -> None:
    """The Delta history table was created with deletion vectors on; the first sync,
    into a table with no files, appended its versions (no MERGE, nothing to close), and
    the later syncs' MERGEs closed versions with deletion vectors, not rewritten files."""
    detail = spark.sql(f"DESCRIBE DETAIL delta.`{location}`").first()
    assert detail["properties"].get("delta.enableDeletionVectors") == "true", detail
    commits = spark.sql(f"DESCRIBE HISTORY delta.`{location}`").orderBy("version").collect()
    operations = [c["operation"] for c in commits]
    assert operations[:3] == ["WRITE", "WRITE", "MERGE"], operations  # create, first, second
    assert commits[1]["operationParameters"]["mode"] == "Append", commits[1]
    merged = commits[2]["operationMetrics"]
    assert int(merged["numTargetDeletionVectorsAdded"]) > 0, merged
    assert int(merged["numTargetRowsCopied"]) == 0, merged


def rows(table: pa.Table) -> set[tuple[Any, ...]]:
    """(id, v, deleted) of every row of an append_dedup table."""
    return set(zip(table.column("id").to_pylist(), table.column("v").to_pylist(),
                   table.column("_pg_deleted").to_pylist(), strict=True))


def assert_valid_in_turn(spark: Any, history: pa.Table) -> None:
    """SQL over the table's rows: one current version per key at most, a version is
    current exactly when it has no end, ends no earlier than it begins, and no two
    versions of a key overlap (``[from, to)``; a zero-length one overlaps nothing)."""
    frame = spark.createDataFrame(history.select(
        ["id", "v", "_pg_lsn", "_hw_valid_from", "_hw_valid_to", "_hw_is_current"]))
    frame.createOrReplaceTempView("history_under_test")
    try:
        bad = spark.sql("""
            SELECT id FROM history_under_test WHERE _hw_is_current GROUP BY id
            HAVING count(*) > 1
            UNION ALL
            SELECT id FROM history_under_test
            WHERE _hw_is_current <> (_hw_valid_to IS NULL) OR _hw_valid_to < _hw_valid_from
            UNION ALL
            SELECT a.id FROM history_under_test a JOIN history_under_test b
              ON a.id = b.id AND a._pg_lsn < b._pg_lsn
            WHERE greatest(a._hw_valid_from, b._hw_valid_from)
                  < least(coalesce(a._hw_valid_to, TIMESTAMP '9999-12-31'),
                          coalesce(b._hw_valid_to, TIMESTAMP '9999-12-31'))
               OR b._hw_valid_from < a._hw_valid_from
        """).collect()
    finally:
        spark.catalog.dropTempView("history_under_test")
    assert bad == []


def assert_dated_by_the_runs(history: pa.Table, tmp_path: Path, runs: list[str]) -> None:
    """``_pg_lsn`` is no time: a version begins at the planned time of the run that opened
    it, and the one it closed ends there (the run of the delete for a deleted key)."""
    store = MetadataStore(f"sqlite:///{tmp_path / 'meta.db'}")
    planned = []
    for run_id in runs:
        run = store.get_run(run_id)
        assert run is not None
        planned.append(datetime.fromisoformat(RunPlan.from_dict(run.plan).streams[0].planned_at))
    by_version = {(i, v): (begin, end) for i, v, begin, end in zip(
        *[history.column(c).to_pylist() for c in ("id", "v", "_hw_valid_from", "_hw_valid_to")],
        strict=True)}
    first, second, third = planned
    assert by_version[(4, "d1")] == (first, None)
    assert by_version[(1, "a1")] == (first, second)
    assert by_version[(1, "a2")] == (second, second)  # two changes in one sync: one instant
    assert by_version[(1, "a3")] == (second, third)
    assert by_version[(3, "c1")] == (first, second)  # deleted in the second sync
    assert by_version[(3, "c2")] == (third, None)
    assert by_version[(2, "b2")] == (second, third)  # updated and deleted: closed by the delete


def assert_replayed_checkpoint_changes_nothing(spark: Any, made: Destination, read: Reader,
                                               tmp_path: Path, run_id: str) -> None:
    """The second sync's history checkpoint committed again, after its commit: with its
    own marker (the marker lookup and the idempotency pair answer), then as another
    run's checkpoint, as a ``backfill`` of the same changes would commit it (no marker
    matches: the history rule answers, no change being newer than the versions
    stored).  The table stays as it was."""
    store = MetadataStore(f"sqlite:///{tmp_path / 'meta.db'}")
    run = store.get_run(run_id)
    assert run is not None
    [plan] = [s for s in RunPlan.from_dict(run.plan).streams if s.stream.name == HISTORY]
    [checkpoint] = plan.checkpoints
    before = read(made, HISTORY)
    batch = before.filter(pc.equal(before.column("_hw_checkpoint"), checkpoint.index))
    assert batch.num_rows == 4  # a2, a3, b2 and g1 (c1's delete opened none)
    rows_again = spark.createDataFrame(batch.drop_columns(HISTORY_NAMES))
    marker = CommitMarker(app_id=lane_app_id_prefix(store.store_id, NAME, HISTORY) + "0",
                          version=checkpoint.index, run_id=run_id, stream=HISTORY,
                          checkpoint_index=checkpoint.index, attempt=2)
    made.prepare(spark, plan, pa.schema([f for f in batch.schema
                                         if f.name not in {*META_NAMES, *HISTORY_NAMES}]))
    # As a backfill's checkpoint: another run, index and lane, so no marker is found.
    backfill = replace(marker, app_id=marker.app_id + "-backfill", version=1,
                       run_id="backfill", checkpoint_index=checkpoint.index + 1000, attempt=1)
    for again in (marker, backfill):
        result = made.commit(spark, plan, checkpoint, rows_again, again)
        assert result.already_committed or again is not marker
        assert sorted_rows(read(made, HISTORY)) == sorted_rows(before)


def sorted_rows(table: pa.Table) -> list[tuple[Any, ...]]:
    columns = ["id", "v", "_pg_lsn", "_hw_valid_from", "_hw_valid_to", "_hw_is_current"]
    return sorted(zip(*[table.column(c).to_pylist() for c in columns], strict=True),
                  key=repr)
