"""Quarantine on every table destination (Delta, Iceberg, PostgreSQL, files), the tasks
writing the quarantined rows beside the kept ones, in process on the shared Spark
session: the sync is killed after a checkpoint's quarantine commit and before its own,
the next sync resumes the run and reads that checkpoint again (or it fails there, and
the next run reads its windows again), and both tables then hold exactly the source's
rows (none twice), with the counts in the stored run."""

from __future__ import annotations

import json
import re
import sqlite3
import uuid
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pytest

from headwater.connectors.sample import SampleSource
from headwater.metadata_store import MetadataStore
from tests.integration._cli import FAULT
from tests.integration._connections import connection_file
from tests.integration._in_process import run_in_process, sync_in_process

pytestmark = pytest.mark.spark

USERS = 600
SOURCE = {"seed": 7, "users": USERS, "orders": 0, "rows_per_partition": 150}
#: Each compiles to pyarrow, so the tasks evaluate them and write both tables.
CHECKS = [
    {"name": "not_senior", "expr": "age < 80", "action": "warn"},
    {"name": "adult_enough", "expr": "age >= 25", "action": "drop"},
    {"name": "not_de", "expr": "country <> 'DE'", "action": "quarantine"},
]

Reader = Callable[[str], pa.Table]


@contextmanager
def _destination(kind: str, tmp_path: Path, spark: Any,
                 request: pytest.FixtureRequest) -> Iterator[tuple[dict[str, Any], Reader]]:
    """The destination's section of the connection file, and how the test reads a table."""
    if kind == "delta":
        lake = tmp_path / "lake"
        yield ({"type": "delta", "config": {"path": str(lake)}},
               lambda stream: spark.read.format("delta").load(str(lake / stream)).toArrow())
    elif kind == "iceberg":
        from tests.integration.destinations.iceberg._catalogs import iceberg_config, load_table

        config = iceberg_config(tmp_path)
        yield ({"type": "iceberg", "config": config},
               lambda stream: load_table(config, stream).scan().to_arrow())
    elif kind == "files":
        from tests.integration.destinations.files._plain import read_stream

        root = tmp_path / "files"
        yield ({"type": "files", "config": {"path": str(root), "format": "parquet"}},
               lambda stream: read_stream(str(root / stream)))
    else:
        import psycopg

        from tests.integration.destinations.postgres._tables import config as postgres_config

        server = request.getfixturevalue("postgres_server")
        schema = f"q_{uuid.uuid4().hex[:10]}"
        with server.database() as database:
            url = server.database_url(database)

            def read(stream: str) -> pa.Table:
                with psycopg.connect(url) as conn:
                    cursor = conn.execute(f'SELECT * FROM "{schema}"."{stream}"')
                    names = [c.name for c in cursor.description or ()]
                    return pa.Table.from_pylist([dict(zip(names, row, strict=True))
                                                 for row in cursor.fetchall()])

            yield {"type": "postgres", "config": postgres_config(server, database, schema)}, read


def _keys(rows: pa.Table) -> Counter[tuple[Any, Any]]:
    return Counter(zip(rows.column("id").to_pylist(),
                       [str(v)[:19] for v in rows.column("updated_at").to_pylist()],
                       strict=True))


def _names(value: Any) -> list[str]:
    """A row's failed expectations (PostgreSQL keeps the list as jsonb)."""
    return json.loads(value) if isinstance(value, str) else list(value)


@pytest.mark.parametrize(("kind", "fault"), [
    ("delta", "after-quarantine:1"), ("iceberg", "after-quarantine:1"),
    ("postgres", "after-quarantine:1"), ("files", "after-quarantine:1"),
    # Failed there instead: the run is not resumed, its quarantined rows are deleted, and
    # the next run quarantines them again (Delta's delete: test_expectations_sync; files:
    # a manifest that replaces the table without their files).
    ("iceberg", "raise-after-quarantine:1"), ("postgres", "raise-after-quarantine:1"),
    ("files", "raise-after-quarantine:1")])
def test_quarantine_killed_between_the_commits_lands_each_row_once(
        spark: Any, tmp_path: Path, kind: str, fault: str,
        request: pytest.FixtureRequest) -> None:
    with _destination(kind, tmp_path, spark, request) as (destination, read):
        path = _connection(tmp_path, destination)
        # Killed (or failed) after the first checkpoint's quarantine commit, before its own.
        first = sync_in_process(tmp_path, path, env={FAULT: fault})
        assert first.exit_code != 0, first.describe()

        # Resumes the run (reads that checkpoint again), or reads its windows in a new run.
        assert sync_in_process(tmp_path, path).exit_code == 0
        _assert_each_row_once(tmp_path, read)


def test_a_checkpoint_whose_commit_landed_then_raised_keeps_its_quarantined_rows(
        spark: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        request: pytest.FixtureRequest) -> None:
    """The first checkpoint's own commit lands, then raises (its answer lost after the
    destination gave it).  The engine looks its marker up before calling it failed: it
    counts as committed, its quarantined rows stay, the state moves past it, and the next
    sync reads nothing again (were it failed, its quarantined rows would be deleted and
    the next run would append its rows a second time)."""
    lost = _lose_the_first_answer(monkeypatch)
    with _destination("files", tmp_path, spark, request) as (destination, read):
        path = _connection(tmp_path, destination)
        first = sync_in_process(tmp_path, path)
        assert lost, "no commit raised"
        _assert_each_row_once(tmp_path, read)
        assert first.exit_code == 0, first.describe()
        assert "so it counts as committed" in first.stderr, first.describe()
        again = sync_in_process(tmp_path, path)
        assert again.exit_code == 0 and again.document is not None, again.describe()
        assert again.document["streams"][0]["records_written"] == 0, again.describe()
        _assert_each_row_once(tmp_path, read)


def test_a_checkpoint_whose_commit_could_not_be_looked_up_keeps_its_rows_for_the_resume(
        spark: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        request: pytest.FixtureRequest) -> None:
    """As above, and the engine's lookup raises too: whether it landed is unknown, so its
    quarantined rows stay and the run stays resumable; the resumed run finds the commit,
    and counts the checkpoint's expectations with the figures the failed attempt kept in
    its record (the resumed one reads none of its rows)."""
    from headwater.destinations.files._destination import FilesDestination

    lost = _lose_the_first_answer(monkeypatch)

    def unreachable(*_: Any) -> None:
        raise OSError("the store did not answer (injected)")

    monkeypatch.setattr(FilesDestination, "find_commit", unreachable)
    with _destination("files", tmp_path, spark, request) as (destination, read):
        path = _connection(tmp_path, destination)
        first = sync_in_process(tmp_path, path)
        assert first.exit_code == 1 and first.document is not None, first.describe()
        assert first.document["status"] == "stopped", first.describe()
        assert "could not check whether checkpoint" in first.stdout, first.describe()
        checkpoints = set(read("users_quarantine").column("_hw_checkpoint").to_pylist())
        assert checkpoints == set(lost), checkpoints  # kept: it may have landed
        monkeypatch.undo()
        resumed = sync_in_process(tmp_path, path)
        assert resumed.exit_code == 0 and resumed.document is not None, resumed.describe()
        assert resumed.document["runs"][0]["resumed"], resumed.describe()
        stored = _assert_each_row_once(tmp_path, read)
        assert stored["records_read"] == USERS, stored
        # The same counts in the resumed run's --json, and in `runs show`.
        resumed_run = resumed.document["runs"][0]
        (stream,) = resumed_run["streams"]
        assert stream["expectations"] == stored["expectations"], stream
        shown = run_in_process(tmp_path, "runs", "--store", f"sqlite:///{tmp_path / 'meta.db'}",
                               "show", resumed_run["run_id"])
        assert shown.exit_code == 0, shown.describe()
        for name, counts in stored["expectations"].items():
            assert re.search(rf"{name}\W.*\b{counts['failed']:,}\b", shown.stdout), (
                name, shown.stdout)


@pytest.mark.parametrize("kind", ["delta", "iceberg", "postgres"])
def test_realign_keeps_the_quarantined_rows_of_checkpoints_whose_commits_landed(
        spark: Any, tmp_path: Path, kind: str, monkeypatch: pytest.MonkeyPatch,
        request: pytest.FixtureRequest) -> None:
    """A finished run whose two checkpoints the store records as not committed, whose
    commits the table holds (as an engine that took lost answers for failures left them).
    ``state realign`` looks each commit up by its marker before it deletes the
    checkpoint's quarantined rows: the second's is found (``landed``), the first's lookup
    raises (``unchecked``, with the error; exit 1), and neither's rows are deleted."""
    from headwater.destinations import get_destination_class

    with _destination(kind, tmp_path, spark, request) as (destination, read):
        path = _connection(tmp_path, destination)
        synced = sync_in_process(tmp_path, path)
        assert synced.exit_code == 0 and synced.document is not None, synced.describe()
        run_id = synced.document["run_id"]
        first, second = _forget_the_commits(tmp_path / "meta.db", run_id)
        quarantine = read("users_quarantine")
        assert set(quarantine.column("_hw_checkpoint").to_pylist()) == {first, second}

        kind_class = get_destination_class(kind)
        real = kind_class.find_commit

        def unreachable_for_the_first(self: Any, spark: Any, plan: Any, marker: Any) -> Any:
            if marker.checkpoint_index == first:
                raise OSError("the table did not answer (injected)")
            return real(self, spark, plan, marker)

        monkeypatch.setattr(kind_class, "find_commit", unreachable_for_the_first)
        realigned = run_in_process(tmp_path, "state", "realign", str(path), "--yes", "--json")

        assert realigned.exit_code == 1, realigned.describe()
        assert realigned.document is not None, realigned.describe()
        (stream,) = realigned.document["streams"]
        found = stream["quarantine"]
        assert found["landed"] == {run_id: [second]}, found
        assert list(found["unchecked"]) == [run_id], found
        assert list(found["unchecked"][run_id]) == [str(first)], found
        assert "injected" in found["unchecked"][run_id][str(first)], found
        assert not found["uncommitted"] and found["deleted_rows"] is None, found
        assert _keys(read("users_quarantine")) == _keys(quarantine)


def _forget_the_commits(store: Path, run_id: str) -> list[int]:
    """Make the store record each of the run's checkpoints as failed, and the run failed
    (their commits stay in the tables); their indices."""
    with sqlite3.connect(store) as db:
        for table in ("checkpoints", "checkpoint_figures"):
            db.execute(f"UPDATE {table} SET status = 'failed' WHERE run_id = ?", (run_id,))
        db.execute("UPDATE runs SET status = 'failed' WHERE run_id = ?", (run_id,))
        return sorted(int(index) for (index,) in db.execute(
            "SELECT checkpoint_index FROM checkpoints WHERE run_id = ?", (run_id,)))


def _lose_the_first_answer(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """The first commit of the ``users`` stream's files lands, then raises; the index of
    that checkpoint goes in the list returned."""
    from headwater.destinations.files._destination import FilesDestination

    real = FilesDestination.commit_files
    lost: list[int] = []

    def answer_lost(self: FilesDestination, *args: Any) -> Any:
        result = real(self, *args)
        plan, checkpoint = args[1], args[2]
        if plan.stream.name == "users" and not lost:
            lost.append(checkpoint.index)
            raise ConnectionResetError("the commit's answer was lost (injected)")
        return result

    monkeypatch.setattr(FilesDestination, "commit_files", answer_lost)
    return lost


def _connection(tmp_path: Path, destination: dict[str, Any]) -> Path:
    """Two checkpoints of 300 users, one lane, the stream's :data:`CHECKS`."""
    return connection_file(
        tmp_path, name="dq", source=SOURCE,
        streams=[{"name": "users", "sync_mode": "incremental",
                  "destination_sync_mode": "append", "expectations": CHECKS}],
        checkpoint={"partitions_per_checkpoint": 2, "concurrent_checkpoints": 1},
        destination=destination)


def _assert_each_row_once(tmp_path: Path, read: Reader) -> dict[str, Any]:
    """Both tables hold exactly the source's rows (none twice), with the counts in the
    stored run (its one run, succeeded); the stream's figures in the stored run."""
    truth = SampleSource(SOURCE).expected_rows("users")
    age, country = truth.column("age"), truth.column("country")
    quarantined = pc.equal(country, "DE")
    kept = pc.and_(pc.greater_equal(age, 25), pc.invert(quarantined))
    failed = {"not_senior": pc.sum(pc.greater_equal(age, 80)).as_py(),
              "adult_enough": pc.sum(pc.less(age, 25)).as_py(),
              "not_de": pc.sum(quarantined).as_py()}
    assert all(failed.values())

    table = read("users")
    assert _keys(table) == _keys(truth.filter(kept))
    assert "_hw_failed_expectations" not in table.column_names
    quarantine = read("users_quarantine")
    assert _keys(quarantine) == _keys(truth.filter(quarantined))
    (run_id,) = set(quarantine.column("_hw_run_id").to_pylist())
    run = MetadataStore(f"sqlite:///{tmp_path / 'meta.db'}").get_run(run_id)
    assert run is not None and run.status == "succeeded"
    (stream,) = run.stats["streams"]
    assert stream["expectations"] == {
        c["name"]: {"action": c["action"], "evaluated": USERS, "failed": failed[c["name"]]}
        for c in CHECKS}
    assert stream["records_written"] == pc.sum(kept).as_py()
    names = Counter(name for value in quarantine.column("_hw_failed_expectations")
                    .to_pylist() for name in _names(value))
    assert names == {"not_de": failed["not_de"], **{
        n: pc.sum(pc.and_(quarantined, fails)).as_py() for n, fails in (
            ("adult_enough", pc.less(age, 25)), ("not_senior", pc.greater_equal(age, 80)))
        if pc.sum(pc.and_(quarantined, fails)).as_py()}}
    return dict(stream)
