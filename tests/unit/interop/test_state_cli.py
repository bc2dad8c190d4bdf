"""``headwater state import|export``: Airbyte state into a connection's store and back."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import yaml
from typer.testing import CliRunner

from headwater.cli.app import app
from headwater.metadata_store import MetadataStore
from headwater.protocol import global_stream_state
from tests.unit.connectors.airbyte.conftest import FAKE_CONNECTOR

GLOBAL_CONNECTOR = FAKE_CONNECTOR.with_name("global_state_connector.py")

STATE = [{"type": "STREAM", "stream": {"stream_descriptor": {"name": "users"},
                                       "stream_state": {"updated_at": "2024-01-01T00:00:30Z"}}}]


def import_state(tmp_path: Path, source: dict[str, Any], state: list[dict[str, Any]],
                 ) -> tuple[Path, list[str], MetadataStore]:
    """Import ``state`` into a connection of ``source``; its file, imported streams, store."""
    connection = tmp_path / "c.yaml"
    connection.write_text(yaml.safe_dump({
        "name": "c", "source": source,
        "destination": {"type": "delta", "config": {"path": str(tmp_path / "lake")}},
        "metadata_store": f"sqlite:///{tmp_path / 'meta.db'}"}))
    (tmp_path / "state.json").write_text(json.dumps(state))
    imported = CliRunner().invoke(app, ["state", "import", str(connection),
                                        str(tmp_path / "state.json"), "--json", "--create-store"])
    assert imported.exit_code == 0, imported.output
    return (connection, json.loads(imported.stdout)["imported"],
            MetadataStore(f"sqlite:///{tmp_path / 'meta.db'}"))


def export(connection: Path) -> Any:
    exported = CliRunner().invoke(app, ["state", "export", str(connection)])
    assert exported.exit_code == 0, exported.output
    return json.loads(exported.stdout)


def test_import_then_export_round_trips_and_the_state_is_stored(tmp_path: Path) -> None:
    connection, streams, store = import_state(
        tmp_path, {"type": "sample", "config": {"users": 10}}, STATE)
    assert streams == ["users"]
    assert store.get_state("c", "users") == {"updated_at": "2024-01-01T00:00:30Z"}
    assert export(connection) == STATE


def test_a_global_state_imported_into_an_airbyte_connection_stays_with_each_stream(
        tmp_path: Path) -> None:
    state = [{"type": "GLOBAL", "global": {"shared_state": {"lsn": 1090}, "stream_states": [
        {"stream_descriptor": {"name": "events"}, "stream_state": {"last_id": 9}}]}}]
    source = {"type": "airbyte", "config": {
        "command": [sys.executable, str(GLOBAL_CONNECTOR)], "config": {"records": 1}}}
    connection, streams, store = import_state(tmp_path, source, state)
    assert streams == ["events"]
    # What a sync of this connector stores, so its next read is handed a GLOBAL state.
    assert store.get_state("c", "events") == global_stream_state({"lsn": 1090}, {"last_id": 9})
    assert export(connection) == state
