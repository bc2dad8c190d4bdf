"""``headwater verify`` on real Spark and Delta, with the sample source: rows deleted from
the table by hand are found in the right windows, ``--repair`` lands them again exactly
once, and a source that cannot count a window says so.  The CLI runs in process."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from headwater.config import load_connection
from headwater.connectors.sample import SampleSource
from headwater.metadata_store import MetadataStore
from tests.integration._cli import CliResult
from tests.integration._connections import connection_file, sync
from tests.integration._in_process import run_in_process

pytestmark = pytest.mark.spark


def _doc(result: CliResult) -> dict[str, Any]:
    """The command's ``--json`` document (there must be one)."""
    assert result.document is not None, result.stdout + result.stderr
    return result.document

SOURCE = {"seed": 5, "users": 1200, "orders": 0, "rows_per_partition": 400,
          "updates_per_generation": 25, "new_per_generation": 15}


def _connection(tmp_path: Path, mode: str, **source: Any) -> Path:
    return connection_file(tmp_path, name="vf", source={**SOURCE, **source},
                           streams=[{"name": "users", "sync_mode": "incremental",
                                     "destination_sync_mode": mode}],
                           checkpoint={"partitions_per_checkpoint": 2})


def _table(spark: Any, tmp_path: Path) -> Any:
    return spark.read.format("delta").load(str(tmp_path / "lake" / "users"))


@pytest.mark.parametrize("mode", ["append_dedup", "append"])
def test_rows_deleted_by_hand_are_found_and_repaired(spark: Any, tmp_path: Path,
                                                     mode: str) -> None:
    from delta.tables import DeltaTable

    path = _connection(tmp_path, mode)
    sync(path)
    path = _connection(tmp_path, mode, generation=1)
    sync(path)  # a second run: updates and new rows (append keeps both versions)
    first = run_in_process(tmp_path, "verify", str(path), "--runs", "2", "--json")
    assert first.exit_code == 0, first.stderr
    assert _doc(first)["status"] == "equal"
    windows = _doc(first)["streams"][0]["windows"]
    assert len(windows) >= 3 and all(w["compared"] == "count and keys" for w in windows)

    # Ids 100..104 were created at start + id seconds and never updated: the first window.
    DeltaTable.forPath(spark, str(tmp_path / "lake" / "users")).delete("id BETWEEN 100 AND 104")
    found = run_in_process(tmp_path, "verify", str(path), "--runs", "2", "--json")
    assert found.exit_code == 1, found.stderr
    differing = [w for w in _doc(found)["streams"][0]["windows"] if w["differs"]]
    assert len(differing) == 1
    [window] = differing
    assert window["source_count"] - window["table_count"] == 5
    assert window["window"].startswith("updated_at in [2024-01-01T00:00:00+00:00, ")

    repaired = run_in_process(tmp_path, "verify", str(path), "--runs", "2", "--repair")
    assert repaired.exit_code == 0, repaired.stdout + repaired.stderr
    assert "verified again: the windows are equal now" in repaired.stdout
    assert "windows that differ" in repaired.stdout  # the table printed before the repair

    table = _table(spark, tmp_path)
    expected = SampleSource({**SOURCE, "generation": 1}).expected_rows("users")
    if mode == "append_dedup":  # one row per key, each the source's
        assert table.count() == table.select("id").distinct().count() == expected.num_rows
    else:  # the repair appended the window again: the deleted ids are back, once more
        assert table.select("id").distinct().count() == expected.num_rows
    again = run_in_process(tmp_path, "verify", str(path), "--runs", "2", "--json")
    assert again.exit_code == 0 and _doc(again)["status"] == "equal"


def _a_store_without_runs(path: Path) -> None:
    """The connection's metadata store, made as a sync makes it, with no run of it: verify
    changes (or, with ``--repair``, writes) a store a sync has made and starts none."""
    MetadataStore(load_connection(path).metadata_store or "").close()


def test_a_source_that_cannot_count_a_window_says_so(spark: Any, tmp_path: Path) -> None:
    """No server and no run are needed: the REST source has no count_window."""
    path = connection_file(
        tmp_path, name="api", source_type="rest",
        source={"base_url": "http://127.0.0.1:9", "streams": [
            {"name": "things", "path": "/things", "primary_key": ["id"],
             "schema": {"type": "object", "properties": {"id": {"type": "integer"}}}}]},
        streams=[{"name": "things", "sync_mode": "full_refresh",
                  "destination_sync_mode": "overwrite"}])
    _a_store_without_runs(path)
    shown = run_in_process(tmp_path, "verify", str(path))
    assert shown.exit_code == 4, shown.stdout + shown.stderr
    assert "things: cannot verify: rest cannot count a window" in shown.stderr
    as_json = run_in_process(tmp_path, "verify", str(path), "--json")
    assert as_json.exit_code == 4
    assert _doc(as_json)["status"] == "incomplete"
    assert _doc(as_json)["streams"][0]["cannot_verify"] == "rest cannot count a window"


def test_a_table_spark_cannot_read_is_said_per_stream(spark: Any, tmp_path: Path) -> None:
    """Never synced: the window is given, its table does not exist yet."""
    path = _connection(tmp_path, "append_dedup")
    _a_store_without_runs(path)
    shown = run_in_process(tmp_path, "verify", str(path), "--from", "2024-01-01",
                           "--to", "2024-01-02", "--json")
    assert shown.exit_code == 4, shown.stdout + shown.stderr
    cannot = _doc(shown)["streams"][0]["cannot_verify"]
    assert cannot.startswith("the delta destination's table ") and \
        "cannot be read here: " in cannot


def test_an_overwrite_table_is_verified_against_its_last_run_and_not_repaired(
        spark: Any, tmp_path: Path) -> None:
    from delta.tables import DeltaTable

    path = connection_file(tmp_path, name="ow", source={**SOURCE, "users": 900},
                           streams=[{"name": "users", "sync_mode": "full_refresh",
                                     "destination_sync_mode": "overwrite"}],
                           checkpoint={"partitions_per_checkpoint": 1})  # staged, published
    sync(path)
    sync(path)  # the table holds the last run's rows only
    DeltaTable.forPath(spark, str(tmp_path / "lake" / "users")).delete("id = 850")
    shown = run_in_process(tmp_path, "verify", str(path), "--repair")
    assert shown.exit_code == 1, shown.stdout + shown.stderr
    assert "3 windows compared, 1 differ" in shown.stdout
    assert "│ 100 " in shown.stdout and "│ 99 " in shown.stdout, shown.stdout
    assert "users: not repaired: an overwrite table is re-read whole" in shown.stderr
