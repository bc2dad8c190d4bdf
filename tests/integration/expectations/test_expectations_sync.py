"""Expectations on real Spark and Delta, in process: every action in one sync (counts in
the summary, ``--json``, the stored run and ``runs show``; rows in the table and the
quarantine table), a checkpoint retried or replayed quarantines nothing twice, and
``fail`` commits nothing and moves no state."""

from __future__ import annotations

import json
import sqlite3
from collections import Counter
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pytest
from prometheus_client.parser import text_string_to_metric_families

from headwater.connectors.sample import SampleSource
from headwater.engine._rerun import replay
from headwater.metadata_store import MetadataStore
from headwater.observability.metrics import render_metrics
from tests.integration._cli import FAULT
from tests.integration._connections import connection_file, engine
from tests.integration._in_process import run_in_process, sync_in_process

pytestmark = pytest.mark.spark

USERS = 1200
SOURCE = {"seed": 5, "users": USERS, "orders": 0, "rows_per_partition": 300,
          "updates_per_generation": 40, "new_per_generation": 30}
CHECKS = [
    {"name": "not_senior", "expr": "age < 80", "action": "warn"},
    {"name": "adult_enough", "expr": "age >= 25", "action": "drop"},
    {"name": "not_de", "expr": "country <> 'DE'", "action": "quarantine"},
    # NULL passes (only FALSE fails): never counted, never acted on.
    {"name": "unknown", "expr": "IF(id % 2 = 0, NULL, true)", "action": "drop"},
]


def _connection(tmp_path: Path, checks: list[dict[str, str]] = CHECKS, *,
                mode: tuple[str, str] = ("incremental", "append"),
                lineage: dict[str, str] | None = None, **source: Any) -> Path:
    return connection_file(
        tmp_path, name="dq", source={**SOURCE, **source},
        streams=[{"name": "users", "sync_mode": mode[0], "destination_sync_mode": mode[1],
                  "expectations": checks}],
        checkpoint={"partitions_per_checkpoint": 2, "concurrent_checkpoints": 2},
        lineage=lineage)


def _truth(generation: int = 0) -> pa.Table:
    return SampleSource({**SOURCE, "generation": generation}).expected_rows("users")


def _table(spark: Any, tmp_path: Path, name: str = "users") -> pa.Table:
    return spark.read.format("delta").load(str(tmp_path / "lake" / name)).toArrow()


def _keys(rows: pa.Table) -> Counter[tuple[Any, Any]]:
    return Counter(zip(rows.column("id").to_pylist(), rows.column("updated_at").to_pylist(),
                       strict=True))


def _where(rows: pa.Table, mask: pa.ChunkedArray) -> pa.Table:
    return rows.filter(mask)


def _quarantine_truth(truth: pa.Table) -> pa.Table:
    return _where(truth, pc.equal(truth.column("country"), "DE"))


def test_every_action_in_one_sync(spark: Any, tmp_path: Path) -> None:
    truth = _truth()
    age, country = truth.column("age"), truth.column("country")
    quarantined = pc.equal(country, "DE")
    kept = pc.and_(pc.greater_equal(age, 25), pc.invert(quarantined))
    expected = {"not_senior": pc.sum(pc.greater_equal(age, 80)).as_py(),
                "adult_enough": pc.sum(pc.less(age, 25)).as_py(),
                "not_de": pc.sum(quarantined).as_py(), "unknown": 0}
    assert all(expected[name] for name in ("not_senior", "adult_enough", "not_de"))

    # An overwrite of two checkpoints: staged, then published (the staging route).
    events = tmp_path / "lineage.jsonl"
    result = sync_in_process(tmp_path, _connection(tmp_path, mode=("full_refresh", "overwrite"),
                                                   lineage={"file": str(events)}))

    assert result.exit_code == 0, result.describe()
    assert result.document is not None
    (stream,) = result.document["streams"]
    assert stream["checkpoints"] == 2
    assert stream["expectations"] == {
        check["name"]: {"action": check["action"], "evaluated": USERS,
                        "failed": expected[check["name"]]} for check in CHECKS}
    assert stream["records_read"] == USERS
    assert stream["records_written"] == pc.sum(kept).as_py()
    table = _table(spark, tmp_path)
    assert _keys(table) == _keys(_where(truth, kept))
    assert "_hw_failed_expectations" not in table.column_names
    quarantine = _table(spark, tmp_path, "users_quarantine")
    assert _keys(quarantine) == _keys(_where(truth, quarantined))
    assert set(quarantine.column("_hw_run_id").to_pylist()) == {result.document["run_id"]}
    failed = Counter(name for names in quarantine.column("_hw_failed_expectations").to_pylist()
                     for name in names)
    assert failed["not_de"] == expected["not_de"]
    assert failed["adult_enough"] == pc.sum(pc.and_(quarantined, pc.less(age, 25))).as_py()
    # Lineage names both tables the run wrote, the quarantine table with its extra column.
    complete = [json.loads(line) for line in events.read_text().splitlines()][-1]
    assert complete["eventType"] == "COMPLETE"
    outputs = {Path(o["name"]).name: o for o in complete["outputs"]}
    assert sorted(outputs) == ["users", "users_quarantine"]
    assert [f["name"] for f in outputs["users_quarantine"]["facets"]["schema"]["fields"]][-1] \
        == "_hw_failed_expectations"
    # The run the metadata store keeps, and what `runs show` prints of it.
    stored = MetadataStore(f"sqlite:///{tmp_path / 'meta.db'}").get_run(result.document["run_id"])
    assert stored is not None
    assert stored.stats["streams"][0]["expectations"] == stream["expectations"]
    shown = run_in_process(tmp_path, "runs", "--store", f"sqlite:///{tmp_path / 'meta.db'}",
                           "show", result.document["run_id"])
    assert shown.exit_code == 0, shown.describe()
    assert "expectations" in shown.stdout and "adult_enough" in shown.stdout
    assert f"{expected['adult_enough']:,}" in shown.stdout
    # The Prometheus metrics read from the store.
    body = render_metrics(MetadataStore(f"sqlite:///{tmp_path / 'meta.db'}")).decode()
    samples = {(s.name, s.labels["expectation"], s.labels["action"]): s.value
               for family in text_string_to_metric_families(body) for s in family.samples
               if s.name.startswith("headwater_expectation_rows_")}
    assert samples == {
        **{(f"headwater_expectation_rows_{kind}_total", c["name"], c["action"]): float(
            USERS if kind == "evaluated" else expected[c["name"]])
           for c in CHECKS for kind in ("evaluated", "failed")}}


def test_warn_and_drop_inside_the_tasks(spark: Any, tmp_path: Path) -> None:
    """Without a quarantine, checks pyarrow evaluates run inside the tasks, which still
    write the table's files themselves: the same counts and rows as Spark's way."""
    checks = [c for c in CHECKS if c["action"] != "quarantine"]
    checks[-1] = {**checks[-1], "expr": "NOT (age > 50 AND NULL)"}  # NULL or TRUE: passes
    truth = _truth()
    age = truth.column("age")

    result = sync_in_process(tmp_path, _connection(tmp_path, checks))

    assert result.exit_code == 0, result.describe()
    assert result.document is not None
    (stream,) = result.document["streams"]
    assert stream["expectations"] == {
        "not_senior": {"action": "warn", "evaluated": USERS,
                       "failed": pc.sum(pc.greater_equal(age, 80)).as_py()},
        "adult_enough": {"action": "drop", "evaluated": USERS,
                         "failed": pc.sum(pc.less(age, 25)).as_py()},
        "unknown": {"action": "drop", "evaluated": USERS, "failed": 0}}
    assert _keys(_table(spark, tmp_path)) == _keys(_where(truth, pc.greater_equal(age, 25)))
    record = next(c for c in MetadataStore(f"sqlite:///{tmp_path / 'meta.db'}")
                  .list_checkpoints(result.document["run_id"]))
    assert record.stats["writer"] == "tasks+delta-rs"  # the tasks wrote the files


@pytest.mark.parametrize("fault", ["after-quarantine:1", "raise-after-quarantine:1"])
def test_a_checkpoint_read_again_quarantines_nothing_twice(spark: Any, tmp_path: Path,
                                                           fault: str) -> None:
    """Killed between the quarantine commit and the checkpoint's (the run is resumed and
    reads it again; then replayed), or failed there (a new run reads its windows again):
    each quarantined row is there once, and stays so through ``state realign``."""
    path = _connection(tmp_path)
    first = sync_in_process(tmp_path, path, env={FAULT: fault})
    assert first.exit_code != 0
    assert sync_in_process(tmp_path, path).exit_code == 0
    truth = _truth()
    assert _keys(_table(spark, tmp_path, "users_quarantine")) == _keys(_quarantine_truth(truth))

    if fault.startswith("raise-"):
        return  # one replay is proof enough (the kill's)
    runs = MetadataStore(f"sqlite:///{tmp_path / 'meta.db'}").list_runs("dq")
    # The oldest run that succeeded read the checkpoint again (resumed) or the rest.
    read = min((r for r in runs if r.status == "succeeded"), key=lambda r: r.started_at)
    assert replay(engine(path), read.run_id).status == "succeeded"
    assert _keys(_table(spark, tmp_path, "users_quarantine")) == _keys(_quarantine_truth(truth))

    # The replay's quarantined rows carry the replayed run's id under the replay's own
    # checkpoints: `state realign` finds them committed (by the replay), and keeps them.
    realigned = run_in_process(tmp_path, "state", "realign", str(path), "--yes", "--json")
    assert realigned.exit_code == 0, realigned.describe()
    assert realigned.document is not None, realigned.describe()
    found = realigned.document["streams"][0]["quarantine"]
    assert not found["uncommitted"] and not found["unchecked"], found
    assert _keys(_table(spark, tmp_path, "users_quarantine")) == _keys(_quarantine_truth(truth))


def test_realign_holds_the_quarantine_table_to_the_store(
        spark: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A run failed after a quarantine commit whose rows could not be deleted (run 1);
    the store is backed up; a run is killed after a quarantine commit (run 2); the
    backup is restored, so run 2 is unknown and its quarantine commit holds a version
    the store hands out again.  ``state realign --drop-unknown-runs`` moves the counter
    past the quarantine table's versions and deletes both runs' quarantined rows, so
    the next sync commits, and quarantines each row once."""
    from headwater.destinations.delta import DeltaDestination

    path = _connection(tmp_path)
    store_file = tmp_path / "meta.db"
    with monkeypatch.context() as patched:
        def refuse(*_: object) -> int:
            raise RuntimeError("delete refused")

        patched.setattr(DeltaDestination, "delete_checkpoints", refuse)
        assert sync_in_process(tmp_path, path, env={FAULT: "raise-after-quarantine:1"}
                               ).exit_code == 1
    backup = tmp_path / "backup.db"
    with sqlite3.connect(store_file) as live, sqlite3.connect(backup) as copy:
        live.backup(copy)
    assert sync_in_process(tmp_path, path, env={FAULT: "after-quarantine:1"}).exit_code != 0
    with sqlite3.connect(backup) as old, sqlite3.connect(store_file) as live:
        old.backup(live)
    truth = _truth()
    quarantine = _keys(_quarantine_truth(truth))
    held = _keys(_table(spark, tmp_path, "users_quarantine"))
    assert max(held.values()) == 2 and set(held) <= set(quarantine)  # both runs' rows

    realigned = run_in_process(tmp_path, "state", "realign", str(path), "--drop-unknown-runs",
                               "--yes", "--json")
    assert realigned.exit_code == 0, realigned.describe()
    left = _keys(_table(spark, tmp_path, "users_quarantine"))

    resumed = sync_in_process(tmp_path, path)
    assert resumed.exit_code == 0, resumed.describe()
    assert _keys(_table(spark, tmp_path, "users_quarantine")) == quarantine
    kept = pc.and_(pc.greater_equal(truth.column("age"), 25),
                   pc.invert(pc.equal(truth.column("country"), "DE")))
    assert _keys(_table(spark, tmp_path)) == _keys(_where(truth, kept))

    # What realign said it found and did.
    assert realigned.document is not None
    (stream,) = realigned.document["streams"]
    found = stream["quarantine"]
    # Run 2's quarantine commit holds a version above every one the table holds.
    assert max(found["lanes"].values()) > max(stream["lanes"].values(), default=0), stream
    assert stream["behind"] and stream["next_index_after"] > max(found["lanes"].values())
    assert len(found["unknown_runs"]) == 1 and len(found["uncommitted"]) == 1, found
    assert found["deleted_rows"] == held.total() - left.total() > 0, found
    assert not left or max(left.values()) == 1


def test_fail_commits_nothing_and_moves_no_state(spark: Any, tmp_path: Path) -> None:
    checks = [{"name": "not_senior", "expr": "age < 80", "action": "fail"}]
    passing = [{"name": "not_senior", "expr": "age < 200", "action": "fail"}]
    assert sync_in_process(tmp_path, _connection(tmp_path, passing)).exit_code == 0
    store = MetadataStore(f"sqlite:///{tmp_path / 'meta.db'}")
    state = store.get_states("dq")
    before = _keys(_table(spark, tmp_path))

    result = sync_in_process(tmp_path, _connection(tmp_path, checks, generation=1))

    assert result.exit_code == 1, result.describe()
    assert result.document is not None
    (stream,) = result.document["streams"]
    assert stream["status"] == "failed"
    assert "expectation 'not_senior' (age < 80) failed on" in stream["error"]
    assert '"age": "8' in stream["error"] or '"age": 8' in stream["error"]  # the sample row
    assert _keys(_table(spark, tmp_path)) == before
    assert store.get_states("dq") == state


def test_in_task_checks_agree_with_spark(spark: Any) -> None:
    """Every expression the tasks evaluate with pyarrow fails exactly the rows Spark's
    ``expr()`` fails, on edge values (NULLs, empty text, wildcards, negatives), in one job."""
    from pyspark.sql import functions as F

    from headwater.expectations._arrow import compile_check, failing

    schema = pa.schema([("id", pa.int64()), ("age", pa.int64()), ("email", pa.string()),
                        ("ok", pa.bool_())])
    rows = pa.RecordBatch.from_pylist(
        [{"id": i, "age": age, "email": email, "ok": ok}
         for i, (age, email, ok) in enumerate([
             (30, "a@x", True), (None, None, None), (-5, "", False), (17, "a_b%c", True),
             (18, "A@X", None), (80, "x@", False), (0, "_", True), (None, "@", False)])],
        schema=schema)
    expressions = [
        "age >= 18", "age < 80 AND email LIKE '%@%'", "age >= 18 OR ok", "NOT ok",
        "ok IS NULL", "email IS NOT NULL AND age IS NULL", "age BETWEEN 0 AND 17",
        "email IN ('a@x', '', '_')", "email NOT IN ('a@x')", "age - id * 3 > -10",
        "email LIKE 'a\\\\_b%'", "email ILIKE 'a@%'", "email LIKE '_'", "-age < 0",
        "email <> 'x@' OR age = 80", "NOT (ok AND age > 20)", "null", "id != 3",
        "NOT (age > 20 AND NULL)", "ok OR NULL",
    ]
    frame = spark.createDataFrame(rows.to_pandas(), schema="id long, age long, email string, "
                                                           "ok boolean")
    spark_fails = frame.select(*[(~F.coalesce(F.expr(e), F.lit(True))).alias(f"e{i}")
                                 for i, e in enumerate(expressions)]).toArrow()

    for i, expr in enumerate(expressions):
        evaluator = compile_check(expr, schema)
        assert evaluator is not None, expr
        assert failing(evaluator, rows).to_pylist() == \
            spark_fails.column(f"e{i}").to_pylist(), expr
