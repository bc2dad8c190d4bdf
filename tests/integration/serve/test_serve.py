"""``headwater serve`` with real syncs: on schedule, retries of a real failure, SIGTERM."""

from __future__ import annotations

import signal
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
import yaml

from headwater.cli._serve import run_sync, store_last_started
from headwater.config import load_connection
from headwater.metadata_store import MetadataStore
from headwater.serve import Scheduler
from tests._clock import FastClock
from tests.integration._cli import (
    READING_PAUSE,
    assert_table_equals_source,
    finish_cli,
    start_cli,
    tagged_commits,
)

pytestmark = pytest.mark.spark

SOURCE = {"users": 300, "orders": 0, "rows_per_partition": 100}


def write(folder: Path, name: str, schedule: str, lake: str, **extra: Any) -> Path:
    path = folder / f"{name}.yaml"
    path.write_text(yaml.safe_dump({
        "source": {"type": "sample", "config": SOURCE},
        "destination": {"type": "delta", "config": {"path": lake}},
        "streams": [{"name": "users", "sync_mode": "incremental"}],
        "metadata_store": f"sqlite:///{folder.parent / 'meta.db'}",
        "schedule": schedule,
        **extra,
    }))
    return path


def drain(scheduler: Scheduler) -> None:
    for entry in scheduler._entries.values():
        if entry.running is not None:
            entry.running.result(timeout=600)
    scheduler.tick()


def test_serve_runs_real_syncs_and_retries_a_real_failure(spark: Any, tmp_path: Path) -> None:
    folder = tmp_path / "connections"
    folder.mkdir()
    write(folder, "good", "* * * * *", str(tmp_path / "lake"))
    blocker = tmp_path / "not-a-folder"
    blocker.write_text("a file where the lake should be")
    write(folder, "broken", "* * * * *", str(blocker / "lake"),
          retry={"max_retries": 1, "backoff_s": 10})
    clock = FastClock(datetime(2026, 3, 1, 8, 0, 30, tzinfo=UTC))
    scheduler = Scheduler(folder=folder, runner=run_sync, last_started=store_last_started,
                          clock=clock, poll_s=1.0)
    scheduler.tick()
    clock.current += timedelta(seconds=30)
    scheduler.tick()
    drain(scheduler)
    store = MetadataStore(f"sqlite:///{tmp_path / 'meta.db'}")
    good = store.list_runs("good")
    assert [r.status for r in good] == ["succeeded"]
    assert [r.status for r in store.list_runs("broken")] == ["failed"]
    whats = [(e.connection, e.what) for e in scheduler.events]
    assert ("broken", "retry") in whats

    clock.current += timedelta(seconds=10)
    scheduler.tick()
    drain(scheduler)
    assert [r.status for r in store.list_runs("broken")] == ["failed", "failed"]
    assert [e.what for e in scheduler.events if e.connection == "broken"][-1] == "gave-up"
    assert len(store.list_runs("good")) == 1  # not due again yet
    scheduler.shutdown()


def test_serve_sigterm_stops_the_run_in_progress_and_the_next_firing_resumes_it(
        spark: Any, tmp_path: Path) -> None:
    """SIGTERM to ``headwater serve`` mid-run: the run ends ``stopped``, serve exits 0.

    Eight one-partition checkpoints in one lane make a run long enough to be
    caught after its first commit (the test looks every 0.2 s).  New rows then
    arrive, and the next firing (serve's runner, here in-process) resumes that
    same run, then syncs the new rows in a new run: the table ends exactly
    equal to the source, each checkpoint committed once.
    """
    folder = tmp_path / "connections"
    folder.mkdir()
    source = {"users": 800, "orders": 0, "rows_per_partition": 100,
              "updates_per_generation": 0, "new_per_generation": 50}
    lake = tmp_path / "lake"
    path = write(folder, "long", "* * * * * */3", str(lake),  # every 3 seconds
                 source={"type": "sample", "config": source},
                 checkpoint={"partitions_per_checkpoint": 1, "concurrent_checkpoints": 1})
    process = start_cli(tmp_path, "serve", str(folder), "--poll", "0.5", env=READING_PAUSE)
    store = MetadataStore(f"sqlite:///{tmp_path / 'meta.db'}")
    deadline = time.monotonic() + 600
    try:
        while time.monotonic() < deadline:
            runs = store.list_runs("long")
            if runs and runs[0].status == "running" and any(
                    c.status in ("committed", "released")
                    for c in store.list_checkpoints(runs[0].run_id)):
                break
            assert process.poll() is None, finish_cli(process).describe()
            time.sleep(0.2)
        else:
            pytest.fail("serve committed no checkpoint within 10 minutes")
        process.send_signal(signal.SIGTERM)
        result = finish_cli(process, timeout=300)
    finally:
        if process.poll() is None:
            process.kill()
    assert result.exit_code == 0, result.describe()
    assert "SIGTERM received: no new run starts" in result.stderr
    assert "stopped: every run in progress has ended" in result.stderr
    [stopped] = store.list_runs("long")
    assert stopped.status == "stopped", (stopped.status, stopped.error)
    assert stopped.error and stopped.error.startswith("SIGTERM received")
    done = [c.index for c in store.list_checkpoints(stopped.run_id)
            if c.status in ("committed", "released")]
    assert 0 < len(done) < 8

    later = {**source, "generation": 1}
    write(folder, "long", "* * * * * */3", str(lake), source={"type": "sample", "config": later},
          checkpoint={"partitions_per_checkpoint": 1, "concurrent_checkpoints": 1})
    outcome = run_sync(load_connection(path))
    new, finished = store.list_runs("long")
    assert (outcome.status, outcome.resumed_run_id, outcome.run_id) == (
        "succeeded", stopped.run_id, new.run_id)
    assert (finished.run_id, finished.status, len(finished.attempts)) == (
        stopped.run_id, "succeeded", 2)
    assert new.status == "succeeded" and new.stats["streams"][0]["records_written"] == 50
    location = str(lake / "users")
    assert_table_equals_source(spark, location, later, "users")
    commits = tagged_commits(spark, location, stopped.run_id, "users")
    assert len(commits) == 8 and set(commits.values()) == {1}, commits
    assert set(tagged_commits(spark, location, new.run_id, "users").values()) == {1}
