"""Commands that only read the metadata store open it as the page does: nothing is created.

A reader pointed at a store no sync has written (a mistyped path, the wrong working
directory) used to create an empty SQLite file there and answer "no runs": now it is an
error naming the path, exit code 2 (``StoreMissingError``), and no file appears.  ``plan``
writes nothing either, but a first sync's plan is legitimate: it plans from no state.
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
