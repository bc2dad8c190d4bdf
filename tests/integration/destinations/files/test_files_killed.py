"""A real SIGKILL of ``headwater sync`` into the files destination, twice, then the result read
from outside Headwater: plain pyarrow following the manifests (``_plain.py``).

The first CLI sync is killed while it reads (each task waits a second per partition, so it
still reads when the kill comes, once the first manifest is in the log); the second resumes
the run and is killed by a fault right after a commit, before its state is released; the
third sync (in the test process: what it proves is the resume, not a process's end) finishes
the run.  Then every source row is in the table once, none missing, none twice; each
checkpoint's marker is in the log once; and the files the killed tasks left behind, which no
manifest names, are in the folder but not in the table.

Two CLI JVMs, no more: the process boundary (a kill nothing in the process survives) is what
this file proves; the in-process kills of the conformance run cover the rest.
"""

from __future__ import annotations

import json
import signal
import time
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from headwater.connectors.sample import SampleSource
from tests.integration._cli import READING_PAUSE, kill_cli, run_cli, start_cli, sync_runs
from tests.integration._connections import connection_file
from tests.integration._in_process import run_in_process
from tests.integration.destinations.files._plain import read_stream

pytestmark = [pytest.mark.crash, pytest.mark.spark]

SOURCE: dict[str, Any] = {"seed": 23, "users": 2_000, "orders": 0, "rows_per_partition": 250}
STREAM = {"name": "users", "sync_mode": "incremental", "destination_sync_mode": "append",
          "cursor_field": "updated_at"}
KILLED = -signal.SIGKILL


def _manifests(folder: Path) -> list[dict[str, Any]]:
    return [json.loads(p.read_text()) for p in sorted((folder / "_manifests").glob("*.json"))]


def test_killed_while_reading_then_after_a_commit_then_resumed(spark: Any,
                                                               tmp_path: Path) -> None:
    path = connection_file(
        tmp_path, name="killed-files", source=SOURCE, streams=[STREAM],
        checkpoint={"partitions_per_checkpoint": 1, "concurrent_checkpoints": 2},
        destination={"type": "files", "config": {"path": "exports", "format": "jsonl",
                                                 "compression": "gzip"}})
    table = tmp_path / "exports" / "users"

    # 1. Killed while reading, once a first checkpoint is in the log.
    process = start_cli(tmp_path, "sync", str(path), "--json", env=READING_PAUSE)
    deadline = time.monotonic() + 300
    while not (table / "_manifests").is_dir() or not any((table / "_manifests").glob("*.json")):
        assert process.poll() is None, "the sync ended before it could be killed"
        assert time.monotonic() < deadline, "no manifest in 300 s"
        time.sleep(0.1)
    time.sleep(0.5)
    assert kill_cli(process).exit_code == KILLED
    first = len(_manifests(table))
    assert 1 <= first < 8, "the kill came while the run was still reading"

    # 2. The resumed run, killed after its first commit and before that state's release.
    killed = run_cli(tmp_path, "sync", str(path), "--json",
                     env={"HEADWATER_FAULT": "after-commit:1"})
    assert killed.exit_code == KILLED, killed.describe()
    # Killed after its first commit; the other lane's commit may have landed meanwhile.
    assert first < len(_manifests(table)) <= first + 2

    # 3. Resumed again, to the end, in the test process.
    result = run_in_process(tmp_path, "sync", str(path), "--json")
    assert result.exit_code == 0, result.describe()
    resumed = sync_runs(result)[0]
    assert (resumed["status"], resumed["resumed"], resumed["attempt"]) == ("succeeded", True, 3)

    # From outside Headwater: every source row once.
    expected = SampleSource(SOURCE).expected_rows("users")
    actual = read_stream(str(table))
    ids = Counter(actual.column("id").to_pylist())
    assert not [i for i, n in ids.items() if n > 1], "rows listed twice"
    assert set(ids) == set(expected.column("id").to_pylist()), "rows missing"
    columns = expected.column_names
    rows = Counter(zip(*(actual.column(c).to_pylist() for c in columns), strict=True))
    assert rows == Counter(zip(*(expected.column(c).to_pylist() for c in columns),
                               strict=True))
    logged = _manifests(table)
    markers = Counter((m["marker"]["app_id"], m["marker"]["version"]) for m in logged)
    assert len(logged) == 8 and set(markers.values()) == {1}
    # What the killed tasks wrote and no manifest names stays out of the table.
    listed = {f["path"] for m in logged for f in m["files"]}
    on_disk = {p.name for p in table.glob("part-*")}
    assert listed <= on_disk
