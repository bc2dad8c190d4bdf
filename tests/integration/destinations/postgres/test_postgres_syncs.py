"""Syncs into PostgreSQL, in process on the shared Spark session, read back with psycopg.

One database for the module, one schema per test.  Every mode lands exactly the
source's rows; types round-trip (decimals exact, timestamptz, jsonb); a new
column arrives by ALTER TABLE; values PostgreSQL cannot take are noted, not
fatal; and ``headwater check`` says what is wrong in plain words.
"""

from __future__ import annotations

import base64
import datetime as dt
import decimal
import json
import uuid
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psycopg
import pytest

from headwater.connectors.sample import SampleSource
from headwater.destinations.postgres import PostgresDestination
from tests.integration._connections import connection_file
from tests.integration._in_process import run_in_process, sync_in_process
from tests.integration.destinations.postgres._tables import config

pytestmark = pytest.mark.spark

SOURCE = {"seed": 5, "users": 120, "orders": 150, "rows_per_partition": 60,
          "updates_per_generation": 15, "new_per_generation": 10}


@pytest.fixture(scope="module")
def database(postgres_server: Any) -> Iterator[str]:
    with postgres_server.database() as name:
        yield name


@pytest.fixture
def schema() -> str:
    return f"t_{uuid.uuid4().hex[:10]}"


def query(server: Any, database: str, statement: str, *params: Any) -> list[tuple[Any, ...]]:
    """Rows of ``statement``, asked by a plain psycopg client (outside Headwater)."""
    with psycopg.connect(server.database_url(database), options="-c TimeZone=UTC") as conn:
        return conn.execute(statement, list(params)).fetchall()


def write(tmp_path: Path, server: Any, database: str, schema: str, streams: list[dict[str, Any]],
          source: dict[str, Any], *, source_type: str = "sample", per_checkpoint: int = 1,
          **destination: Any) -> Path:
    return connection_file(
        tmp_path, name="pg", source=source, streams=streams, source_type=source_type,
        checkpoint={"partitions_per_checkpoint": per_checkpoint, "concurrent_checkpoints": 2},
        destination={"type": "postgres",
                     "config": config(server, database, schema, **destination)})


def synced(tmp_path: Path, path: Path) -> dict[str, Any]:
    result = sync_in_process(tmp_path, path)
    assert result.exit_code == 0, result.describe()
    assert result.document is not None
    return result.document


def keys(server: Any, database: str, schema: str, table: str,
         columns: str = "id, updated_at") -> Counter[tuple[Any, ...]]:
    return Counter(query(server, database, f'SELECT {columns} FROM "{schema}"."{table}"'))


def expected(source: dict[str, Any], stream: str) -> Counter[tuple[Any, ...]]:
    rows = SampleSource(source).expected_rows(stream).select(["id", "updated_at"]).to_pylist()
    return Counter((r["id"], r["updated_at"]) for r in rows)


def test_dedup_and_staged_overwrite(tmp_path: Path, postgres_server: Any, database: str,
                                    schema: str) -> None:
    """append_dedup keeps the newest row per key; an overwrite of three checkpoints is
    published at once; nothing staged is left, and each commit has its marker."""
    streams = [{"name": "users", "sync_mode": "incremental", "destination_sync_mode":
                "append_dedup", "cursor_field": "updated_at", "primary_key": ["id"]},
               {"name": "orders", "sync_mode": "full_refresh",
                "destination_sync_mode": "overwrite"}]
    for generation in (0, 1):
        source = {**SOURCE, "generation": generation}
        path = write(tmp_path, postgres_server, database, schema, streams, source)
        document = synced(tmp_path, path)
        assert keys(postgres_server, database, schema, "users") == expected(source, "users")
        assert keys(postgres_server, database, schema, "orders") == expected(source, "orders")
    run_id = document["run_id"]
    assert query(postgres_server, database, "SELECT count(*) FROM _headwater.staging") == [(0,)]
    assert query(postgres_server, database, "SELECT count(*) FROM pg_tables WHERE schemaname "
                 "= '_headwater_staging'") == [(0,)]
    kinds = Counter(query(postgres_server, database, "SELECT stream, kind FROM "
                          "_headwater.commit_markers WHERE run_id = %s", run_id))
    # users: a commit per checkpoint; orders: the staged markers went with the publish.
    checkpoints = [s["checkpoints_done"] for s in document["streams"] if s["name"] == "users"]
    assert kinds == {("users", "commit"): checkpoints[0], ("orders", "publish"): 1}, kinds
    index = query(postgres_server, database, "SELECT indexdef FROM pg_indexes WHERE "
                  "schemaname = %s AND tablename = 'users'", schema)
    assert any("UNIQUE" in d and "NULLS NOT DISTINCT" in d for (d,) in index), index


def test_full_refresh_append_and_a_new_column_by_alter_table(
        tmp_path: Path, postgres_server: Any, database: str, schema: str) -> None:
    """Each full refresh appends every row; the second brings a column (ALTER TABLE)."""
    streams = [{"name": "users", "sync_mode": "full_refresh", "destination_sync_mode": "append"}]
    small = {**SOURCE, "users": 30, "orders": 0}
    first = synced(tmp_path, write(tmp_path, postgres_server, database, schema, streams, small))
    path = write(tmp_path, postgres_server, database, schema, streams,
                 {**small, "schema_version": 2})
    second = synced(tmp_path, path)
    columns = dict(query(postgres_server, database, "SELECT column_name, data_type FROM "
                         "information_schema.columns WHERE table_schema = %s AND "
                         "table_name = 'users'", schema))
    assert columns["loyalty_tier"] == "text"
    assert columns["updated_at"] == "timestamp with time zone"
    assert columns["_hw_notes"] == "jsonb"
    filled = query(postgres_server, database, f'SELECT count(loyalty_tier), count(*) FROM '
                   f'"{schema}".users')
    assert filled == [(30, 60)]
    assert keys(postgres_server, database, schema, "users") == \
        expected(small, "users") + expected({**small, "schema_version": 2}, "users")

    # What `headwater state realign` and `runs` read, from the table and the markers.
    destination = PostgresDestination(config(postgres_server, database, schema))
    counts = destination.run_row_counts(None, "users")
    assert counts == {first["run_id"]: 30, second["run_id"]: 30}
    lanes = destination.lane_versions(None, "users", "headwater/")
    assert len(lanes) == 1 and max(lanes.values()) >= 1, lanes

    # A replay of the first run replaces its rows (now with the new column), in one
    # transaction; the second run's rows stay.
    replayed = run_in_process(tmp_path, "replay", first["run_id"], "--connection", str(path),
                              "--json")
    assert replayed.exit_code == 0, replayed.describe()
    assert query(postgres_server, database, f'SELECT _hw_run_id, count(loyalty_tier), '
                 f'count(*) FROM "{schema}".users GROUP BY 1 ORDER BY 1') == sorted(
        [(first["run_id"], 30, 30), (second["run_id"], 30, 30)])
    assert destination.delete_runs(None, "users", [first["run_id"]]) == 30
    assert destination.run_row_counts(None, "users") == {
        second["run_id"]: 30}


TYPED_SCHEMA = {
    "amount": {"type": "number", "format": "decimal", "precision": 38, "scale": 18},
    "at": {"type": "string", "format": "date-time"},
    "day": {"type": "string", "format": "date"},
    "address": {"type": "object", "properties": {"city": {"type": "string"},
                                                  "zip": {"type": "integer"}}},
    "tags": {"type": "array", "items": {"type": "string"}},
    "extra": {"type": "object"},
    "blob": {"type": "string", "contentEncoding": "base64"},
    "flag": {"type": "boolean"},
    "name": {"type": "string"},
}
AMOUNT = "12345678901234567890.123456789012345678"


def test_types_round_trip_and_bad_values_are_noted(tmp_path: Path, postgres_server: Any,
                                                   database: str, schema: str) -> None:
    """Decimals exact, timestamptz, dates, jsonb (struct, list, open value), bytea, boolean;
    text with a NUL character (PostgreSQL's text cannot hold it) lands null with a note,
    and the sync succeeds."""
    folder = tmp_path / "landing"
    folder.mkdir()
    records = [
        {"id": 1, "amount": AMOUNT, "at": "2026-11-28T10:11:12.345678+02:00", "day": "2026-02-28",
         "address": {"city": "Oslo", "zip": 150}, "tags": ["a", "b"],
         "extra": {"k": [1, 2.5, None]}, "blob": base64.b64encode(b"\x00\x01hw").decode(),
         "flag": True, "name": "plain"},
        {"id": 2, "amount": "-0.000000000000000001", "at": "1970-01-01T00:00:00Z",
         "day": "0001-01-01", "address": None, "tags": [], "extra": {"nul": "a\u0000b"},
         "blob": None, "flag": False, "name": "bad\u0000text"},
    ]
    (folder / "things.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))
    source = {"url": str(folder), "streams": [
        {"name": "things", "globs": ["*.jsonl"], "format": {"type": "jsonl"},
         "schema": {"id": {"type": "integer"}, **TYPED_SCHEMA}}]}
    streams = [{"name": "things", "sync_mode": "full_refresh",
                "destination_sync_mode": "overwrite"}]
    path = write(tmp_path, postgres_server, database, schema, streams, source,
                 source_type="object_storage")
    synced(tmp_path, path)
    # Synced again: an overwrite of one checkpoint replaces the rows, in one transaction.
    document = synced(tmp_path, path)
    assert document["streams"][0]["records_rejected"] == 1, document["streams"]
    rows = query(postgres_server, database,
                 f'SELECT id, amount, at, day, address, tags, extra, blob, flag, name, _hw_notes '
                 f'FROM "{schema}".things ORDER BY id')
    first, second = rows
    assert first[1] == decimal.Decimal(AMOUNT)
    assert first[2] == dt.datetime(2026, 11, 28, 8, 11, 12, 345678, tzinfo=dt.UTC)
    assert first[3] == dt.date(2026, 2, 28)
    assert first[4] == {"city": "Oslo", "zip": 150}
    assert first[5] == ["a", "b"]
    assert first[6] == {"k": [1, 2.5, None]}
    # bytea: the bytes the base64 text encodes (the JSON Lines bulk path landed the text's
    # own bytes until 2026-11-29, which this test took as it found them).
    assert first[7] == b"\x00\x01hw"
    assert first[8:11] == (True, "plain", None)
    assert second[1] == decimal.Decimal("-0.000000000000000001")
    assert second[3] == dt.date(1, 1, 1)
    # Not takeable by PostgreSQL: null, and noted on the row.
    assert second[6] is None and second[9] is None
    noted = {note["field"]: note for note in second[10]}
    assert set(noted) == {"extra", "name"}, second[10]
    assert noted["name"]["value"] == "bad\\u0000text"  # the NUL written out: jsonb refuses it
    assert "NUL" in noted["name"]["reason"]
    types = dict(query(postgres_server, database, "SELECT column_name, format_type(atttypid, "
                       "atttypmod) FROM information_schema.columns c JOIN pg_attribute a ON "
                       "a.attname = c.column_name AND a.attrelid = (quote_ident(%s) || "
                       "'.things')::regclass WHERE table_schema = %s AND table_name = "
                       "'things'", schema, schema))
    assert types["amount"] == "numeric(38,18)"
    assert types["at"] == "timestamp with time zone"
    assert (types["address"], types["tags"], types["extra"]) == ("jsonb",) * 3
    assert (types["blob"], types["flag"], types["id"]) == ("bytea", "boolean", "bigint")


def check(tmp_path: Path, server: Any, database: str, schema: str, **destination: Any) -> Any:
    streams = [{"name": "users", "sync_mode": "full_refresh", "destination_sync_mode": "append"}]
    path = write(tmp_path, server, database, schema, streams, {**SOURCE, "users": 5},
                 **destination)
    return run_in_process(tmp_path, "check", str(path))


def test_check_says_what_is_wrong(tmp_path: Path, postgres_server: Any, database: str,
                                  schema: str) -> None:
    import socket

    with socket.socket() as probe:  # a port nothing listens on
        probe.bind(("127.0.0.1", 0))
        closed = probe.getsockname()[1]
    unreachable = check(tmp_path, postgres_server, database, schema, port=closed)
    assert unreachable.exit_code == 1, unreachable.describe()
    said = " ".join((unreachable.stdout + unreachable.stderr).split())
    assert f"cannot reach PostgreSQL at 127.0.0.1:{closed}" in said, said

    refused = check(tmp_path, postgres_server, database, schema,
                    password="not-the-password-4711")
    assert refused.exit_code == 3, refused.describe()
    said = " ".join((refused.stdout + refused.stderr).split())
    assert "refused the credentials" in said and "not-the-password-4711" not in said

    role = f"r_{uuid.uuid4().hex[:8]}"
    query_statements(postgres_server, database,
                     f"CREATE ROLE {role} LOGIN PASSWORD 'pw-{role}'",
                     f"CREATE SCHEMA {schema}", f"GRANT USAGE ON SCHEMA {schema} TO {role}",
                     f"REVOKE CREATE ON DATABASE \"{database}\" FROM PUBLIC")
    try:
        refused_create = check(tmp_path, postgres_server, database, schema, username=role,
                               password=f"pw-{role}")
        assert refused_create.exit_code == 1, refused_create.describe()
        said = " ".join((refused_create.stdout + refused_create.stderr).split())
        assert f"may not create tables in schema '{schema}'" in said, said
        assert "_headwater" in said  # Headwater's own schemas, which it may not create
        fine = check(tmp_path, postgres_server, database, schema)
        assert fine.exit_code == 0, fine.describe()
    finally:
        query_statements(postgres_server, database, f"DROP OWNED BY {role}",
                         f"DROP ROLE {role}")


def query_statements(server: Any, database: str, *statements: str) -> None:
    with psycopg.connect(server.database_url(database), autocommit=True) as conn:
        for statement in statements:
            conn.execute(statement)


def test_merge_rule_of_append_dedup(spark: Any, postgres_server: Any, database: str,
                                    schema: str) -> None:
    """Delta's rule (``_merge_rule.py``): within a checkpoint the later record (as a number)
    and the later partition win a tie; across checkpoints the later one wins a tie, and an
    older cursor never replaces a newer one.  Committed through the destination itself."""
    from pyspark.sql import functions as F

    from headwater.destinations._base import CommitMarker
    from headwater.engine._task import _partition_digest
    from headwater.plan import CheckpointPlan, StreamPlan
    from headwater.sdk import Partition
    from tests.integration._merge_ties import SCHEMA, STREAM, tie_rows

    destination = PostgresDestination(config(postgres_server, database, schema))

    def commit(partitions: tuple[Partition, ...], rows: Any, index: int) -> int:
        checkpoint = CheckpointPlan(index=index, checkpoint_id=f"ckpt-{index}", lane=0,
                                    partitions=partitions)
        plan = StreamPlan(stream=STREAM, state_before=None, lanes=1, checkpoints=(checkpoint,),
                          json_schema=SCHEMA)
        destination.prepare(spark, plan, pa_schema)
        marker = CommitMarker(app_id="test/items/0", version=index, run_id="run-1",
                              stream="items", checkpoint_index=index)
        destination.commit(spark, plan, checkpoint, rows, marker)
        kept = query(postgres_server, database, f'SELECT version FROM "{schema}".items')
        assert len(kept) == 1, kept
        return int(kept[0][0])

    import pyarrow as pa

    pa_schema = pa.schema([pa.field(n, pa.int64()) for n in ("id", "updated", "version")])
    one = Partition(stream="items", id="objects/a.jsonl")
    # Records 0..11 of one object at one cursor: as text "9" > "11"; as numbers 11 wins.
    assert commit((one,), tie_rows(spark, [(one, n, n) for n in range(12)], 1), 1) == 11
    first, second = sorted((Partition(stream="items", id="w-1"),
                            Partition(stream="items", id="w-2")),
                           key=_partition_digest, reverse=True)
    # The later partition of the plan wins, whatever its digest.
    assert commit((first, second), tie_rows(spark, [(second, 0, 200), (first, 7, 100)], 2),
                  2) == 200
    # A later checkpoint wins a tie...
    assert commit((one,), tie_rows(spark, [(one, 0, 300)], 3), 3) == 300
    # ...but an older cursor, later or not, never replaces a newer one.
    older = tie_rows(spark, [(one, 0, 400)], 4).withColumn("updated", F.lit(4).cast("long"))
    assert commit((one,), older, 4) == 300


def test_a_failed_checkpoint_s_staging_is_dropped_and_the_resumed_run_lands_it_once(
        spark: Any, tmp_path: Path, postgres_server: Any, database: str, schema: str,
        monkeypatch: pytest.MonkeyPatch) -> None:
    """The second checkpoint's tasks COPY their rows into staging, then its commit
    transaction fails (rolled back: no rows moved, no marker): the engine's ``abort`` drops
    that staging, the first checkpoint's rows stay, and the resumed run lands it once."""
    from headwater.destinations.postgres import _owned
    from tests.integration._connections import sync

    inserting = _owned.insert
    failed: list[str] = []

    def refused(conn: Any, target: str, kind: str, **marker: Any) -> Any:
        # Inside the commit's transaction, after the move: the server rolls it all back.
        if kind == _owned.COMMIT and marker["checkpoint"] == 2:
            failed.append(_owned.staging_name(target, marker["run_id"], 2))
            raise psycopg.errors.RaiseException("the commit did not land")
        return inserting(conn, target, kind, **marker)

    streams = [{"name": "orders", "sync_mode": "incremental", "destination_sync_mode": "append",
                "cursor_field": "updated_at"}]
    path = write(tmp_path, postgres_server, database, schema, streams, SOURCE)
    monkeypatch.setattr(_owned, "insert", refused)
    sync(path, expect="failed")
    assert failed, "the second checkpoint's commit was never reached"
    # The failed checkpoint's staging is gone (abort); the first checkpoint's rows stayed.
    assert query(postgres_server, database, "SELECT to_regclass(%s)::text", failed[0]) == [
        (None,)]
    assert query(postgres_server, database, f'SELECT count(*) FROM "{schema}"."orders"')[0][0] > 0
    monkeypatch.setattr(_owned, "insert", inserting)
    sync(path)  # resumes the failed run
    assert keys(postgres_server, database, schema, "orders") == expected(SOURCE, "orders")
