"""Commands that only read the metadata store open it as the page does: nothing is created;
nor do the commands that change a store a sync has made.

A reader pointed at a store no sync has written (a mistyped path, the wrong working
directory) used to create an empty SQLite file there and answer "no runs": now it is an
error naming the path, exit code 2 (``StoreMissingError``), and no file appears.  ``plan``
writes nothing either, but a first sync's plan is legitimate: it plans from no state.
A writer (``state reset``, ``state import``, ``replay``...) used to create the store it
was pointed at and report success into it (``reset: nothing was stored``); now it ends 2
naming the path, before Spark starts, and only ``sync`` (or ``state import
--create-store``) starts a store.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml
from typer.testing import CliRunner

from headwater.cli.app import app
from headwater.errors import ExitCode
from headwater.metadata_store import MetadataStore


def _connection(tmp_path: Path, store: Path) -> Path:
    path = tmp_path / "c.yaml"
    path.write_text(yaml.safe_dump({
        "name": "c",
        "source": {"type": "sample", "config": {"users": 10, "orders": 0}},
        "streams": [{"name": "users", "sync_mode": "incremental",
                     "destination_sync_mode": "append_dedup"}],
        "destination": {"type": "delta", "config": {"path": str(tmp_path / "lake")}},
        "metadata_store": f"sqlite:///{store}",
    }))
    return path


@pytest.mark.parametrize("argv", [
    ["runs", "--store", "{url}"],
    ["runs", "--store", "{url}", "show", "r-1"],
    ["state", "show", "{file}"],
    ["state", "export", "{file}"],
])
def test_a_reader_of_a_missing_store_names_its_path_and_creates_nothing(
        tmp_path: Path, argv: list[str]) -> None:
    store = tmp_path / "not-synced" / "meta.db"
    file = _connection(tmp_path, store)
    args = [a.format(url=f"sqlite:///{store}", file=file) for a in argv]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == ExitCode.CONFIG, result.output
    assert "no metadata store at" in result.output and str(store) in result.output
    assert not store.exists() and not store.parent.exists()


def test_a_reader_of_an_existing_store_reads_it(tmp_path: Path) -> None:
    store = tmp_path / "meta.db"
    MetadataStore(f"sqlite:///{store}").save_state("c", "users", {"cursor": 3}, run_id=None,
                                                   checkpoint_index=None)
    result = CliRunner().invoke(app, ["state", "show", str(_connection(tmp_path, store)),
                                      "--json"])
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["streams"] == {"users": {"cursor": 3}}


def test_plan_of_a_connection_never_synced_creates_no_store(tmp_path: Path) -> None:
    store = tmp_path / "not-synced" / "meta.db"
    result = CliRunner().invoke(app, ["plan", str(_connection(tmp_path, store)), "--json"])
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["streams"][0]["state_before"] is None
    assert not store.exists() and not store.parent.exists()


@pytest.mark.parametrize("argv", [
    ["state", "reset", "{file}", "--yes"],
    ["state", "reset", "{file}", "--stream", "users", "--json"],
    ["state", "import", "{file}", "{state}"],
    ["state", "realign", "{file}", "--yes"],
    ["replay", "20261120T140000Z-1a2b3c", "--connection", "{file}"],
    ["replay", "20261120T140000Z-1a2b3c", "--store", "{url}"],
    ["backfill", "{file}", "--stream", "users", "--from", "2024-01-01", "--to", "2024-01-02"],
    ["verify", "{file}"],
])
def test_a_writer_of_a_missing_store_names_its_path_and_creates_nothing(
        tmp_path: Path, argv: list[str]) -> None:
    store = tmp_path / "not-synced" / "meta.db"
    file = _connection(tmp_path, store)
    state = tmp_path / "state.json"
    state.write_text(json.dumps([{"type": "STREAM", "stream": {
        "stream_descriptor": {"name": "users"}, "stream_state": {"updated_at": 1}}}]))
    args = [a.format(url=f"sqlite:///{store}", file=file, state=state) for a in argv]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == ExitCode.CONFIG, result.output
    assert "no metadata store at" in result.output and str(store) in result.output
    assert "starts none" in result.output
    assert not store.exists() and not store.parent.exists()


def test_a_writer_of_an_existing_store_changes_it(tmp_path: Path) -> None:
    store = tmp_path / "meta.db"
    MetadataStore(f"sqlite:///{store}").save_state("c", "users", {"cursor": 3}, run_id=None,
                                                   checkpoint_index=None)
    result = CliRunner().invoke(app, ["state", "reset", str(_connection(tmp_path, store)),
                                      "--yes", "--json"])
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["reset"] == ["users"]
    assert MetadataStore(f"sqlite:///{store}").get_state("c", "users") is None


def test_state_import_starts_a_store_only_when_asked(tmp_path: Path) -> None:
    store = tmp_path / "new" / "meta.db"
    state = tmp_path / "state.json"
    state.write_text(json.dumps([{"type": "STREAM", "stream": {
        "stream_descriptor": {"name": "users"}, "stream_state": {"updated_at": 1}}}]))
    result = CliRunner().invoke(app, ["state", "import", str(_connection(tmp_path, store)),
                                      str(state), "--create-store", "--json"])
    assert result.exit_code == 0, result.output
    assert MetadataStore(f"sqlite:///{store}").get_state("c", "users") == {"updated_at": 1}


def test_serves_catch_up_reads_a_missing_store_as_never_run_and_creates_nothing(
        tmp_path: Path) -> None:
    from headwater.config import load_connection
    from headwater.operations import store_last_started

    store = tmp_path / "not-synced" / "meta.db"
    assert store_last_started(load_connection(_connection(tmp_path, store))) is None
    assert not store.exists() and not store.parent.exists()
