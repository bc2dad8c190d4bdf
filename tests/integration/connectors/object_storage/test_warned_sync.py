"""A sync that rejected every record, or stopped writing a column its table has, is not
a plain ``succeeded`` (issue 35): ``warned`` in the summary, ``--json``, the run history
and the exit code (4), or ``failed`` with ``on_warning: fail``.

In-process (the suite's Spark session; the CLI through typer's runner): small
folders of objects into Delta, read back with plain Spark.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from headwater.cli.app import app
from headwater.errors import ExitCode
from headwater.metadata_store import MetadataStore
from tests.integration._connections import connection_file, sync
from tests.unit.connectors.object_storage.test_sampling import ONE_BAD_BYTE

pytestmark = pytest.mark.spark

#: Eight CSV records in Latin-1, read as UTF-8 (the default): every one is rejected.
LATIN_1 = b"id,name\n" + b"".join(b"%d,Ren\xe9e %d\n" % (i, i) for i in range(8))


def _connection(tmp_path: Path, objects: dict[str, bytes], **extra: Any) -> Path:
    folder = tmp_path / "in"
    folder.mkdir(exist_ok=True)
    for old in folder.iterdir():
        old.unlink()
    for key, data in objects.items():
        (folder / key).write_bytes(data)
    source = {"url": str(folder), "streams": [
        {"name": "people", "format": {"type": "csv"}, "schema": {"name": {"type": "string"}}}]}
    return connection_file(tmp_path, name="people", source_type="object_storage",
                           source=source, streams=[{"name": "people"}], **extra)


def _table(spark: Any, tmp_path: Path) -> list[dict[str, Any]]:
    rows = spark.read.format("delta").load(str(tmp_path / "lake" / "people")).collect()
    return sorted((r.asDict(recursive=True) for r in rows), key=lambda r: r["_source_record"])


def test_a_failed_sample_keeps_the_undeclared_columns_in_the_table(
        spark: Any, tmp_path: Path) -> None:
    # Before: `succeeded` with 8 of 8 rejected, the table only `name`, `id` in the notes.
    result = sync(_connection(tmp_path, {"a.csv": ONE_BAD_BYTE}))
    assert (result.streams[0].records_read, result.streams[0].records_rejected) == (8, 1)
    rows = _table(spark, tmp_path)
    assert [(r["id"], r["name"], r["amount"]) for r in rows[:7]] == [
        (i, f"n{i}", i + 0.5) for i in range(7)]
    assert rows[7]["id"] == 7 and rows[7]["name"] is None
    assert "UTF-8" in rows[7]["_hw_notes"][0]["reason"]


def test_every_record_rejected_is_warned_in_json_history_and_exit_code(
        spark: Any, tmp_path: Path) -> None:
    path = _connection(tmp_path, {"a.csv": LATIN_1})
    runner = CliRunner()
    done = runner.invoke(app, ["sync", str(path), "--json"])
    assert done.exit_code == ExitCode.WARNED == 4, done.output
    document = json.loads(done.stdout)
    assert document["status"] == "warned"
    [stream] = document["streams"]
    assert stream["status"] == "warned"
    assert (stream["records_read"], stream["records_rejected"]) == (8, 8)
    assert stream["warnings"] == [
        "every record read was rejected (8 of 8; why is in the table's _hw_notes)"]
    # the records are committed, with why each misfit
    rows = _table(spark, tmp_path)
    assert len(rows) == 8 and all(r["_hw_notes"] and r["name"] is None for r in rows)
    # (no line of the sample decodes: its header names the columns, typed as text)
    assert [r["id"] for r in rows] == [str(i) for i in range(8)]

    store = f"sqlite:///{tmp_path / 'meta.db'}"
    run = MetadataStore(store).get_run(document["run_id"])
    assert run is not None and run.status == "warned"
    assert run.error == "people: " + stream["warnings"][0]
    listed = runner.invoke(app, ["runs", "--store", store, "--json"])
    assert json.loads(listed.stdout)["runs"][0]["status"] == "warned"
    shown = runner.invoke(app, ["runs", "--store", store, "show", document["run_id"], "--json"])
    assert json.loads(shown.stdout)["streams"][0]["warnings"] == stream["warnings"]


def test_on_warning_fail_fails_the_sync(spark: Any, tmp_path: Path) -> None:
    path = _connection(tmp_path, {"a.csv": LATIN_1}, on_warning="fail")
    result = sync(path, expect="failed")
    assert result.streams[0].status == "failed"
    assert result.streams[0].error == ("every record read was rejected (8 of 8; why is in the "
                                       "table's _hw_notes) (on_warning: fail)")
    assert len(_table(spark, tmp_path)) == 8  # committed all the same


def test_a_column_the_table_has_and_the_stream_lost_is_warned(
        spark: Any, tmp_path: Path) -> None:
    sync(_connection(tmp_path, {"a.csv": b"id,name\n1,a\n"}))
    # The objects now have no `id`: the table keeps it, this run's rows hold null there.
    result = sync(_connection(tmp_path, {"b.csv": b"name\nb\n"}), expect="warned")
    assert result.streams[0].warnings == [
        "the table has columns the stream's schema no longer has (null in this run's rows): id"]
    assert [(r["id"], r["name"]) for r in _table(spark, tmp_path)] == [(None, "b")]
