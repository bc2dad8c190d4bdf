"""Replay, backfill, per-partition run detail and after_sync hooks, on real Spark and Delta."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from typer.testing import CliRunner

from headwater.cli.app import app
from headwater.config import load_connection
from headwater.connectors.sample import SampleSource
from headwater.engine import SyncEngine, SyncResult
from headwater.engine._rerun import backfill, replay
from headwater.metadata_store import MetadataStore
from tests.integration._connections import connection_file, engine, sync

pytestmark = pytest.mark.spark

USERS = 2000
SOURCE = {"seed": 11, "users": USERS, "orders": 0, "rows_per_partition": 500,
          "updates_per_generation": 30, "new_per_generation": 20}
APPEND = [{"name": "users", "sync_mode": "incremental", "destination_sync_mode": "append"}]
DEDUP = [{"name": "users", "sync_mode": "incremental", "destination_sync_mode": "append_dedup"}]


def write_connection(tmp_path: Path, streams: list[dict[str, Any]], *,
                     after_sync: list[Any] | None = None, **source: Any) -> Path:
    return connection_file(tmp_path, name="rr", source={**SOURCE, **source}, streams=streams,
                           checkpoint={"partitions_per_checkpoint": 2, "concurrent_checkpoints": 2},
                           after_sync=after_sync)


def store(tmp_path: Path) -> MetadataStore:
    return MetadataStore(f"sqlite:///{tmp_path / 'meta.db'}")


def table(spark: Any, tmp_path: Path) -> pa.Table:
    return spark.read.format("delta").load(str(tmp_path / "lake" / "users")).toArrow()


def rows_of(rows: pa.Table, run_id: str | None = None) -> Counter[tuple[Any, ...]]:
    """Each row's identity and content (not its checkpoint or extraction time), counted."""
    columns = ["_hw_raw_id", "_hw_run_id", "_hw_partition_id", "id", "updated_at", "age"]
    picked = rows.select(columns).to_pylist()
    return Counter(tuple(r[c] for c in columns) for r in picked
                   if run_id is None or r["_hw_run_id"] == run_id)


def delete_rows(spark: Any, tmp_path: Path, where: str) -> None:
    from delta.tables import DeltaTable

    DeltaTable.forPath(spark, str(tmp_path / "lake" / "users")).delete(where)


def test_replay_restores_exactly_the_rows_deleted_by_hand(spark: Any, tmp_path: Path) -> None:
    sync(write_connection(tmp_path, APPEND))
    path = write_connection(tmp_path, APPEND, generation=1)
    second = sync(path)
    before = rows_of(table(spark, tmp_path))
    state = store(tmp_path).get_states("rr")
    assert sum(rows_of(table(spark, tmp_path), second.run_id).values()) == 30 + 20

    delete_rows(spark, tmp_path, f"_hw_run_id = '{second.run_id}'")
    assert rows_of(table(spark, tmp_path), second.run_id) == Counter()

    replayed = replay(engine(path), second.run_id)
    assert replayed.status == "succeeded" and replayed.kind == "replay"
    assert replayed.replay_of == second.run_id
    assert rows_of(table(spark, tmp_path)) == before
    assert store(tmp_path).get_states("rr") == state

    # Replaying again (the same rows are there now) changes nothing: it is idempotent.
    again = replay(engine(path), second.run_id)
    assert again.status == "succeeded"
    assert rows_of(table(spark, tmp_path)) == before

    record = store(tmp_path).get_run(replayed.run_id)
    assert record is not None and record.kind == "replay"
    assert record.stats["replay_of"] == second.run_id
    listed = [r.run_id for r in store(tmp_path).list_runs("rr")]
    assert replayed.run_id in listed and again.run_id in listed


def test_replay_of_a_middle_run_leaves_other_runs_and_state(spark: Any, tmp_path: Path) -> None:
    first = sync(write_connection(tmp_path, APPEND))
    middle = sync(write_connection(tmp_path, APPEND, generation=1))
    path = write_connection(tmp_path, APPEND, generation=2)
    last = sync(path)
    rows = table(spark, tmp_path)
    untouched = {run: rows_of(rows, run) for run in (first.run_id, last.run_id)}
    state = store(tmp_path).get_states("rr")
    history = len(store(tmp_path).state_history("rr"))

    delete_rows(spark, tmp_path, f"_hw_run_id = '{middle.run_id}' AND id % 2 = 0")
    result = replay(engine(path), middle.run_id, ["users"])
    assert result.status == "succeeded"

    rows = table(spark, tmp_path)
    assert {run: rows_of(rows, run) for run in untouched} == untouched
    assert store(tmp_path).get_states("rr") == state
    assert len(store(tmp_path).state_history("rr")) == history
    # The middle run's windows re-read from today's world: exactly what they hold now.
    run = store(tmp_path).get_run(middle.run_id)
    assert run is not None
    stream = SampleSource({**SOURCE, "generation": 2}).stream("users")
    from headwater.engine import RunPlan

    partitions = [p for c in RunPlan.from_dict(run.plan).streams[0].checkpoints
                  for p in c.partitions]
    expected = Counter()
    for partition in partitions:
        for batch in stream.read(partition):
            for row in batch.select(["id", "updated_at"]).to_pylist():
                expected[(row["id"], row["updated_at"])] += 1
    replayed = Counter((key[3], key[4]) for key, n in rows_of(rows, middle.run_id).items()
                       for _ in range(n))
    assert replayed == expected
    assert sum(expected.values()) == sum(stream.estimate_rows(p) or 0 for p in partitions)


def test_replay_of_a_dedup_table_merges_by_latest_cursor(spark: Any, tmp_path: Path) -> None:
    sync(write_connection(tmp_path, DEDUP))
    path = write_connection(tmp_path, DEDUP, generation=1)
    second = sync(path)
    truth = SampleSource({**SOURCE, "generation": 1}).expected_rows("users")
    world = Counter(zip(truth.column("id").to_pylist(), truth.column("updated_at").to_pylist(),
                        strict=True))
    delete_rows(spark, tmp_path, f"_hw_run_id = '{second.run_id}'")
    assert table(spark, tmp_path).num_rows < USERS + 20

    assert replay(engine(path), second.run_id).status == "succeeded"
    rows = table(spark, tmp_path)
    assert Counter(zip(rows.column("id").to_pylist(), rows.column("updated_at").to_pylist(),
                       strict=True)) == world


def test_backfill_adds_exactly_the_window_and_leaves_state(spark: Any, tmp_path: Path) -> None:
    path = write_connection(tmp_path, APPEND)
    sync(path)
    state = store(tmp_path).get_states("rr")
    stream = SampleSource(SOURCE).stream("users")
    start = stream.cursor_start()
    # Initial row i has updated_at = start + i seconds: [750 s, 1600 s) holds ids 750..1599,
    # and cuts through two of the stream's 500-row partitions.
    low, high = "2024-01-01T00:12:30Z", "2024-01-01T00:26:40Z"
    assert start == "2024-01-01T00:00:00Z"

    result = backfill(engine(path), "users", low, high)
    assert result.status == "succeeded" and result.kind == "backfill"
    rows = table(spark, tmp_path)
    added = [r for r in rows.select(["id", "_hw_run_id"]).to_pylist()
             if r["_hw_run_id"] == result.run_id]
    assert sorted(r["id"] for r in added) == list(range(750, 1600))
    assert rows.num_rows == USERS + 850
    assert store(tmp_path).get_states("rr") == state
    run = store(tmp_path).get_run(result.run_id)
    assert run is not None and run.kind == "backfill"
    planned = [p["id"] for c in run.plan["streams"][0]["checkpoints"] for p in c["partitions"]]
    assert len(planned) == 3  # [750, 1000), [1000, 1500), [1500, 1600): the stream's own cuts


def test_runs_show_lists_every_partition_and_hooks_see_the_summary(
        spark: Any, tmp_path: Path) -> None:
    secret = "sk-hook-9QxSECRETvalue"
    out = tmp_path / "hook-env.json"
    hook = ("python3 -c 'import json, os; json.dump({k: v for k, v in os.environ.items() "
            f"if k.startswith(\"HEADWATER_\")}}, open(\"{out}\", \"w\"))'")
    path = write_connection(tmp_path, APPEND, api_key=secret, bad_value_every=9,
                            after_sync=[hook, {"command": "exit 3", "when": "always"}])
    result = sync(path)
    assert [h["exit_code"] for h in result.hooks] == [0, 3]

    seen = json.loads(out.read_text())
    assert seen["HEADWATER_RUN_ID"] == result.run_id
    assert seen["HEADWATER_RUN_STATUS"] == "succeeded"
    assert seen["HEADWATER_RECORDS_WRITTEN"] == str(USERS)
    assert seen["HEADWATER_STREAMS"] == "users"
    assert json.loads(seen["HEADWATER_SUMMARY_JSON"])["run_id"] == result.run_id
    assert secret not in out.read_text()

    shown = CliRunner().invoke(app, ["runs", "--store", f"sqlite:///{tmp_path / 'meta.db'}",
                                     "show", result.run_id, "--json"])
    assert shown.exit_code == 0, shown.output
    document = json.loads(shown.stdout)
    partitions = document["partitions"]
    assert len(partitions) == USERS // 500
    assert sum(p["records_read"] for p in partitions) == USERS
    assert sum(p["records_rejected"] for p in partitions) == USERS // 9
    assert all(p["bytes"] > 0 and p["retries"] == 0 for p in partitions)
    table_ids = Counter(table(spark, tmp_path).column("_hw_partition_id").to_pylist())
    assert {p["partition"]: p["records_written"] for p in partitions} == dict(table_ids)
    stream = document["streams"][0]
    assert stream["state_before"] is None and stream["state_after"]["slices"]


def test_replay_of_an_overwritten_full_refresh_is_refused(spark: Any, tmp_path: Path) -> None:
    overwrite = [{"name": "users", "sync_mode": "full_refresh",
                  "destination_sync_mode": "overwrite"}]
    path = write_connection(tmp_path, overwrite, users=300)
    first = sync(path)
    second = sync(path)
    before = rows_of(table(spark, tmp_path))

    runner = CliRunner()
    # The run recorded its connection file: the run id and the store are enough.
    refused = runner.invoke(app, ["replay", first.run_id, "--json",
                                  "--store", f"sqlite:///{tmp_path / 'meta.db'}"])
    assert refused.exit_code == 1, refused.output
    document = json.loads(refused.stdout)
    assert document["kind"] == "replay" and document["replay_of"] == first.run_id
    assert "overwritten by a later full refresh" in document["streams"][0]["error"]
    assert rows_of(table(spark, tmp_path)) == before

    latest = runner.invoke(app, ["replay", second.run_id, "--connection", str(path), "--json"])
    assert latest.exit_code == 0, latest.output
    assert rows_of(table(spark, tmp_path)) == before


def test_a_replay_stopped_by_sigterm_exits_130_and_the_next_sync_finishes_it(
        spark: Any, tmp_path: Path) -> None:
    """``headwater replay``'s handlers stop it like a sync; ``replay`` then waits for ``sync``.

    SIGTERM comes once the handlers are in (``_run_stoppable``, as the command
    runs it) and before the replay plans: it is recorded and ends ``stopped``
    with its one checkpoint per stream not started, so none of its rows is
    replaced yet.  The next sync resumes that run, still a replay of the same
    run: it replaces exactly that run's rows and leaves the state alone.
    """
    import os
    import signal

    import typer

    from headwater.cli._rerun import _report, _run_stoppable
    from headwater.errors import HeadwaterError

    path = write_connection(tmp_path, APPEND, users=500)  # one partition
    second = sync(path)
    before = rows_of(table(spark, tmp_path))
    state = store(tmp_path).get_states("rr")
    delete_rows(spark, tmp_path, f"_hw_run_id = '{second.run_id}'")

    def sigterm_then_replay(replaying: SyncEngine) -> SyncResult:
        os.kill(os.getpid(), signal.SIGTERM)
        assert replaying.stopping.wait(10), "SIGTERM did not reach the engine"
        return replay(replaying, second.run_id)

    handler = signal.getsignal(signal.SIGTERM)
    stopped = _run_stoppable(engine(path), sigterm_then_replay)
    assert signal.getsignal(signal.SIGTERM) == handler
    assert (stopped.status, stopped.kind, stopped.replay_of) == ("stopped", "replay",
                                                                 second.run_id)
    assert stopped.stop_reason and stopped.stop_reason.startswith("SIGTERM received")
    with pytest.raises(typer.Exit) as exited:
        _report(stopped, load_connection(path), as_json=True)
    assert exited.value.exit_code == 130
    assert rows_of(table(spark, tmp_path), second.run_id) == Counter()
    with pytest.raises(HeadwaterError, match="run `headwater sync` to finish it first"):
        replay(engine(path), second.run_id)

    finished = engine(path).run()
    assert (finished.run_id, finished.resumed, finished.status, finished.kind,
            finished.replay_of) == (stopped.run_id, True, "succeeded", "replay", second.run_id)
    assert rows_of(table(spark, tmp_path)) == before
    assert store(tmp_path).get_states("rr") == state
