"""``headwater state import|export``: Airbyte state into a connection's store and back."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import yaml
from typer.testing import CliRunner

from headwater.cli.app import app
from headwater.metadata_store import MetadataStore
from headwater.protocol import global_stream_state
from tests.unit.connectors.airbyte.conftest import FAKE_CONNECTOR

GLOBAL_CONNECTOR = FAKE_CONNECTOR.with_name("global_state_connector.py")

STATE = [{"type": "STREAM", "stream": {"stream_descriptor": {"name": "users"},
                                       "stream_state": {"updated_at": "2024-01-01T00:00:30Z"}}}]


def test_import_then_export_round_trips_and_the_state_is_stored(tmp_path: Path) -> None:
    connection = tmp_path / "c.yaml"
    connection.write_text(yaml.safe_dump({
        "name": "c", "source": {"type": "sample", "config": {"users": 10}},
        "destination": {"type": "delta", "config": {"path": str(tmp_path / "lake")}},
        "metadata_store": f"sqlite:///{tmp_path / 'meta.db'}"}))
    (tmp_path / "state.json").write_text(json.dumps(STATE))
    runner = CliRunner()
    imported = runner.invoke(app, ["state", "import", str(connection),
                                   str(tmp_path / "state.json"), "--json"])
    assert imported.exit_code == 0, imported.output
    assert json.loads(imported.stdout)["imported"] == ["users"]
    store = MetadataStore(f"sqlite:///{tmp_path / 'meta.db'}")
    assert store.get_state("c", "users") == {"updated_at": "2024-01-01T00:00:30Z"}
    exported = runner.invoke(app, ["state", "export", str(connection)])
    assert exported.exit_code == 0, exported.output
    assert json.loads(exported.stdout) == STATE


def test_a_global_state_imported_into_an_airbyte_connection_stays_with_each_stream(
        tmp_path: Path) -> None:
    connection = tmp_path / "c.yaml"
    connection.write_text(yaml.safe_dump({
        "name": "c", "source": {"type": "airbyte", "config": {
            "command": [sys.executable, str(GLOBAL_CONNECTOR)], "config": {"records": 1}}},
        "destination": {"type": "delta", "config": {"path": str(tmp_path / "lake")}},
        "metadata_store": f"sqlite:///{tmp_path / 'meta.db'}"}))
    state = [{"type": "GLOBAL", "global": {"shared_state": {"lsn": 1090}, "stream_states": [
        {"stream_descriptor": {"name": "events"}, "stream_state": {"last_id": 9}}]}}]
    (tmp_path / "state.json").write_text(json.dumps(state))
    runner = CliRunner()
    imported = runner.invoke(app, ["state", "import", str(connection),
                                   str(tmp_path / "state.json"), "--json"])
    assert imported.exit_code == 0, imported.output
    assert json.loads(imported.stdout)["imported"] == ["events"]
    store = MetadataStore(f"sqlite:///{tmp_path / 'meta.db'}")
    # What a sync of this connector stores, so its next read is handed a GLOBAL state.
    assert store.get_state("c", "events") == global_stream_state({"lsn": 1090}, {"last_id": 9})
    exported = runner.invoke(app, ["state", "export", str(connection)])
    assert exported.exit_code == 0, exported.output
    assert json.loads(exported.stdout) == state
