"""The end of a ``headwater sync`` process: it leaves without the interpreter's teardown
(``headwater/cli/_leave.py``), and still leaves everything as a normal exit did."""

from __future__ import annotations

from pathlib import Path

from tests.integration._cli import HOME, run_cli, store, write_connection


def test_a_cli_sync_leaves_its_answer_its_store_and_no_process_behind(tmp_path: Path) -> None:
    path = write_connection(tmp_path, name="ends", source={"users": 50, "orders": 0},
                            streams=[{"name": "users", "sync_mode": "full_refresh",
                                      "destination_sync_mode": "overwrite"}])
    # run_cli also waits for the process group: the JVM and its workers have gone too.
    result = run_cli(tmp_path, "sync", str(path), "--json")
    assert result.exit_code == 0, result.describe()
    assert result.document is not None and result.document["status"] == "succeeded"
    [users] = result.document["streams"]
    assert users["records_written"] == 50
    # The store was closed before leaving: SQLite folded its log into the file.
    database = tmp_path / HOME / "headwater.db"
    assert database.exists()
    assert not database.with_name("headwater.db-wal").exists()
    with store(tmp_path) as metadata:
        [run] = metadata.list_runs("ends")
        assert run.status == "succeeded"
