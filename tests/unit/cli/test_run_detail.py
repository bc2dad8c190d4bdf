"""``runs`` / ``runs show``: per-partition figures, states per stream, the run a replay replays."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

from typer.testing import CliRunner

from headwater.cli.app import app
from headwater.metadata_store import MetadataStore, RunLogLine


def test_runs_show_lists_partitions_and_links_a_replay(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'meta.db'}"
    store = MetadataStore(url)
    synced = store.create_run("c", plan={"connection": "c", "streams": []},
                              state_before={"users": None}, config_redacted={})
    store.start_attempt(synced, pid=1, host="h")
    figures = [{"partition": "users:a/b", "records_read": 7, "records_written": 7,
                "records_rejected": 1, "bytes": 700, "duration_s": 0.5, "retries": 1}]
    store.record_checkpoint(synced, "users", 3, "ckpt-3", status="committed",
                            stats={"records_written": 7, "partitions": ["users:a/b"],
                                   "partition_stats": figures})
    store.record_checkpoint(synced, "users", 4, "ckpt-4", status="committed",
                            stats={"records_written": 2, "partitions": ["users:b/c"]})
    after = {"users": {"slices": [{"start": "a", "end": "c"}]}}
    store.finish_run(synced, status="succeeded", error=None, state_after=after,
                     stats={"streams": [{"name": "users", "records_written": 9}]})
    replayed = store.create_run("c", plan={"connection": "c", "streams": [],
                                           "replay_of": synced},
                                state_before={}, config_redacted={}, kind="replay")

    store.append_run_logs(synced, [RunLogLine(seq=1, at=datetime.now(UTC), level="WARNING",
                                              logger="headwater", message="slow API")],
                          keep_first=10, keep_last=10)

    runner = CliRunner()
    shown = runner.invoke(app, ["runs", "--store", url, "show", synced, "--json"])
    assert shown.exit_code == 0, shown.output
    document = json.loads(shown.stdout)
    assert document["partitions"] == [
        {"stream": "users", "checkpoint": 3, "status": "committed", **figures[0]},
        {"stream": "users", "checkpoint": 4, "status": "committed", "partition": "users:b/c",
         "records_read": None, "records_written": None, "records_rejected": None,
         "bytes": None, "duration_s": None, "retries": None},
    ]
    assert document["streams"] == [{"name": "users", "records_written": 9,
                                     "state_before": None, "state_after": after["users"]}]
    assert all("partition_stats" not in c for c in document["checkpoints"])
    assert document["log_lines"] == 1

    listed = runner.invoke(app, ["runs", "--store", url, "--json"])
    rows = {r["run_id"]: r for r in json.loads(listed.stdout)["runs"]}
    assert rows[replayed]["kind"] == "replay" and rows[replayed]["replay_of"] == synced
    assert rows[synced]["replay_of"] is None

    table = runner.invoke(app, ["runs", "--store", url, "show", synced])
    assert table.exit_code == 0, table.output
    assert "partitions" in table.stdout and "users:a/b" in table.stdout
    assert "1 log lines of this run are in the metadata store" in table.stdout
